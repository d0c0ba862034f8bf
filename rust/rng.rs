//! The crate's seeded generator: SplitMix64 (Steele, Lea & Flood 2014), a
//! 64-bit state advanced by a Weyl step and mixed by two multiply-xorshift
//! rounds. The core needs no random-number dependency, and a seed means the
//! same stream wherever it is used: the Schroeppel–Shamir fingerprints and
//! moduli, and the data of every unit test.
//!
//! Three engines keep the xorshift streams their results were recorded
//! with: the feasibility jump's tie-breaks, genericity's random projections
//! and the lattice estimator's dives. Their answers and node counts (and so
//! the tables in `tests/golden/`) depend on those streams; moving them here
//! is a change of answers, to be made with the tables recorded anew.

/// One SplitMix64 step: advance `state` and return the next output.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A SplitMix64 stream with the conversions the tests and engines use.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// The stream started at `seed` (any value, 0 included).
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        splitmix64(&mut self.0)
    }

    /// Uniform in `[0, 1)`, from the top 53 bits.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[-1, 1)`.
    pub fn symmetric(&mut self) -> f64 {
        self.uniform() * 2.0 - 1.0
    }

    /// Uniform in `[-1/2, 1/2)`.
    pub fn centered(&mut self) -> f64 {
        self.uniform() - 0.5
    }

    /// Standard normal, by Box–Muller.
    pub fn normal(&mut self) -> f64 {
        let a = self.uniform().max(1e-300);
        let b = self.uniform();
        (-2.0 * a.ln()).sqrt() * (2.0 * std::f64::consts::PI * b).cos()
    }

    /// Uniform in `0..n` (`n > 0`; the modulo bias is below `n / 2^64`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_is_splitmix64() {
        // The first outputs from seed 0 (Vigna's reference implementation).
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(rng.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        let mut rng = SplitMix64::new(7);
        for _ in 0..1000 {
            let (u, s, c) = (rng.uniform(), rng.symmetric(), rng.centered());
            assert!((0.0..1.0).contains(&u) && (-1.0..1.0).contains(&s));
            assert!((-0.5..0.5).contains(&c) && rng.below(3) < 3);
        }
    }
}
