//! Rigorous rounding: a-priori error bounds and exact sums.
//!
//! A verdict is a proof only if its arithmetic is. Every float64 quantity
//! that a verdict rests on (a certificate margin, the residual of a flip
//! set, the window of a relaxed value) is either given with a rigorous bound
//! on its rounding error, or computed exactly.
//!
//! - A-priori bounds follow Higham, *Accuracy and Stability of Numerical
//!   Algorithms* (2nd ed., 2002), ch. 3: a sum of `n` terms or a dot product
//!   of length `n`, evaluated in any order (with or without fused
//!   multiply-adds), has error at most `gamma(n) * sum |terms|`, with
//!   `gamma(n) = n u / (1 - n u)` and `u = 2^-53`. [`gamma`] returns it with
//!   1% to spare, which covers the rounding of the bound itself. Underflow
//!   adds at most `2^-1074` per operation; the callers add [`TINY`] per term,
//!   which is far larger.
//! - Exact sums use error-free transformations (Knuth's TwoSum, and the
//!   fused multiply-add for TwoProduct) and Shewchuk's expansions
//!   (*Adaptive Precision Floating-Point Arithmetic and Fast Robust
//!   Geometric Predicates*, 1997): a sum of products of float64 numbers is
//!   held as a list of non-overlapping float64 components whose exact sum is
//!   the exact value. They cost ten to twenty times a plain sum, so they run
//!   only where the a-priori bound cannot settle the question.

/// The unit roundoff of float64, `2^-53`.
pub const UNIT: f64 = f64::EPSILON / 2.0;

/// An absolute allowance per operation for underflow (`2^-1022`, far above
/// the `2^-1075` that one rounding can lose in the subnormal range).
pub const TINY: f64 = f64::MIN_POSITIVE;

/// The smallest positive float64, `2^-1074`: one step of the subnormal grid,
/// twice what one rounding to nearest can lose there.
pub const SUBNORMAL: f64 = f64::from_bits(1);

/// `gamma(n) = n u / (1 - n u)` with a 1% margin; infinite when `n u >= 1/2`.
pub fn gamma(n: usize) -> f64 {
    let nu = n as f64 * UNIT;
    if nu >= 0.5 {
        f64::INFINITY
    } else {
        1.01 * nu / (1.0 - nu)
    }
}

/// `(n + 1) 2^-1074`, exactly: what `n` roundings of a result in the
/// subnormal range can lose (each at most `2^-1075`), and the rounding of
/// the bound itself.
fn underflow(n: usize) -> f64 {
    (n as f64 + 1.0) * SUBNORMAL
}

/// An upper bound on a non-negative quantity computed as `x` with at most
/// `n` roundings: `x` rounded up by a relative `gamma(n)` and by an absolute
/// `(n + 1) 2^-1074`, which covers a result in (or under) the subnormal
/// range, where a rounding loses up to `2^-1075` whatever the result's size.
/// The absolute part vanishes in the rounding to nearest of any result above
/// about `2^-1000`, so it leaves normal values as they were; it makes the
/// bound positive when `x` underflowed to 0 (so `up(0, n) > 0`: a quantity
/// known to be exactly zero needs no bound).
pub fn up(x: f64, n: usize) -> f64 {
    let g = gamma(n);
    if !g.is_finite() {
        return f64::INFINITY;
    }
    x * (1.0 + g) + underflow(n)
}

/// A lower bound on a non-negative quantity computed as `x` with at most
/// `n` roundings (see [`up`]): never negative, 0 when `x` is within the
/// subnormal range's rounding of 0.
pub fn down(x: f64, n: usize) -> f64 {
    (x * (1.0 - gamma(n)) - underflow(n)).max(0.0)
}

/// An upper bound on `a / b` from an upper bound `a >= 0` on the numerator
/// and a lower bound `b > 0` on the denominator: exactly 0 when `a` is, else
/// the quotient rounded up past its rounding (subnormal quotients included).
pub fn div_up(a: f64, b: f64) -> f64 {
    if a == 0.0 {
        0.0
    } else {
        up(a / b, 1)
    }
}

/// A lower bound on `a / b` from a lower bound `a >= 0` on the numerator and
/// an upper bound `b > 0` on the denominator.
pub fn div_down(a: f64, b: f64) -> f64 {
    down(a / b, 1)
}

