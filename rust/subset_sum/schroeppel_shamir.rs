//! Exact 0/1 solutions of `A x = b` in `O(2^(n/2))` time and `O(2^(n/4))`
//! memory: Schroeppel & Shamir's four lists, in the modular form of
//! Howgrave-Graham & Joux.
//!
//! # Design note
//!
//! The columns are split into four quarters. Each column gets two linear
//! fingerprints of `A x`: `f = <r, A x>` modulo `2^64` (wrapping
//! arithmetic with a fixed odd random `r`) and `g` modulo a prime `p` close to the size of a
//! quarter list. For every residue `c` modulo `p`, the left pairs
//! `(x_1, x_2)` with `g(x_1) + g(x_2) = c` are formed from a bucket index
//! of quarter 2 and sorted by `f`; the right pairs `(x_3, x_4)` with
//! `g(x_3) + g(x_4) = g(b) - c` look up `f(b) - f(x_3) - f(x_4)` among them,
//! and every fingerprint match is checked against `A` and `b` exactly. Each
//! residue holds about `2^(n/4)` pairs a side, so memory stays at a few
//! quarter lists while the time is that of meeting in the middle
//! (Schroeppel & Shamir 1981; Howgrave-Graham & Joux 2010).
//!
//! The residues are searched in parallel chunks; the answer is the match
//! of the lowest residue (then the first in scan order), so it does not
//! depend on the thread count. An empty search proves infeasibility.

use crate::rng::splitmix64;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use rayon::prelude::*;

use crate::error::{check_columns, Error};
use crate::limits::{Limits, Stop};

/// Work between two polls of the limits and the cancel flag.
const POLL: u64 = 1 << 14;

/// Largest number of columns: quarters of 13, lists of 8192 entries.
pub const MAX_COLUMNS: usize = 52;

/// What the search found.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResult {
    /// `x` with `A x = b`, or `None`.
    pub solution: Option<Vec<u8>>,
    /// `None` when the search finished (so `solution == None` proves
    /// infeasibility).
    pub stopped: Option<Stop>,
    /// Quarter subset sums and pair sums formed.
    pub nodes: u64,
    pub memory_bytes: u64,
    pub seconds: f64,
}

impl SearchResult {
    /// A finished or stopped search: a solution makes any stop moot.
    pub(crate) fn new(
        solution: Option<Vec<u8>>,
        stop: Option<Stop>,
        nodes: u64,
        memory_bytes: u64,
        start: Instant,
    ) -> Self {
        SearchResult {
            stopped: if solution.is_some() { None } else { stop },
            solution,
            nodes,
            memory_bytes,
            seconds: start.elapsed().as_secs_f64(),
        }
    }
}

/// A seed drawn from the instance itself: the search is deterministic for
/// given data, but no fixed vector collides under every instance's
/// fingerprints, so collisions cannot be planted ahead of time.
fn instance_seed(columns: &[Vec<i64>], b: &[i64]) -> u64 {
    let mut state = 0x5EED_5EED_u64;
    for &v in columns.iter().flatten().chain(b) {
        state ^= v as u64;
        splitmix64(&mut state);
    }
    state
}

/// The linear fingerprints `<r, a_j>` of the columns and `<r, b>` of the
/// target, modulo `2^64`, for an odd `r` drawn from `state`.
fn fingerprints(columns: &[Vec<i64>], b: &[i64], state: &mut u64) -> (Vec<u64>, u64) {
    let r: Vec<u64> = (0..b.len()).map(|_| splitmix64(state) | 1).collect();
    let fingerprint = |v: &[i64]| -> u64 {
        v.iter().zip(&r).fold(0u64, |acc, (&x, &ri)| {
            acc.wrapping_add((x as u64).wrapping_mul(ri))
        })
    };
    (
        columns.iter().map(|c| fingerprint(c)).collect(),
        fingerprint(b),
    )
}

/// Every subset sum of `h` under `add`, indexed by the subset's bits.
pub(crate) fn subset_sums<T: Copy + Default>(h: &[T], add: impl Fn(T, T) -> T) -> Vec<T> {
    let mut sums = vec![T::default(); 1 << h.len()];
    for (j, &hj) in h.iter().enumerate() {
        let half = 1 << j;
        let (low, high) = sums.split_at_mut(half);
        for (dst, &src) in high[..half].iter_mut().zip(low.iter()) {
            *dst = add(src, hj);
        }
    }
    sums
}

