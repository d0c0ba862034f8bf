//! Float 0/1 solutions of `||A x - b|| <= radius` by meeting in the middle
//! on a projection, with a window.
//!
//! # Design note
//!
//! Float data cannot be hashed exactly, so the columns are projected onto a
//! fixed unit direction `r`: `key(x) = <r, A x>`. Any `x` within `radius` of
//! `b` has `|key(x) - <r, b>| <= radius` (Cauchy-Schwarz). The left half's
//! subset keys are sorted; for every right subset, the left subsets whose
//! key lies in the window `<r, b> - key(x_R) +- (radius + slack)` are
//! checked against the full residual, where `slack` is a rigorous bound on
//! the rounding of the key sums (Higham 2002, ch. 3). A candidate is dropped
//! only when its residual provably exceeds `radius`, so no solution is
//! missed, and an empty search proves that none exists within `radius`
//! (Horowitz & Sahni 1974 for the two lists). A candidate returned may lie
//! just outside `radius` by rounding; the caller verifies it rigorously. The window holds few candidates unless the projections are
//! degenerate; time is then `O(2^(n/2) n)` and memory `16 * 2^(n/2)` bytes.
//!
//! The right subsets run in parallel chunks; the answer is the first
//! solution in the order (right subset, then left key), so it does not
//! depend on the thread count.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use rayon::prelude::*;

use crate::error::{check_columns, Error};
use crate::limits::Limits;
use crate::rigor::rounding::{gamma, norm_lower, up, TINY};
use crate::subset_sum::schroeppel_shamir::{subset_sums, SearchResult};

/// Largest half: `2^22` entries of 16 bytes, 64 MiB per side.
pub const MAX_HALF: usize = 22;

/// Search `x` in `{0,1}^n` with `||sum_j x_j columns[j] - b||_2 <= radius`.
/// Runs on the current rayon pool. Nodes are the subset sums formed.
pub fn meet_in_the_middle(
    columns: &[Vec<f64>],
    b: &[f64],
    radius: f64,
    limits: Limits,
    cancel: &AtomicBool,
) -> Result<SearchResult, Error> {
    meet_in_the_middle_verified(columns, b, radius, limits, cancel, &|_| Some(true))
        .map(|(result, _)| result)
}