/// The power of two `2^k` that brings `big > 0` into `[1, 2)`, with `k`
/// capped at 1022 so that it is finite: a subnormal `big` is brought to at
/// least `2^-52`, far from where its square could underflow.
pub fn inverse_scale(big: f64) -> f64 {
    let k = (-(big.log2().floor() as i32)).min(1022);
    crate::absorption::block::ldexp(1.0, k)
}

/// An upper bound on `r / s` for a power of two `s` (as [`inverse_scale`]
/// gives): exact unless the quotient is subnormal, where it loses up to
/// `2^-1075`.
pub fn unscale_up(r: f64, s: f64) -> f64 {
    let q = r / s;
    if q <= f64::MIN_POSITIVE {
        q + SUBNORMAL
    } else {
        q
    }
}

/// A lower bound on `r / s` for a power of two `s` (see [`unscale_up`]).
pub fn unscale_down(r: f64, s: f64) -> f64 {
    let q = r / s;
    if q <= f64::MIN_POSITIVE {
        (q - SUBNORMAL).max(0.0)
    } else {
        q
    }
}

/// `sum (x_i s)^2` in float64 and the power of two `s` ([`inverse_scale`])
/// that brings the largest `|x_i|` near `[1, 2)`, so the squares neither
/// overflow nor underflow; `None` for a zero or non-finite vector.
fn scaled_squares(x: &[f64]) -> Option<(f64, f64)> {
    let (plain, big) = squares_and_max(x);
    if big == 0.0 || !big.is_finite() {
        return None;
    }
    if plain.is_finite() && unscaled_is_safe(big) {
        // Unscaled squares neither overflow nor lose more than the TINY
        // allowance per term: one pass instead of two.
        return Some((plain, 1.0));
    }
    let s = inverse_scale(big);
    Some((squares_and_max_scaled(x, s), s))
}

/// The largest `|x_i|` for which plain squares are used: within
/// `[2^-480, 2^480]` a square cannot overflow, and every underflow it
/// meets is below `TINY`, which the bounds allow for each term anyway.
pub fn unscaled_is_safe(big: f64) -> bool {
    (f64::from_bits(0x21F0_0000_0000_0000)..=f64::from_bits(0x5DF0_0000_0000_0000)).contains(&big)
}

/// `(sum x_i^2, max |x_i|)` in one pass, eight lanes at a time (the order
/// of the sum is fixed; a NaN is dropped from the maximum, as `f64::max`
/// does, and makes the sum NaN).
pub fn squares_and_max(x: &[f64]) -> (f64, f64) {
    let mut sum = [0.0f64; 8];
    let mut big = [0.0f64; 8];
    let chunks = x.chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        for k in 0..8 {
            sum[k] += c[k] * c[k];
            big[k] = big[k].max(c[k].abs());
        }
    }
    let mut t = 0.0f64;
    let mut b = 0.0f64;
    for v in tail {
        t += v * v;
        b = b.max(v.abs());
    }
    let total = ((sum[0] + sum[1]) + (sum[2] + sum[3])) + ((sum[4] + sum[5]) + (sum[6] + sum[7]));
    (total + t, big.iter().fold(b, |a, &v| a.max(v)))
}

/// `sum (x_i s)^2`, in the lanes of [`squares_and_max`].
fn squares_and_max_scaled(x: &[f64], s: f64) -> f64 {
    let mut sum = [0.0f64; 8];
    let chunks = x.chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        for k in 0..8 {
            let y = c[k] * s;
            sum[k] += y * y;
        }
    }
    let t: f64 = tail.iter().map(|v| (v * s) * (v * s)).sum();
    ((sum[0] + sum[1]) + (sum[2] + sum[3])) + ((sum[4] + sum[5]) + (sum[6] + sum[7])) + t
}

/// An upper bound on the Euclidean norm of `x`.
pub fn norm_upper(x: &[f64]) -> f64 {
    let Some((sum, s)) = scaled_squares(x) else {
        return x.iter().fold(0.0f64, |acc, v| acc.max(v.abs()));
    };
    // Squares (1 rounding) and the sum (n): gamma(n + 2) on the sum; the
    // root adds one more, and the unscaling is exact unless the norm is
    // subnormal. Subnormal squares add at most n * TINY.
    let root = (sum * (1.0 + gamma(x.len() + 2)) + x.len() as f64 * TINY).sqrt();
    unscale_up(up(root, 2), s)
}