/// The smallest prime at least `m` (`m` is at most `2^13` here).
fn prime_at_least(m: u64) -> u64 {
    (m.max(2)..)
        .find(|&q| (2..).take_while(|d| d * d <= q).all(|d| q % d != 0))
        .expect("primes are unbounded")
}

/// Masks of a quarter grouped by residue: `masks[start[v]..start[v + 1]]`
/// have `g = v`.
struct Buckets {
    start: Vec<usize>,
    masks: Vec<u32>,
}

impl Buckets {
    fn new(g: &[u64], p: u64) -> Self {
        let mut start = vec![0usize; p as usize + 1];
        for &v in g {
            start[v as usize + 1] += 1;
        }
        for v in 0..p as usize {
            start[v + 1] += start[v];
        }
        let mut fill = start.clone();
        let mut masks = vec![0u32; g.len()];
        for (mask, &v) in g.iter().enumerate() {
            masks[fill[v as usize]] = mask as u32;
            fill[v as usize] += 1;
        }
        Buckets { start, masks }
    }

    fn get(&self, v: u64) -> &[u32] {
        &self.masks[self.start[v as usize]..self.start[v as usize + 1]]
    }
}

/// Solve `sum_j x_j columns[j] = b` over `x` in `{0,1}^n`, `n <= 52`, on
/// the current rayon pool. Nodes are the pair sums formed.
// Long on purpose: the four lists and their residue loop, kept whole as in Howgrave-Graham & Joux.
#[allow(clippy::too_many_lines)]
pub fn schroeppel_shamir(
    columns: &[Vec<i64>],
    b: &[i64],
    limits: Limits,
    cancel: &AtomicBool,
) -> Result<SearchResult, Error> {
    let start = Instant::now();
    let n = columns.len();
    let k = b.len();
    check_columns(columns, k)?;
    if n > MAX_COLUMNS {
        return Err(Error::InvalidOption {
            option: "A",
            message: format!("Schroeppel-Shamir handles at most {MAX_COLUMNS} columns, got {n}"),
        });
    }
    // Quarter boundaries: sizes differ by at most one.
    let cut: Vec<usize> = (0..=4).map(|q| q * n / 4).collect();
    let mut state = instance_seed(columns, b);
    let (f, f_b) = fingerprints(columns, b, &mut state);
    // A prime that divides every entry would put all subsets in one
    // residue (one huge list): take the next prime then.
    let mut p = prime_at_least(1 << (n / 4));
    let entries = || columns.iter().flatten().chain(b);
    while entries().any(|&v| v != 0) && entries().all(|&v| v % p as i64 == 0) {
        p = prime_at_least(p + 1);
    }
    let r: Vec<u128> = (0..k)
        .map(|_| (splitmix64(&mut state) % p) as u128)
        .collect();
    let residue = |v: &[i64]| -> u64 {
        v.iter().zip(&r).fold(0u128, |acc, (&x, &ri)| {
            (acc + x.rem_euclid(p as i64) as u128 * ri) % p as u128
        }) as u64
    };
    let g: Vec<u64> = columns.iter().map(|c| residue(c)).collect();
    let g_b = residue(b);
    let quarter = |q: usize| {
        let (lo, hi) = (cut[q], cut[q + 1]);
        (
            subset_sums(&f[lo..hi], u64::wrapping_add),
            subset_sums(&g[lo..hi], |x, y| (x + y) % p),
        )
    };
    let (f1, g1) = quarter(0);
    let (f2, g2) = quarter(1);
    let (f3, g3) = quarter(2);
    let (f4, g4) = quarter(3);
    let (by2, by4) = (Buckets::new(&g2, p), Buckets::new(&g4, p));
    let lists = f1.len() + f2.len() + f3.len() + f4.len();
    // Quarter lists (f, g: 16 bytes) and buckets, plus the largest left
    // list (16 bytes a pair) once per thread.
    let largest = AtomicU64::new(0);

    let exact = |masks: [u32; 4]| -> bool {
        // i128: no overflow whatever the caller passed.
        let mut sum = vec![0i128; k];
        for (q, &mask) in masks.iter().enumerate() {
            for j in 0..cut[q + 1] - cut[q] {
                if mask >> j & 1 == 1 {
                    for (s, &a) in sum.iter_mut().zip(&columns[cut[q] + j]) {
                        *s += a as i128;
                    }
                }
            }
        }
        sum.iter().zip(b).all(|(&s, &t)| s == t as i128)
    };
    let formed = AtomicU64::new(0);
    let stopped = Mutex::new(None);
    let stop_now = |total: u64| limits.reached(start, cancel, total);
    let search = |c: u64| -> Option<[u32; 4]> {
        // Work: pairs formed and exact checks. A residue holds about
        // 2^(n/4) pairs, but structured columns (say, every column of the
        // first half a multiple of p) can put up to 2^(n/2) pairs in one,
        // so the limits are polled while its list is built and searched.
        let mut flushed = 0u64;
        let poll = |work: u64, flushed: &mut u64| -> bool {
            let total = formed.fetch_add(work - *flushed, Ordering::Relaxed) + work - *flushed;
            *flushed = work;
            match stop_now(total) {
                Some(stop) => {
                    stopped
                        .lock()
                        .expect("no panics hold it")
                        .get_or_insert(stop);
                    true
                }
                None => false,
            }
        };
        let mut left: Vec<(u64, u32, u32)> = Vec::new();
        for (m1, (&fa, &ga)) in f1.iter().zip(&g1).enumerate() {
            for &m2 in by2.get((c + p - ga) % p) {
                left.push((fa.wrapping_add(f2[m2 as usize]), m1 as u32, m2));
            }
            let built = left.len() as u64;
            if built - flushed >= POLL && poll(built, &mut flushed) {
                return None;
            }
        }
        largest.fetch_max(left.len() as u64, Ordering::Relaxed);
        if left.len() > 1 << 20 {
            // Only such a skewed residue is this long: sort it on the pool.
            left.par_sort_unstable();
            if poll(left.len() as u64, &mut flushed) {
                return None;
            }
        } else {
            left.sort_unstable();
        }
        let want = (g_b + p - c) % p;
        let mut work = left.len() as u64;
        let mut hit = None;
        'right: for (m3, (&fc, &gc)) in f3.iter().zip(&g3).enumerate() {
            for &m4 in by4.get((want + p - gc) % p) {
                work += 1;
                let need = f_b.wrapping_sub(fc).wrapping_sub(f4[m4 as usize]);
                let first = left.partition_point(|&(s, _, _)| s < need);
                for &(_, m1, m2) in left[first..].iter().take_while(|&&(s, _, _)| s == need) {
                    work += 1;
                    if exact([m1, m2, m3 as u32, m4]) {
                        hit = Some([m1, m2, m3 as u32, m4]);
                        break 'right;
                    }
                    if work - flushed >= POLL && poll(work, &mut flushed) {
                        return None;
                    }
                }
                if work - flushed >= POLL && poll(work, &mut flushed) {
                    return None;
                }
            }
        }
        if poll(work, &mut flushed) && hit.is_none() {
            return None;
        }
        hit
    };
    // Residues in chunks, lowest first; a chunk that starts after a stop
    // does nothing.
    const CHUNK: u64 = 16;
    let found = (0..p.div_ceil(CHUNK))
        .into_par_iter()
        .map(|chunk| {
            (chunk * CHUNK..((chunk + 1) * CHUNK).min(p)).find_map(|c| {
                if stopped.lock().expect("no panics hold it").is_some() {
                    return None;
                }
                search(c)
            })
        })
        .find_first(|hit| hit.is_some())
        .flatten();
    let stop = stopped.into_inner().expect("no panics hold it");
    let solution = found.map(|masks| {
        let mut x = vec![0u8; n];
        for (q, &mask) in masks.iter().enumerate() {
            for j in 0..cut[q + 1] - cut[q] {
                x[cut[q] + j] = (mask >> j & 1) as u8;
            }
        }
        x
    });
    let memory_bytes = 20 * lists as u64
        + 16 * 2 * (p + 1)
        + 16 * largest.into_inner() * rayon::current_num_threads() as u64;
    Ok(SearchResult::new(
        solution,
        stop,
        formed.into_inner() + lists as u64,
        memory_bytes,
        start,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn brute(columns: &[Vec<i64>], b: &[i64]) -> bool {
        (0usize..1 << columns.len()).any(|mask| {
            (0..b.len()).all(|i| {
                let sum: i64 = columns
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| mask >> j & 1 == 1)
                    .map(|(_, c)| c[i])
                    .sum();
                sum == b[i]
            })
        })
    }

    #[test]
    fn agrees_with_brute_force_and_checks_its_solutions() {
        let mut state = 11u64;
        for trial in 0..300 {
            let n = trial % 17;
            let k = 1 + trial % 3;
            let columns: Vec<Vec<i64>> = (0..n)
                .map(|_| {
                    (0..k)
                        .map(|_| (splitmix64(&mut state) % 9) as i64 - 4)
                        .collect()
                })
                .collect();
            let b: Vec<i64> = if trial % 2 == 0 {
                (0..k)
                    .map(|_| (splitmix64(&mut state) % 11) as i64 - 5)
                    .collect()
            } else {
                let mut b = vec![0; k];
                for c in &columns {
                    if splitmix64(&mut state).is_multiple_of(2) {
                        for (s, &a) in b.iter_mut().zip(c) {
                            *s += a;
                        }
                    }
                }
                b
            };
            let cancel = AtomicBool::new(false);
            let got = schroeppel_shamir(&columns, &b, Limits::default(), &cancel).unwrap();
            assert_eq!(got.stopped, None);
            assert_eq!(got.solution.is_some(), brute(&columns, &b), "trial {trial}");
            if let Some(x) = got.solution {
                for (i, &bi) in b.iter().enumerate() {
                    let sum: i64 = columns
                        .iter()
                        .zip(&x)
                        .map(|(c, &xj)| c[i] * xj as i64)
                        .sum();
                    assert_eq!(sum, bi, "trial {trial}");
                }
            }
        }
    }

    #[test]
    fn limits_and_size_are_reported() {
        let columns: Vec<Vec<i64>> = (0..30).map(|j| vec![2 * j + 2]).collect();
        let cancel = AtomicBool::new(false);
        // An odd target for even columns: the search must run to the end.
        let out = schroeppel_shamir(&columns, &[31], Limits::default(), &cancel).unwrap();
        assert_eq!((out.solution, out.stopped), (None, None));
        let limits = Limits {
            node_limit: Some(10),
            ..Limits::default()
        };
        let out = schroeppel_shamir(&columns, &[31], limits, &cancel).unwrap();
        assert_eq!(out.stopped, Some(Stop::NodeLimit));
        let wide: Vec<Vec<i64>> = (0..53).map(|_| vec![1]).collect();
        assert!(schroeppel_shamir(&wide, &[1], Limits::default(), &cancel).is_err());
    }

    #[test]
    fn limits_hold_inside_one_huge_residue() {
        // The first half of the columns are multiples of the modulus
        // (8209 at n = 52), so all 2^26 left pairs fall in one residue; the
        // limits must stop its list while it is built (a breaker's case).
        let p = prime_at_least(1 << 13);
        let columns: Vec<Vec<i64>> = (0..52)
            .map(|j| {
                vec![if j < 26 {
                    p as i64 * (j + 1)
                } else {
                    3 * j + 1
                }]
            })
            .collect();
        let cancel = AtomicBool::new(false);
        let limits = Limits {
            node_limit: Some(100_000),
            ..Limits::default()
        };
        let started = Instant::now();
        let out = schroeppel_shamir(&columns, &[7], limits, &cancel).unwrap();
        assert_eq!(out.stopped, Some(Stop::NodeLimit));
        let threads = rayon::current_num_threads() as u64;
        // Each thread flushes its work every POLL pairs, give or take a
        // bucket and the residue in hand: far below the 2^26 pairs.
        assert!(out.nodes < 100_000 + threads * 4 * POLL, "{}", out.nodes);
        assert!(started.elapsed() < Duration::from_secs(5));
        let limits = Limits {
            time_limit: Some(Duration::from_millis(50)),
            ..Limits::default()
        };
        let started = Instant::now();
        let out = schroeppel_shamir(&columns, &[7], limits, &cancel).unwrap();
        assert_eq!(out.stopped, Some(Stop::TimeLimit));
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
    }
}