/// [`meet_in_the_middle`] with a verifier: every subset within the window
/// goes to `accept`, which says whether it truly is a solution (`Some`), or
/// that it cannot tell (`None`). The search goes on past rejected subsets
/// and returns the first accepted one; the flag says whether some subset was
/// left undecided (then an empty search proves nothing).
// Long on purpose: the two lists and their merge with verification, one pass.
#[allow(clippy::too_many_lines)]
pub fn meet_in_the_middle_verified(
    columns: &[Vec<f64>],
    b: &[f64],
    radius: f64,
    limits: Limits,
    cancel: &AtomicBool,
    accept: &(dyn Fn(&[u8]) -> Option<bool> + Sync),
) -> Result<(SearchResult, bool), Error> {
    let start = Instant::now();
    let n = columns.len();
    let k = b.len();
    check_columns(columns, k)?;
    let all_finite = columns.iter().flatten().chain(b).all(|v| v.is_finite());
    if !(all_finite && radius.is_finite() && radius >= 0.0) {
        return Err(Error::InvalidOption {
            option: "A",
            message: "A, b and the radius must be finite".into(),
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
    // A fixed direction with no zero component, normalised.
    let raw: Vec<f64> = (0..k)
        .map(|i| 1.0 + ((i * 7 + 3) % 11) as f64 / 11.0)
        .collect();
    let norm = raw
        .iter()
        .map(|v| v * v)
        .sum::<f64>()
        .sqrt()
        .max(f64::MIN_POSITIVE);
    let r: Vec<f64> = raw.iter().map(|v| v / norm).collect();
    let project = |v: &[f64]| v.iter().zip(&r).map(|(a, b)| a * b).sum::<f64>();
    let keys: Vec<f64> = columns.iter().map(|c| project(c)).collect();
    let target = project(b);
    // Rounding of a key sum of at most n terms, and of the projections.
    // A rigorous window (Higham 2002, ch. 3): `r` has norm at most
    // 1 + gamma(k + 4), and every key sum and the target are off by at most
    // gamma(n + k + 4) times the sum of the |r_i a_ij| and |r_i b_i|.
    let key_mass: f64 = columns
        .iter()
        .chain(std::iter::once(&b.to_vec()))
        .map(|c| c.iter().zip(&r).map(|(a, w)| (a * w).abs()).sum::<f64>())
        .sum();
    let window = up(radius * (1.0 + gamma(k + 4)), 1)
        + up(gamma(n + k + 4) * key_mass, 2)
        + (n + k + 4) as f64 * TINY;
    let mut table: Vec<(f64, u32)> = subset_sums(&keys[..left], |x, y| x + y)
        .into_iter()
        .enumerate()
        .map(|(mask, s)| (s, mask as u32))
        .collect();
    table.par_sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let right_sums = subset_sums(&keys[left..], |x, y| x + y);
    let memory_bytes = 16 * (table.len() as u64) + 8 * right_sums.len() as u64;
    let formed = AtomicU64::new((table.len() + right_sums.len()) as u64);
    let stopped = Mutex::new(None);
    let stop_now = |total: u64| limits.reached(start, cancel, total);
    // Conservative: a subset is dropped only when its residual provably
    // exceeds `radius`; the caller verifies any subset returned.
    let close = |lmask: u32, rmask: usize| -> bool {
        let mut res: Vec<f64> = b.iter().map(|v| -v).collect();
        let mut mag: Vec<f64> = b.iter().map(|v| v.abs()).collect();
        let bits = (0..left).filter(|&j| lmask >> j & 1 == 1).chain(
            (0..right)
                .filter(|&j| rmask >> j & 1 == 1)
                .map(|j| j + left),
        );
        for j in bits {
            for ((s, t), &a) in res.iter_mut().zip(mag.iter_mut()).zip(&columns[j]) {
                *s += a;
                *t += a.abs();
            }
        }
        let g = gamma(n + 2);
        let low: Vec<f64> = res
            .iter()
            .zip(&mag)
            .map(|(v, t)| (v.abs() - g * t - (n + 2) as f64 * TINY).max(0.0))
            .collect();
        norm_lower(&low) <= radius
    };
    let unresolved = AtomicBool::new(false);
    let bits = |lmask: u32, rmask: usize| -> Vec<u8> {
        (0..n)
            .map(|j| {
                if j < left {
                    (lmask >> j & 1) as u8
                } else {
                    (rmask >> (j - left) & 1) as u8
                }
            })
            .collect()
    };
    const CHUNK: usize = 1 << 10;
    // Limits are polled every POLL candidate checks as well as per chunk:
    // with degenerate projections (repeated values) one window can hold
    // millions of candidates.
    const POLL: u64 = 1 << 12;
    let halted = AtomicBool::new(false);
    let halt = |total: u64| -> bool {
        if let Some(stop) = stop_now(total) {
            stopped
                .lock()
                .expect("no panics hold it")
                .get_or_insert(stop);
            halted.store(true, Ordering::Relaxed);
        }
        halted.load(Ordering::Relaxed)
    };
    let chunks = right_sums.len().div_ceil(CHUNK);
    // Checks per chunk: the nodes reported count the chunks up to the one
    // that found the solution, whichever others ran alongside it, so the
    // count does not depend on the thread count.
    let per_chunk: Vec<AtomicU64> = (0..chunks).map(|_| AtomicU64::new(0)).collect();
    let found = (0..chunks)
        .into_par_iter()
        .map(|c| {
            if halted.load(Ordering::Relaxed) {
                return None;
            }
            let mut checks = 0u64;
            let mut hit = None;
            let end = ((c + 1) * CHUNK).min(right_sums.len());
            'right: for (rmask, &right_sum) in
                right_sums.iter().enumerate().take(end).skip(c * CHUNK)
            {
                let need = target - right_sum;
                let first = table.partition_point(|&(s, _)| s < need - window);
                for &(s, lmask) in &table[first..] {
                    if s > need + window {
                        break;
                    }
                    checks += 1;
                    if checks.is_multiple_of(POLL) && halt(formed.load(Ordering::Relaxed) + checks)
                    {
                        break 'right;
                    }
                    if close(lmask, rmask) {
                        match accept(&bits(lmask, rmask)) {
                            Some(true) => {
                                hit = Some((lmask, rmask));
                                break 'right;
                            }
                            Some(false) => {}
                            None => unresolved.store(true, Ordering::Relaxed),
                        }
                    }
                }
            }
            per_chunk[c].store(checks, Ordering::Relaxed);
            let total = formed.fetch_add(checks, Ordering::Relaxed) + checks;
            if hit.is_none() {
                halt(total);
            }
            hit.map(|h| (c, h))
        })
        .find_first(|hit| hit.is_some())
        .flatten();
    let stop = stopped.into_inner().expect("no panics hold it");
    let nodes = match found {
        Some((c, _)) if stop.is_none() => {
            (table.len() + right_sums.len()) as u64
                + per_chunk[..=c]
                    .iter()
                    .map(|x| x.load(Ordering::Relaxed))
                    .sum::<u64>()
        }
        _ => formed.into_inner(),
    };
    let solution = found.map(|(_, (lmask, rmask))| bits(lmask, rmask));
    Ok((
        SearchResult::new(solution, stop, nodes, memory_bytes, start),
        unresolved.into_inner(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Uniform in `[-1, 1)` from the crate's generator.
    fn symmetric(state: &mut u64) -> f64 {
        (crate::rng::splitmix64(state) >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }

    #[test]
    fn agrees_with_brute_force() {
        let mut state = 5u64;
        for trial in 0..200 {
            let n = trial % 15;
            let k = 1 + trial % 3;
            let columns: Vec<Vec<f64>> = (0..n)
                .map(|_| (0..k).map(|_| symmetric(&mut state)).collect())
                .collect();
            let mut b: Vec<f64> = (0..k).map(|_| symmetric(&mut state)).collect();
            if trial % 2 == 1 {
                b = vec![0.0; k];
                for c in &columns {
                    if symmetric(&mut state) > 0.0 {
                        for (s, &a) in b.iter_mut().zip(c) {
                            *s += a;
                        }
                    }
                }
            }
            let radius = 1e-9 * b.iter().map(|v| v * v).sum::<f64>().sqrt();
            let brute = (0usize..1 << n).any(|mask| {
                let res: f64 = (0..k)
                    .map(|i| {
                        let s: f64 = (0..n)
                            .filter(|j| mask >> j & 1 == 1)
                            .map(|j| columns[j][i])
                            .sum();
                        (s - b[i]).powi(2)
                    })
                    .sum();
                res.sqrt() <= radius
            });
            let cancel = AtomicBool::new(false);
            let got = meet_in_the_middle(&columns, &b, radius, Limits::default(), &cancel).unwrap();
            assert_eq!(got.stopped, None);
            assert_eq!(got.solution.is_some(), brute, "trial {trial}");
        }
    }
}