/// A lower bound on the Euclidean norm of `x`.
pub fn norm_lower(x: &[f64]) -> f64 {
    let Some((sum, s)) = scaled_squares(x) else {
        return x.iter().fold(0.0f64, |acc, v| acc.max(v.abs()));
    };
    let sq = (down(sum, x.len() + 2) - x.len() as f64 * TINY).max(0.0);
    unscale_down(down(sq.sqrt(), 2), s)
}

/// `a + b = s + e` exactly (Knuth's TwoSum).
#[inline]
pub fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    let e = (a - (s - bb)) + (b - bb);
    (s, e)
}

/// `a * b = p + e` exactly, unless `e` underflows (then `|error| <= 2^-1074`).
#[inline]
pub fn two_prod(a: f64, b: f64) -> (f64, f64) {
    let p = a * b;
    (p, a.mul_add(b, -p))
}

/// A float64 expansion: non-overlapping components whose exact sum is the
/// represented value (Shewchuk 1997, Grow-Expansion with zero elimination).
#[derive(Debug, Clone, Default)]
pub struct Expansion {
    parts: Vec<f64>,
    /// Products whose low part may have underflowed.
    inexact: u64,
    finite: bool,
}

impl Expansion {
    pub fn new() -> Self {
        Expansion {
            parts: Vec::new(),
            inexact: 0,
            finite: true,
        }
    }

    /// Add the float `x` exactly.
    pub fn add(&mut self, x: f64) {
        if x == 0.0 {
            return;
        }
        if !x.is_finite() {
            self.finite = false;
            return;
        }
        let mut q = x;
        let mut k = 0;
        for i in 0..self.parts.len() {
            let (s, e) = two_sum(q, self.parts[i]);
            q = s;
            if e != 0.0 {
                self.parts[k] = e;
                k += 1;
            }
        }
        self.parts.truncate(k);
        if !q.is_finite() {
            self.finite = false;
        }
        if q != 0.0 {
            self.parts.push(q);
        }
    }

    /// Add the product `a * b` exactly.
    pub fn add_product(&mut self, a: f64, b: f64) {
        let (p, e) = two_prod(a, b);
        if p != 0.0 && p.abs() < 1e-290 {
            self.inexact += 1;
        }
        self.add(p);
        self.add(e);
    }

    /// Add the product `a * b * c` exactly.
    pub fn add_product3(&mut self, a: f64, b: f64, c: f64) {
        let (p, e) = two_prod(a, b);
        if p != 0.0 && p.abs() < 1e-290 {
            self.inexact += 1;
        }
        self.add_product(p, c);
        self.add_product(e, c);
    }

    /// Add another expansion exactly.
    pub fn add_expansion(&mut self, other: &Expansion) {
        for &x in &other.parts {
            self.add(x);
        }
        self.inexact += other.inexact;
        self.finite &= other.finite;
    }

    /// The expansion times the float `c`, exactly.
    pub fn scaled(&self, c: f64) -> Expansion {
        let mut out = Expansion::new();
        for &x in &self.parts {
            out.add_product(x, c);
        }
        out.inexact += self.inexact;
        out.finite &= self.finite;
        out
    }

    /// The exact product of two expansions.
    pub fn mul(&self, other: &Expansion) -> Expansion {
        let mut out = Expansion::new();
        for &a in &self.parts {
            for &b in &other.parts {
                out.add_product(a, b);
            }
        }
        out.inexact += self.inexact + other.inexact;
        out.finite &= self.finite && other.finite;
        out
    }

    /// The negated expansion (exact).
    pub fn neg(&self) -> Expansion {
        let mut out = self.clone();
        out.parts.iter_mut().for_each(|x| *x = -*x);
        out
    }

    /// Whether every term was finite (no overflow).
    pub fn is_finite(&self) -> bool {
        self.finite
    }

    /// The sign of the exact value: -1, 0 or 1 (the largest component's).
    /// Only meaningful when [`Expansion::slack`] is zero.
    pub fn sign(&self) -> f64 {
        match self.parts.last() {
            Some(&x) if x > 0.0 => 1.0,
            Some(&x) if x < 0.0 => -1.0,
            _ => 0.0,
        }
    }

