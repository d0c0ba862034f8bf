//! Exact 0/1 solutions of `A x = b` for small `n` by meeting in the middle.
//!
//! # Design note
//!
//! The columns are split into a left half of `n / 2` and a right half.
//! Every left subset sum is stored as a 64-bit fingerprint
//! `<r, A x_L>` (wrapping arithmetic with a fixed odd random `r`, so the
//! fingerprint is linear and exact modulo `2^64`), sorted; every right
//! subset then looks up `<r, b> - <r, A x_R>`, and each fingerprint match is
//! checked against `A` and `b` exactly, so a false match costs time, never
//! a wrong answer. Time is `O(2^(n/2) n)` and memory `16 * 2^(n/2)` bytes
//! per side, whatever the entries of `A`: no lattice reduction is needed,
//! which makes it the method of choice for small `n`
//! (Horowitz & Sahni 1974). The answer is the match with the lowest right
//! subset, then the lowest left subset (binary order), at any thread count.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use rayon::prelude::*;

use crate::error::Error;
use crate::limits::{Limits, Stop};

/// Largest half handled: `2^26` entries of 16 bytes, 1 GiB per side.
pub const MAX_HALF: usize = 26;

/// What the search found.
#[derive(Debug, Clone, PartialEq)]
pub struct MitmResult {
    /// `x` with `A x = b`, or `None`.
    pub solution: Option<Vec<u8>>,
    /// `None` when the search finished (so `solution == None` proves
    /// infeasibility).
    pub stopped: Option<Stop>,
    /// Subset sums formed (both halves).
    pub nodes: u64,
    pub memory_bytes: u64,
    pub seconds: f64,
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Every subset sum of the fingerprints `h`, indexed by the subset's bits.
fn subset_sums(h: &[u64]) -> Vec<u64> {
    let mut sums = vec![0u64; 1 << h.len()];
    for (j, &hj) in h.iter().enumerate() {
        let half = 1 << j;
        let (low, high) = sums.split_at_mut(half);
        for (dst, &src) in high[..half].iter_mut().zip(low.iter()) {
            *dst = src.wrapping_add(hj);
        }
    }
    sums
}

/// Solve `sum_j x_j columns[j] = b` over `x` in `{0,1}^n`; `columns[j]` has
/// the `k` entries of column `j`. Runs on the current rayon pool.
pub fn meet_in_the_middle(
    columns: &[Vec<i64>],
    b: &[i64],
    limits: Limits,
    cancel: &AtomicBool,
) -> Result<MitmResult, Error> {
    let start = Instant::now();
    let n = columns.len();
    let k = b.len();
    if columns.iter().any(|c| c.len() != k) {
        return Err(Error::InvalidOption {
            option: "A",
            message: format!("every column must have {k} entries, as b does"),
        });
    }
    let left = n / 2;
    let right = n - left;
    if right > MAX_HALF {
        return Err(Error::InvalidOption {
            option: "A",
            message: format!(
                "meet in the middle handles at most {} columns, got {n}",
                2 * MAX_HALF
            ),
        });
    }
    let stop_now = |formed: u64| -> Option<Stop> {
        if cancel.load(Ordering::Relaxed) {
            Some(Stop::Interrupted)
        } else if limits.node_limit.is_some_and(|l| formed >= l) {
            Some(Stop::NodeLimit)
        } else if limits.time_limit.is_some_and(|t| start.elapsed() >= t) {
            Some(Stop::TimeLimit)
        } else {
            None
        }
    };
    let mut state = 0x5EED_5EED_u64;
    let r: Vec<u64> = (0..k).map(|_| splitmix64(&mut state) | 1).collect();
    let fingerprint = |v: &[i64]| -> u64 {
        v.iter().zip(&r).fold(0u64, |acc, (&x, &ri)| {
            acc.wrapping_add((x as u64).wrapping_mul(ri))
        })
    };
    let h: Vec<u64> = columns.iter().map(|c| fingerprint(c)).collect();
    let target = fingerprint(b);
    let memory_bytes = 16 * ((1u64 << left) + (1u64 << right));
    let mut table: Vec<(u64, u32)> = subset_sums(&h[..left])
        .into_iter()
        .enumerate()
        .map(|(mask, s)| (s, mask as u32))
        .collect();
    table.par_sort_unstable();
    let right_sums = subset_sums(&h[left..]);
    let formed = (1u64 << left) + (1u64 << right);
    if let Some(stop) = stop_now(1u64 << left) {
        return Ok(MitmResult {
            solution: None,
            stopped: Some(stop),
            nodes: 1u64 << left,
            memory_bytes,
            seconds: start.elapsed().as_secs_f64(),
        });
    }
    let exact = |lmask: u32, rmask: usize| -> bool {
        let mut sum = vec![0i64; k];
        let bits = (0..left).filter(|&j| lmask >> j & 1 == 1).chain(
            (0..right)
                .filter(|&j| rmask >> j & 1 == 1)
                .map(|j| j + left),
        );
        for j in bits {
            for (s, &a) in sum.iter_mut().zip(&columns[j]) {
                *s += a;
            }
        }
        sum == b
    };
    // Right subsets in chunks, lowest first; the first chunk with a match
    // holds the answer, so the result does not depend on the threads.
    const CHUNK: usize = 1 << 12;
    let looked = AtomicU64::new(0);
    let stopped = std::sync::Mutex::new(None);
    let found = (0..right_sums.len().div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| {
            let total = looked.fetch_add(CHUNK as u64, Ordering::Relaxed) + (1u64 << left);
            if let Some(stop) = stop_now(total) {
                stopped
                    .lock()
                    .expect("no panics hold it")
                    .get_or_insert(stop);
                return None;
            }
            (c * CHUNK..((c + 1) * CHUNK).min(right_sums.len())).find_map(|rmask| {
                let need = target.wrapping_sub(right_sums[rmask]);
                let first = table.partition_point(|&(s, _)| s < need);
                table[first..]
                    .iter()
                    .take_while(|&&(s, _)| s == need)
                    .find(|&&(_, lmask)| exact(lmask, rmask))
                    .map(|&(_, lmask)| (lmask, rmask))
            })
        })
        .find_first(|hit| hit.is_some())
        .flatten();
    let stop = stopped.into_inner().expect("no panics hold it");
    let solution = found.map(|(lmask, rmask)| {
        (0..n)
            .map(|j| {
                let bit = if j < left {
                    lmask >> j & 1
                } else {
                    (rmask >> (j - left) & 1) as u32
                };
                bit as u8
            })
            .collect()
    });
    Ok(MitmResult {
        stopped: if solution.is_some() { None } else { stop },
        solution,
        nodes: formed,
        memory_bytes,
        seconds: start.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute(columns: &[Vec<i64>], b: &[i64]) -> Option<Vec<u8>> {
        let n = columns.len();
        // Same order as the search: right half major, then left half.
        let left = n / 2;
        let mut best: Option<(usize, usize, Vec<u8>)> = None;
        for mask in 0usize..1 << n {
            let mut sum = vec![0i64; b.len()];
            for (j, c) in columns.iter().enumerate() {
                if mask >> j & 1 == 1 {
                    for (s, &a) in sum.iter_mut().zip(c) {
                        *s += a;
                    }
                }
            }
            if sum == b {
                let key = (mask >> left, mask & ((1 << left) - 1));
                let x = (0..n).map(|j| (mask >> j & 1) as u8).collect();
                if best.as_ref().is_none_or(|(r, l, _)| key < (*r, *l)) {
                    best = Some((key.0, key.1, x));
                }
            }
        }
        best.map(|(_, _, x)| x)
    }

    #[test]
    fn agrees_with_brute_force_on_small_instances() {
        let mut state = 7u64;
        for trial in 0..200 {
            let n = 1 + trial % 14;
            let k = 1 + trial % 3;
            let columns: Vec<Vec<i64>> = (0..n)
                .map(|_| {
                    (0..k)
                        .map(|_| (splitmix64(&mut state) % 7) as i64 - 3)
                        .collect()
                })
                .collect();
            let b: Vec<i64> = if trial % 2 == 0 {
                (0..k)
                    .map(|_| (splitmix64(&mut state) % 9) as i64 - 4)
                    .collect()
            } else {
                let mut b = vec![0; k];
                for c in &columns {
                    if splitmix64(&mut state) % 2 == 0 {
                        for (s, &a) in b.iter_mut().zip(c) {
                            *s += a;
                        }
                    }
                }
                b
            };
            let cancel = AtomicBool::new(false);
            let got = meet_in_the_middle(&columns, &b, Limits::default(), &cancel).unwrap();
            assert_eq!(got.stopped, None);
            assert_eq!(got.solution, brute(&columns, &b), "trial {trial}");
        }
    }
}