    /// The value rounded to float64, with a bound on its error: the exact
    /// value lies within `approx +- error`.
    /// One component (or none) is the value itself: no rounding error.
    pub fn approx(&self) -> (f64, f64) {
        if self.parts.len() <= 1 {
            return (self.parts.first().copied().unwrap_or(0.0), self.slack());
        }
        let sum: f64 = self.parts.iter().sum();
        let mass: f64 = self.parts.iter().map(|x| x.abs()).sum();
        let err = up(gamma(self.parts.len()) * mass, 2) + self.slack();
        (sum, err)
    }

    /// The absolute uncertainty from underflowed products (usually zero).
    pub fn slack(&self) -> f64 {
        self.inexact as f64 * 4.0 * TINY
    }

    /// An upper bound on the absolute value.
    /// Exactly the value's when it is known exactly (0 for exactly 0).
    pub fn abs_upper(&self) -> f64 {
        let (a, e) = self.approx();
        if e == 0.0 {
            return a.abs();
        }
        up(a.abs() + e, 1)
    }

    /// A lower bound on the absolute value (exact when the value is).
    pub fn abs_lower(&self) -> f64 {
        let (a, e) = self.approx();
        if e == 0.0 {
            return a.abs();
        }
        down(a.abs() - e, 1).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_sums_exactly_what_floats_lose() {
        // 1e16 + 1 - 1e16 is 0 in float64 and 1 exactly.
        let mut e = Expansion::new();
        e.add(1e16);
        e.add(1.0);
        e.add(-1e16);
        assert_eq!(e.approx().0, 1.0);
        assert_eq!(e.sign(), 1.0);
        // A product's low part is kept: (1 + 2^-30)^2 - 1 - 2^-29 = 2^-60.
        let x = 1.0 + 2f64.powi(-30);
        let mut p = Expansion::new();
        p.add_product(x, x);
        p.add(-1.0);
        p.add(-(2f64.powi(-29)));
        assert_eq!(p.approx().0, 2f64.powi(-60));
        assert_eq!(p.slack(), 0.0);
    }

    #[test]
    fn triple_products_are_exact() {
        let a = 1.0 + 2f64.powi(-40);
        let mut e = Expansion::new();
        e.add_product3(a, a, a);
        // (1 + t)^3 = 1 + 3t + 3t^2 + t^3 with t = 2^-40
        e.add(-1.0);
        e.add(-3.0 * 2f64.powi(-40));
        e.add(-3.0 * 2f64.powi(-80));
        assert_eq!(e.approx().0, 2f64.powi(-120));
    }

    #[test]
    fn bounds_cover_subnormal_results() {
        // 2^-1022 / 2^60 underflows to 0; its upper bound may not.
        let q = f64::MIN_POSITIVE / 2f64.powi(60);
        assert_eq!(q, 0.0);
        assert!(up(q, 1) > 0.0);
        assert!(div_up(f64::MIN_POSITIVE, 2f64.powi(60)) > 0.0);
        assert_eq!(div_up(0.0, 3.0), 0.0);
        assert_eq!(down(SUBNORMAL, 1), 0.0);
        // Normal values are left as the relative factor makes them.
        assert_eq!(up(1.0, 1), 1.0 * (1.0 + gamma(1)));
        assert_eq!(down(1.0, 1), 1.0 * (1.0 - gamma(1)));
        // A vector whose largest entry is subnormal: no NaN from 0 * inf.
        let x = [1e-310, 0.0, -3e-320];
        let (lo, hi) = (norm_lower(&x), norm_upper(&x));
        assert!(lo.is_finite() && hi.is_finite(), "{lo} {hi}");
        assert!(
            lo <= 1e-310 && lo > 0.999e-310 && 1e-310 < hi && hi < 1.001e-310,
            "{lo} {hi}"
        );
        assert!(norm_upper(&[SUBNORMAL]) >= SUBNORMAL);
        // An exact single component needs no rounding.
        let mut e = Expansion::new();
        e.add(SUBNORMAL);
        assert_eq!((e.abs_lower(), e.abs_upper()), (SUBNORMAL, SUBNORMAL));
        assert_eq!(Expansion::new().abs_upper(), 0.0);
    }

    #[test]
    fn norm_bounds_bracket_the_norm() {
        let x = [3.0, 4.0, 1e-200, -12.0];
        let n = 13.0;
        assert!(norm_upper(&x) >= n && norm_upper(&x) < n * (1.0 + 1e-14));
        assert!(norm_lower(&x) <= n && norm_lower(&x) > n * (1.0 - 1e-14));
        assert_eq!(norm_upper(&[]), 0.0);
    }
}
