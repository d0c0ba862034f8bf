//! Stage 1: the genericity checks that turn "no flip set" into "not
//! absorbable" (docs/theory.md §3.2).
//!
//! For ReLU and LeakyReLU the kinks of `A x + f(x)` lie on one hyperplane per
//! neuron when every neuron is alive and the augmented rows `(u_i, b_i)` are
//! pairwise non-proportional; a same-width skip-free block must then reuse
//! those hyperplanes, which forces the flip condition (our extension of
//! Mijoski & Karbevski 2026, stated in the README). For GELU the paper's
//! theorem covers generic weights; we report whether the rows are alive and
//! pairwise distinct up to sign.
//!
//! [`proportional_pairs`] finds the offending pairs without the `m x m`
//! inner products `u_i . u_j` (sorted random projections with rigorous
//! windows), so the verdict-first path never forms them.

use rayon::prelude::*;

use faer::{Accum, MatMut, MatRef, Par};

use crate::absorption::block::Block;
use crate::linalg::matrix::{dot, gemm, Matrix};
use crate::rng::{Stream, XorShift64Star};

/// Which pair test the activation's theorem needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GenericityCheck {
    /// Only dead neurons are reported.
    None,
    /// Rows `(u_i, b_i)` must be pairwise non-proportional (ReLU family).
    Proportional,
    /// Rows `(u_i, b_i)` must be pairwise distinct up to sign (GELU family).
    SignedDistinct,
}

impl GenericityCheck {
    pub fn as_str(self) -> &'static str {
        match self {
            GenericityCheck::None => "none",
            GenericityCheck::Proportional => "non_proportional",
            GenericityCheck::SignedDistinct => "distinct_up_to_sign",
        }
    }
}

/// Relative size below which a squared distance computed from Gram entries
/// is rounding noise: equal rows must always be flagged, however the inner
/// products were summed.
pub const GRAM_RESOLUTION: f64 = 1024.0 * f64::EPSILON;

/// At most this many offending pairs are listed; all are counted.
pub const MAX_REPORTED_PAIRS: usize = 1000;

/// Outcome of the genericity check.
#[derive(Debug, Clone, PartialEq)]
pub struct GenericityReport {
    pub check: GenericityCheck,
    /// Neurons with `u_i = 0` or `v_i = 0` (relative to the largest row).
    pub dead: Vec<usize>,
    /// The first offending pairs `(i, j)`, `i < j`, ordered by `j`, then `i`.
    pub pairs: Vec<(usize, usize)>,
    /// Number of offending pairs in all.
    pub pair_count: u64,
}

impl GenericityReport {
    pub fn passed(&self) -> bool {
        self.dead.is_empty() && self.pair_count == 0
    }
}

/// Neurons whose input row or output column is exactly zero, from the
/// largest magnitude of each row of `W_up` and each column of `W_down`.
///
/// Exactly zero, not small: MK26's argument (theory.md §3.2) needs `u_i != 0`
/// and `v_i != 0`, which a nonzero float64 row satisfies whatever its size,
/// so a neuron's status never depends on another neuron's scale (a relative
/// test against the largest neuron marked ordinary neurons dead next to one
/// large column) nor on a power-of-two rescaling of the block. Magnitudes,
/// not squares: a row of subnormals squares to zero but is alive.
pub fn dead_neurons(up_max: &[f64], down_max: &[f64]) -> Vec<usize> {
    (0..up_max.len())
        .filter(|&i| up_max[i] == 0.0 || down_max[i] == 0.0)
        .collect()
}

/// The resolution of the pair test for rows of length `n`: the Gram
/// entries' a-priori rounding (Higham 2002, ch. 3) with room to spare, so an
/// exactly proportional (or equal) pair is always flagged, whatever `tol`.
pub fn resolution(n: usize) -> f64 {
    GRAM_RESOLUTION.max(8.0 * crate::rigor::rounding::gamma(n + 4))
}

/// Does the pair with augmented inner product `a_ij` and squared norms
/// `a_ii`, `a_jj` violate `check` at relative tolerance `tol`? `res` is
/// [`resolution`] of the rows' length.
#[inline]
pub fn offending_pair(
    check: GenericityCheck,
    a_ij: f64,
    a_ii: f64,
    a_jj: f64,
    tol: f64,
    res: f64,
) -> bool {
    if a_ii <= 0.0 || a_jj <= 0.0 {
        return false;
    }
    match check {
        GenericityCheck::None => false,
        // 1 - |cos| <= tol
        GenericityCheck::Proportional => {
            a_ij.abs() >= (1.0 - tol.max(res)) * a_ii.sqrt() * a_jj.sqrt()
        }
        // || a_i -+ a_j ||^2 <= max(tol^2, resolution) max(|a_i|^2, |a_j|^2)
        GenericityCheck::SignedDistinct => {
            a_ii + a_jj - 2.0 * a_ij.abs() <= (tol * tol).max(res) * a_ii.max(a_jj)
        }
    }
}

// ---------------------------------------------------------------------------
// The pair test on its own: sub-quadratic, same answer as the quadratic rule.
// ---------------------------------------------------------------------------

/// Rows whose computed augmented square norm lies in this range are
/// "regular": no inner product of two of them over- or underflows enough to
/// matter, so the rounding analysis below holds. Other live rows (norms
/// beyond `2^+-400`, or infinite squares) are compared with every row
/// directly.
const REGULAR_LO: f64 = 6.668014432879854e-241; // 2^-800
const REGULAR_HI: f64 = 6.668014432879854e+240; // 2^800

/// Fewest and most random directions the filter projects on.
const MIN_PROJECTIONS: usize = 16;
const MAX_PROJECTIONS: usize = 1024;

/// Sorted positions per parallel task of the sweep.
const SWEEP_BLOCK: usize = 128;

/// Rows per parallel task of the projection.
const PROJECTION_CHUNK: usize = 256;

/// Fixed seed of the projection directions.
const SEED: u64 = 0x9E37_79B9_7F4A_7C15;

/// What the pair search did (for tests and benchmarks).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PairSearchStats {
    /// Live rows with a normal-range norm (swept), and the others (compared
    /// with every row directly).
    pub regular: usize,
    pub irregular: usize,
    /// Number of projection directions (`n` means the rows themselves).
    pub projections: usize,
    /// Bound on the distance between the normalised rows of an offending
    /// pair (up to sign).
    pub radius: f64,
    /// Pairs inside the sorted window, pairs that passed the projected
    /// distance test, and pairs decided by `offending_pair`.
    pub in_window: u64,
    pub filtered: u64,
    pub decided: u64,
}

impl PairSearchStats {
    fn add(&mut self, o: &PairSearchStats) {
        self.in_window += o.in_window;
        self.filtered += o.filtered;
        self.decided += o.decided;
    }
}

/// The offending pairs of the genericity check, found without the `m x m`
/// Gram matrix.
///
/// The result is exactly what the quadratic rule gives: over every pair
/// `j < i` of rows that are not dead, `offending_pair(check, dot(u_i, u_j) +
/// b_i b_j, |a_i|^2, |a_j|^2, tol, resolution(d + 1))` with `|a_i|^2 =
/// dot(u_i, u_i) + b_i^2` (all in float64 with [`crate::linalg::matrix::dot`]'s
/// fixed order). It returns the number of offending pairs and the first
/// [`MAX_REPORTED_PAIRS`] of them as `(j, i)`, ordered by `i`, then `j`.
///
/// Method. Each live row `a_i = (u_i, b_i)` is normalised and projected on
/// `K` fixed orthonormalised pseudo-random directions, `y_i = Q a_i / |a_i|`.
/// The rounding analysis of `offending_pair` bounds the distance, up to
/// sign, of the unit rows of any pair it can flag by `delta` (about
/// `sqrt(2 tol)` for `Proportional` and `2 tol` for `SignedDistinct`), so
/// `|y_i -+ y_j| <= ||Q||_2 delta + 2 kappa = D`, with `||Q||_2` bounded by
/// Gershgorin on the computed `Q Q^T` and `kappa` the a-priori rounding of
/// the projections (Higham 2002, ch. 3). The rows are sorted by `|y_i1|`; a
/// sweep keeps the pairs whose keys differ by at most `D`, drops those whose
/// projected distance provably exceeds `D`, and decides the rest with
/// [`offending_pair`] on the exact expression above. Every bound is
/// rounded outwards, so no offending pair is ever dropped; the filter only
/// saves work. `K` grows with `d tol` so that random rows rarely survive the
/// filter (16 for float64 tolerances; about 450 at `d = 4096` and bfloat16's
/// `tol = 0.088`). The sweep works on `y` rounded to float32, with that
/// rounding added to `kappa`.
///
/// Cost: `O(m d K)` for the projections, `O(m log m)` for the sort, `O(K)`
/// per pair inside the window and `O(d)` per pair that survives the filter.
/// The window is narrow when `delta sqrt(d)` is small (float64
/// tolerances); otherwise it spans all pairs and the `O(m^2 K)` filter runs
/// as blocked GEMMs. Many (near-)duplicate rows make every pair among them
/// a candidate, as they must be: each one is counted.
///
/// Rows whose square norm lies outside `[2^-800, 2^800]` (where the
/// rounding analysis would have to cover overflow) are decided against
/// every other row directly; there are none in practice.
///
/// The set found is the exact set of offending pairs whatever the
/// rounding of the projections, so the result does not depend on the
/// number of threads.
pub fn proportional_pairs(
    u: &Matrix<'_>,
    b_up: Option<&[f64]>,
    is_dead: &[bool],
    check: GenericityCheck,
    tol: f64,
) -> (Vec<(usize, usize)>, u64) {
    let (pairs, count, _) = proportional_pairs_with_stats(u, b_up, is_dead, check, tol);
    (pairs, count)
}

/// [`proportional_pairs`] with a record of the work done.
pub fn proportional_pairs_with_stats(
    u: &Matrix<'_>,
    b_up: Option<&[f64]>,
    is_dead: &[bool],
    check: GenericityCheck,
    tol: f64,
) -> (Vec<(usize, usize)>, u64, PairSearchStats) {
    let m = u.rows();
    let d = u.cols();
    assert_eq!(
        is_dead.len(),
        m,
        "proportional_pairs: is_dead has the wrong length"
    );
    if let Some(b) = b_up {
        assert_eq!(b.len(), m, "proportional_pairs: b_up has the wrong length");
    }
    let mut stats = PairSearchStats::default();
    if check == GenericityCheck::None || m < 2 {
        return (Vec::new(), 0, stats);
    }
    let n = d + 1;
    let res = resolution(n);
    let bias = |i: usize| b_up.map_or(0.0, |b| b[i]);
    let aug: Vec<f64> = (0..m)
        .into_par_iter()
        .map(|i| dot(u.row(i), u.row(i)) + bias(i) * bias(i))
        .collect();
    // `offending_pair` is false whenever a square norm is not positive.
    let live = |i: usize| !is_dead[i] && aug[i] > 0.0;
    let regular: Vec<usize> = (0..m)
        .filter(|&i| live(i) && (REGULAR_LO..=REGULAR_HI).contains(&aug[i]))
        .collect();
    let mut is_regular = vec![false; m];
    for &i in &regular {
        is_regular[i] = true;
    }
    let irregular: Vec<usize> = (0..m).filter(|&i| live(i) && !is_regular[i]).collect();
    stats.regular = regular.len();
    stats.irregular = irregular.len();

    let decide = |i: usize, j: usize| -> bool {
        // i > j, as in the Gram assembly.
        offending_pair(
            check,
            dot(u.row(i), u.row(j)) + bias(i) * bias(j),
            aug[i],
            aug[j],
            tol,
            res,
        )
    };

    // Irregular rows: every pair they are part of is decided directly.
    let mut parts: Vec<Part> = irregular
        .par_iter()
        .map(|&i| {
            let mut acc = PairCollector::default();
            let mut st = PairSearchStats::default();
            for (j, &reg) in is_regular.iter().enumerate() {
                if j == i || !live(j) || (!reg && j > i) {
                    continue;
                }
                let (lo, hi) = (i.min(j), i.max(j));
                st.decided += 1;
                if decide(hi, lo) {
                    acc.push(lo, hi);
                }
            }
            (acc.pairs, acc.count, st)
        })
        .collect();

    if regular.len() >= 2 {
        let radii = Radii::new(check, tol, res, n);
        stats.radius = radii.delta;
        let proj = Projection::new(n, radii.delta);
        stats.projections = proj.k;
        parts.extend(sweep(u, b_up, &aug, &regular, &radii, &proj, &decide));
    }

    let mut pairs = Vec::new();
    let mut count = 0u64;
    for (p, c, st) in parts {
        pairs.extend(p);
        count += c;
        stats.add(&st);
    }
    pairs.sort_unstable_by_key(|&(j, i)| (i, j));
    pairs.truncate(MAX_REPORTED_PAIRS);
    (pairs, count, stats)
}

/// The pairs, count and work of one parallel task.
type Part = (Vec<(usize, usize)>, u64, PairSearchStats);

/// Keeps the count and the first [`MAX_REPORTED_PAIRS`] pairs by `(i, j)`.
#[derive(Default)]
struct PairCollector {
    pairs: Vec<(usize, usize)>,
    count: u64,
}

impl PairCollector {
    fn push(&mut self, j: usize, i: usize) {
        self.count += 1;
        self.pairs.push((j, i));
        if self.pairs.len() >= 4 * MAX_REPORTED_PAIRS {
            self.pairs.sort_unstable_by_key(|&(j, i)| (i, j));
            self.pairs.truncate(MAX_REPORTED_PAIRS);
        }
    }
}

/// Radii of the pair test in terms of the unit rows.
struct Radii {
    /// Any offending pair has `min_s |a_i/|a_i| - s a_j/|a_j|| <= delta`.
    delta: f64,
    /// `SignedDistinct` only: `| |a_i| - |a_j| | <= norm_gap max(|a_i|,
    /// |a_j|)` in terms of the computed norms `sqrt(aug)`; infinite when
    /// there is no such prune.
    norm_gap: f64,
}

impl Radii {
    /// The rounding analysis of [`offending_pair`] for rows of length `n`
    /// whose square norms are regular. With `u = 2^-53`, every computed
    /// inner product of two such rows is within `rho |a_i| |a_j|` of the
    /// exact one (`gamma(n)` for any summation order, plus the underflow of
    /// `n` terms, at most `n 2^-1022 / 2^-801` relative).
    fn new(check: GenericityCheck, tol: f64, res: f64, n: usize) -> Radii {
        use crate::rigor::rounding::{gamma, up, UNIT};
        let u = UNIT;
        let rho = up(gamma(n + 2) + (n + 2) as f64 * 2f64.powi(-200), 2);
        match check {
            GenericityCheck::None => Radii {
                delta: 0.0,
                norm_gap: f64::INFINITY,
            },
            GenericityCheck::Proportional => {
                // Flagged: |A_ij| >= fl(fl(1 - t) sqrt(A_ii)) sqrt(A_jj)
                // >= (1 - t)(1 - u)^5 sqrt(A_ii A_jj). With A_ii >= (1 - rho)
                // |a_i|^2 and |A_ij| <= |a_i . a_j| + rho |a_i| |a_j|:
                // |cos| >= 1 - t - 5u - 2 rho, and
                // min_s |x_i - s x_j|^2 = 2 - 2 |cos| <= 2 (t + 5u + 2 rho).
                let t = tol.max(res);
                // (t is never NaN: f64::max ignores a NaN tol.)
                if t >= 1.0 {
                    return Radii {
                        delta: 2.0,
                        norm_gap: f64::INFINITY,
                    };
                }
                let d2 = up(2.0 * (t + 8.0 * u + 2.0 * rho), 4);
                Radii {
                    delta: up(d2.sqrt(), 2).min(2.0),
                    norm_gap: f64::INFINITY,
                }
            }
            GenericityCheck::SignedDistinct => {
                // Flagged: fl(fl(A_ii + A_jj) - 2|A_ij|) <= fl(tau max(A))
                // gives |a_i|^2 + |a_j|^2 - 2|a_i . a_j| <= eps^2 max|a|^2
                // with eps^2 = 2u + 4 rho + tau (1 + rho)(1 + 3u). So
                // |a_i - s a_j| <= eps max(|a_i|, |a_j|) and, since
                // |x/|x| - y/|y|| <= 2 |x - y| / max(|x|, |y|), delta = 2 eps.
                let tau = (tol * tol).max(res);
                let e2 = up(2.0 * u + 4.0 * rho + tau * (1.0 + rho) * (1.0 + 4.0 * u), 4);
                let eps = up(e2.sqrt(), 2);
                // | |a_i| - |a_j| | <= eps max|a|, and the computed norms
                // sqrt(A_ii) are within eta = rho + u of |a_i|.
                let eta = rho + u;
                let norm_gap = if eps <= 0.25 {
                    (eps + 3.0 * eta + 4.0 * u) * (1.0 + 1e-6)
                } else {
                    f64::INFINITY
                };
                Radii {
                    delta: (2.0 * eps).min(2.0),
                    norm_gap,
                }
            }
        }
    }
}

/// `K` directions in `R^n` (rows of `q`, `K x n`), or the identity.
struct Projection {
    k: usize,
    identity: bool,
    q: Vec<f64>,
    /// Upper bounds on `||Q||_2` and `||Q||_F`.
    spectral: f64,
    frobenius: f64,
}

/// `ln` of Chernoff's bound on `P(chi^2_k <= x)`.
fn chernoff_ln(k: usize, x: f64) -> f64 {
    let k = k as f64;
    if x >= k {
        0.0
    } else if x <= 0.0 {
        f64::NEG_INFINITY
    } else {
        0.5 * k * ((x / k).ln() + 1.0 - x / k)
    }
}

impl Projection {
    /// Enough directions that two random unit rows (distance about
    /// `sqrt(2)`) rarely come within `delta` after projection: the
    /// projected squared distance is about `2 chi^2_K / n`, so `K` is the
    /// least multiple of 8 whose Chernoff bound on `chi^2_K <= n delta^2 / 2`
    /// is below `K / (16 n)` (a survivor costs a length-`n` dot product, the
    /// filter `K` per pair).
    fn count(n: usize, delta: f64) -> usize {
        if delta >= std::f64::consts::SQRT_2 {
            // Nothing can be pruned: the fewest directions will do.
            return MIN_PROJECTIONS.min(n);
        }
        let x = n as f64 * delta * delta / 2.0;
        let mut k = MIN_PROJECTIONS;
        loop {
            if k >= n {
                return n;
            }
            if k >= MAX_PROJECTIONS {
                return MAX_PROJECTIONS;
            }
            if chernoff_ln(k, x) <= (k as f64 / (16.0 * n as f64)).ln() {
                return k;
            }
            k += 8;
        }
    }

    fn new(n: usize, delta: f64) -> Projection {
        use crate::rigor::rounding::{gamma, norm_upper, up, TINY};
        let k = Self::count(n, delta);
        if k >= n {
            return Projection {
                k: n,
                identity: true,
                q: Vec::new(),
                spectral: 1.0,
                frobenius: up((n as f64).sqrt(), 2),
            };
        }
        let mut rng = XorShift64Star::new(SEED ^ ((n as u64) << 20) ^ k as u64);
        let mut q: Vec<f64> = (0..k * n).map(|_| rng.symmetric()).collect();
        // Cholesky QR until Q Q^T is close to the identity (once for a
        // well-conditioned random matrix). Orthonormality only tightens the
        // bound on ||Q||_2; the bound itself holds for any Q:
        // ||Q||_2^2 = lambda_max(Q Q^T) <= max_r sum_l |(Q Q^T)_rl|
        // (Gershgorin), each computed entry within gamma(n) |q_r| |q_l| plus
        // underflow.
        let spectral_bound = |q: &[f64], gram: &[f64]| -> f64 {
            let norms: Vec<f64> = (0..k).map(|r| norm_upper(&q[r * n..(r + 1) * n])).collect();
            let g = gamma(n + 1);
            let lmax = (0..k)
                .map(|r| {
                    let s: f64 = (0..k)
                        .map(|l| {
                            gram[r * k + l].abs()
                                + up(g * norms[r] * norms[l], 2)
                                + 2.0 * n as f64 * TINY
                        })
                        .sum();
                    up(s, k + 1)
                })
                .fold(0.0, f64::max);
            up(lmax.sqrt(), 2)
        };
        let mut spectral;
        let mut pass = 0;
        loop {
            let gram = gram_rows(&q, k, n);
            spectral = spectral_bound(&q, &gram);
            pass += 1;
            if spectral <= 1.0 + 1e-8 || pass > 3 {
                break;
            }
            let Some(linv) = inverse_cholesky(gram, k) else {
                break;
            };
            let mut next = vec![0.0; k * n];
            par_matmul(
                MatRef::from_row_major_slice(&linv, k, k),
                MatRef::from_row_major_slice(&q, k, n),
                &mut next,
            );
            q = next;
        }
        let frobenius = norm_upper(&q);
        Projection {
            k,
            identity: false,
            q,
            spectral,
            frobenius,
        }
    }
}

/// `c = a b`, row-major, in fixed blocks of rows of `a` on the thread pool
/// (each block by one sequential GEMM).
///
/// (Not `MatMut::from_row_major_slice_with_stride_mut`: in faer 0.24.4 it
/// swaps the strides and writes out of bounds.)
fn par_matmul(a: MatRef<'_, f64>, b: MatRef<'_, f64>, c: &mut [f64]) {
    const ROWS: usize = 32;
    let cols = b.ncols();
    if cols == 0 {
        return;
    }
    c[..a.nrows() * cols]
        .par_chunks_mut(ROWS * cols)
        .enumerate()
        .for_each(|(blk, out)| {
            let r0 = blk * ROWS;
            let rows = out.len() / cols;
            gemm(
                MatMut::from_row_major_slice_mut(out, rows, cols),
                Accum::Replace,
                a.subrows(r0, rows),
                b,
                1.0,
                Par::Seq,
            );
        });
}

/// `X X^T` for the `k x n` row-major `x`.
fn gram_rows(x: &[f64], k: usize, n: usize) -> Vec<f64> {
    let mut g = vec![0.0; k * k];
    let xr = MatRef::from_row_major_slice(x, k, n);
    par_matmul(xr, xr.transpose(), &mut g);
    g
}

/// `L^-1` for the Cholesky factor `L` of the `k x k` matrix `g`, or `None`
/// if a pivot is not positive.
fn inverse_cholesky(mut g: Vec<f64>, k: usize) -> Option<Vec<f64>> {
    for j in 0..k {
        let mut d = g[j * k + j];
        for l in 0..j {
            d -= g[j * k + l] * g[j * k + l];
        }
        if d.is_nan() || d <= 0.0 {
            return None;
        }
        let d = d.sqrt();
        g[j * k + j] = d;
        for i in j + 1..k {
            let mut s = g[i * k + j];
            for l in 0..j {
                s -= g[i * k + l] * g[j * k + l];
            }
            g[i * k + j] = s / d;
        }
    }
    // Row i of L^-1 is (e_i - sum_{l<i} L_il row_l) / L_ii (lower triangular).
    let mut inv = vec![0.0; k * k];
    for i in 0..k {
        let (done, rest) = inv.split_at_mut(i * k);
        let row = &mut rest[..k];
        row[i] = 1.0;
        for l in 0..i {
            let c = g[i * k + l];
            for (x, &y) in row[..=l].iter_mut().zip(&done[l * k..l * k + l + 1]) {
                *x -= c * y;
            }
        }
        let d = g[i * k + i];
        row[..=i].iter_mut().for_each(|x| *x /= d);
    }
    Some(inv)
}

/// The sorted sweep over the regular rows; one entry per block of sorted
/// positions.
// Long on purpose: one sweep over sorted rows; its window bookkeeping spans the loop.
#[allow(clippy::too_many_lines)]
fn sweep<F>(
    u: &Matrix<'_>,
    b_up: Option<&[f64]>,
    aug: &[f64],
    regular: &[usize],
    radii: &Radii,
    proj: &Projection,
    decide: &F,
) -> Vec<Part>
where
    F: Fn(usize, usize) -> bool + Sync,
{
    use crate::rigor::rounding::{gamma, up, TINY, UNIT};
    let m = u.rows();
    let d = u.cols();
    let n = d + 1;
    let k = proj.k;
    let bias = |i: usize| b_up.map_or(0.0, |b| b[i]);

    // y_i = Q a_i / sqrt(A_ii), for every row (only regular rows are used).
    let mut y = vec![0.0; m * k];
    y.par_chunks_mut(PROJECTION_CHUNK * k)
        .enumerate()
        .for_each(|(c, out)| {
            let r0 = c * PROJECTION_CHUNK;
            let r1 = r0 + out.len() / k;
            if proj.identity {
                for i in r0..r1 {
                    let o = &mut out[(i - r0) * k..(i - r0 + 1) * k];
                    o[..d].copy_from_slice(u.row(i));
                    o[d] = bias(i);
                }
            } else {
                gemm(
                    MatMut::from_row_major_slice_mut(out, r1 - r0, k),
                    Accum::Replace,
                    MatRef::from_row_major_slice(&u.data()[r0 * d..r1 * d], r1 - r0, d),
                    MatRef::from_row_major_slice_with_stride(&proj.q, k, d, n).transpose(),
                    1.0,
                    Par::Seq,
                );
                if let Some(b) = b_up {
                    for i in r0..r1 {
                        let o = &mut out[(i - r0) * k..(i - r0 + 1) * k];
                        for (r, x) in o.iter_mut().enumerate() {
                            *x += b[i] * proj.q[r * n + d];
                        }
                    }
                }
            }
            for i in r0..r1 {
                let a = aug[i];
                if (REGULAR_LO..=REGULAR_HI).contains(&a) {
                    let inv = 1.0 / a.sqrt();
                    out[(i - r0) * k..(i - r0 + 1) * k]
                        .iter_mut()
                        .for_each(|x| *x *= inv);
                }
            }
        });

    // Rounding of the projections: with A_ii = |a_i|^2 (1 + theta), |theta|
    // <= rho, the scale 1/fl(sqrt(A_ii)) is 1/|a_i| (1 + phi) with |phi| <=
    // 2 rho + 4u; the products Q a_i are within gamma(n) ||Q||_F |a_i|
    // (Cauchy-Schwarz on |Q| |a_i|) plus underflow, at most 2n 2^-1074 per
    // entry against |a_i| >= 2^-401. So |y_i - Q a_i/|a_i|| <= kappa.
    let u_ = UNIT;
    let rho = up(gamma(n + 2) + (n + 2) as f64 * 2f64.powi(-200), 2);
    let phi = 2.0 * rho + 4.0 * u_;
    let kappa = up(
        (1.0 + 2.0 * phi) * (gamma(n + 2) * proj.frobenius + (n * k) as f64 * 2f64.powi(-600))
            + phi * proj.spectral,
        4,
    ) * 1.01;
    // The sweep runs on y rounded to float32 (half the GEMM time): each
    // entry moves by at most 2^-24 of itself (or 2^-150 if subnormal), and
    // |y_i| <= ||Q||_2 + kappa.
    let kappa32 = up(
        kappa + F32_UNIT * (proj.spectral + kappa) * 1.01 + (k as f64).sqrt() * 2f64.powi(-149),
        2,
    );
    // Offending => min_s |y_i - s y_j| <= ||Q||_2 delta + 2 kappa32 = reach.
    let reach = up(proj.spectral * radii.delta + 2.0 * kappa32, 4);
    // (Room for the three roundings of the threshold in the test below.)
    let reach2 = up(reach * reach, 8);
    // The same reach rounded up to float32, for the float32 keys.
    let reach_key = (reach * (1.0 + 4.0 * F32_UNIT)) as f32;
    // The filter's own rounding: the float32 GEMM's g_ij is within
    // gamma32(k) |y_i| |y_j| <= gamma32(k) (|y_i|^2 + |y_j|^2) / 2 of y_i . y_j
    // (plus 2k 2^-150 underflow), the float64 squares sq within gamma(k) of
    // |y|^2 (products of float32 numbers are exact), and the last two float64
    // operations add 2u of |sq_i + sq_j + 2 g_ij|.
    let filter_rel = up(
        (gamma32(k + 2) + 2.0 * gamma(k + 3) + 6.0 * u_) * (1.0 + 4.0 * gamma32(k + 2)) * 1.01,
        2,
    );
    let filter_abs = k as f64 * 2f64.powi(-140) + 16.0 * k as f64 * TINY;

    // Sort the regular rows by |y_i1| (ties by index: a total order). The
    // float32 keys are then sorted too (rounding is monotone).
    let mut order: Vec<(f64, usize)> = regular.iter().map(|&i| (y[i * k].abs(), i)).collect();
    order.par_sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mm = order.len();
    let mut ys = vec![0f32; mm * k];
    ys.par_chunks_mut(k)
        .zip(order.par_iter())
        .for_each(|(dst, &(_, i))| {
            for (x, &v) in dst.iter_mut().zip(&y[i * k..(i + 1) * k]) {
                *x = v as f32;
            }
        });
    drop(y);
    let keys: Vec<f32> = ys.par_chunks(k).map(|r| r[0].abs()).collect();
    let sq: Vec<f64> = ys
        .par_chunks(k)
        .map(|r| r.iter().map(|&x| x as f64 * x as f64).sum())
        .collect();
    let norms: Vec<f64> = order.iter().map(|&(_, i)| aug[i].sqrt()).collect();

    // ends[p]: first q > p whose key is provably out of reach of p's.
    // Offending => |key_q - key_p| <= reach_key exactly, so the rounded
    // difference is at most reach_key too.
    let mut ends = vec![0usize; mm];
    let mut e = 0;
    for p in 0..mm {
        e = e.max(p + 1);
        while e < mm && keys[e] - keys[p] <= reach_key {
            e += 1;
        }
        ends[p] = e;
    }

    let blocks = mm.div_ceil(SWEEP_BLOCK);
    (0..blocks)
        .into_par_iter()
        .map(|blk| {
            let b0 = blk * SWEEP_BLOCK;
            let b1 = (b0 + SWEEP_BLOCK).min(mm);
            let hi = ends[b1 - 1];
            let cols = hi - b0;
            let mut acc = PairCollector::default();
            let mut st = PairSearchStats::default();
            if cols <= 1 {
                return (acc.pairs, acc.count, st);
            }
            // g[p - b0][q - b0] = y_p . y_q for p in the block, q in b0..hi.
            let mut g = vec![0f32; (b1 - b0) * cols];
            crate::linalg::matrix::gemm_f32(
                MatMut::from_row_major_slice_mut(&mut g, b1 - b0, cols),
                MatRef::from_row_major_slice(&ys[b0 * k..b1 * k], b1 - b0, k),
                MatRef::from_row_major_slice(&ys[b0 * k..hi * k], cols, k).transpose(),
            );
            for p in b0..b1 {
                let g_row = &g[(p - b0) * cols..(p - b0 + 1) * cols];
                for q in p + 1..ends[p] {
                    st.in_window += 1;
                    let s = sq[p] + sq[q];
                    let t = s - 2.0 * (g_row[q - b0] as f64).abs();
                    if t > reach2 + (filter_rel * s + filter_abs) {
                        continue;
                    }
                    st.filtered += 1;
                    if radii.norm_gap.is_finite() {
                        let gap = (norms[p] - norms[q]).abs();
                        if gap > radii.norm_gap * norms[p].max(norms[q]) {
                            continue;
                        }
                    }
                    let (i, j) = (order[p].1, order[q].1);
                    let (lo, hi) = (i.min(j), i.max(j));
                    st.decided += 1;
                    if decide(hi, lo) {
                        acc.push(lo, hi);
                    }
                }
            }
            (acc.pairs, acc.count, st)
        })
        .collect()
}

/// The unit roundoff of float32, `2^-24`.
const F32_UNIT: f64 = 5.960464477539063e-8;

/// [`gamma`](crate::rigor::rounding::gamma) for float32: `n 2^-24 / (1 - n 2^-24)`
/// with a 1% margin, infinite when `n 2^-24 >= 1/2`.
fn gamma32(n: usize) -> f64 {
    let nu = n as f64 * F32_UNIT;
    if nu >= 0.5 {
        f64::INFINITY
    } else {
        1.01 * nu / (1.0 - nu)
    }
}

/// Dead neurons and offending pairs of rows `(u_i, b_i)` (see `genericity`).
pub(crate) fn genericity_report(
    block: &Block,
    check: GenericityCheck,
    tol: f64,
) -> GenericityReport {
    let m = block.width();
    let u = &block.w_up;
    let up_max: Vec<f64> = (0..m)
        .into_par_iter()
        .map(|i| u.row(i).iter().fold(0.0f64, |a, x| a.max(x.abs())))
        .collect();
    let down_max = crate::linalg::matrix::column_fold(&block.w_down, 0.0, |a, _, v| a.max(v.abs()));
    let dead = dead_neurons(&up_max, &down_max);
    let mut is_dead = vec![false; m];
    for &i in &dead {
        is_dead[i] = true;
    }
    let b_up = block.b_up.as_deref();
    let extreme = extreme_rows(u, b_up, &is_dead);
    let (pairs, pair_count) = if extreme.is_empty() || check == GenericityCheck::None {
        proportional_pairs(u, b_up, &is_dead, check, tol)
    } else if check == GenericityCheck::Proportional {
        // Proportionality does not see a row's scale: bring each extreme
        // row's largest entry to [1, 2), where its square norm neither
        // underflows nor overflows, and test every pair as usual.
        let (scaled, scaled_b) = rows_scaled(u, b_up, &extreme);
        proportional_pairs(&scaled, scaled_b.as_deref(), &is_dead, check, tol)
    } else {
        // Distinct up to sign does: the float test covers the other rows,
        // and extreme rows (never equal up to sign to a row of another
        // scale) are compared with each other exactly.
        let mut skipped = is_dead.clone();
        for &i in &extreme {
            skipped[i] = true;
        }
        let (pairs, count) = proportional_pairs(u, b_up, &skipped, check, tol);
        let (more, more_count) = equal_up_to_sign(u, b_up, &extreme);
        let mut all: Vec<(usize, usize)> = pairs.into_iter().chain(more).collect();
        all.sort_unstable_by_key(|&(i, j)| (j, i));
        all.dedup();
        all.truncate(MAX_REPORTED_PAIRS);
        (all, count + more_count)
    };
    GenericityReport {
        check,
        dead,
        pairs,
        pair_count,
    }
}

/// Live rows `(u_i, b_i)` whose largest entry lies outside `[2^-480,
/// 2^480]`: their square norms underflow or overflow (a row of `2^-600`
/// squares to 0 and would pass every pair test unseen).
fn extreme_rows(u: &Matrix<'_>, b_up: Option<&[f64]>, is_dead: &[bool]) -> Vec<usize> {
    (0..u.rows())
        .filter(|&i| {
            let big = u
                .row(i)
                .iter()
                .chain(b_up.map(|b| &b[i]))
                .fold(0.0f64, |a, x| a.max(x.abs()));
            !is_dead[i] && big > 0.0 && !crate::rigor::rounding::unscaled_is_safe(big)
        })
        .collect()
}

/// A copy of `u` (and `b_up`) with each row of `rows` scaled by the power
/// of two that brings its largest entry into `[1, 2)` (exact, but for
/// entries that fall below `2^-1074` next to a much larger one).
fn rows_scaled(
    u: &Matrix<'_>,
    b_up: Option<&[f64]>,
    rows: &[usize],
) -> (Matrix<'static>, Option<Vec<f64>>) {
    let d = u.cols();
    let mut data = u.data().to_vec();
    let mut b = b_up.map(<[f64]>::to_vec);
    for &i in rows {
        let big = data[i * d..(i + 1) * d]
            .iter()
            .chain(b.as_ref().map(|b| &b[i]))
            .fold(0.0f64, |a, x| a.max(x.abs()));
        let k = -(big.log2().floor() as i32);
        for x in &mut data[i * d..(i + 1) * d] {
            *x = crate::absorption::block::ldexp(*x, k);
        }
        if let Some(b) = b.as_mut() {
            b[i] = crate::absorption::block::ldexp(b[i], k);
        }
    }
    let m = Matrix::from_vec("W_up", u.rows(), d, data).expect("the shape of u");
    (m, b)
}

/// Pairs `(i, j)`, `i < j`, among `rows` whose rows `(u_i, b_i)` are
/// exactly equal or exactly opposite (the first [`MAX_REPORTED_PAIRS`],
/// and how many in all), by hashing each row with the sign of its first
/// nonzero entry taken out.
fn equal_up_to_sign(
    u: &Matrix<'_>,
    b_up: Option<&[f64]>,
    rows: &[usize],
) -> (Vec<(usize, usize)>, u64) {
    let mut groups: std::collections::HashMap<Vec<u64>, Vec<usize>> =
        std::collections::HashMap::new();
    for &i in rows {
        let entries: Vec<f64> = u.row(i).iter().copied().chain(b_up.map(|b| b[i])).collect();
        let sign = entries
            .iter()
            .find(|x| **x != 0.0)
            .map_or(1.0, |x| x.signum());
        // +0.0 for both zeros, so that x and -x hash alike.
        let key = entries.iter().map(|x| (sign * x + 0.0).to_bits()).collect();
        groups.entry(key).or_default().push(i);
    }
    let mut pairs = Vec::new();
    let mut count = 0u64;
    for members in groups.values() {
        for (a, &i) in members.iter().enumerate() {
            for &j in &members[a + 1..] {
                count += 1;
                if pairs.len() < 4 * MAX_REPORTED_PAIRS {
                    pairs.push((i.min(j), i.max(j)));
                }
            }
        }
    }
    pairs.sort_unstable_by_key(|&(i, j)| (j, i));
    pairs.truncate(MAX_REPORTED_PAIRS);
    (pairs, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proportional_rows_are_flagged_with_either_sign() {
        // a_i = (1, 2), a_j = (-2, -4)
        assert!(offending_pair(
            GenericityCheck::Proportional,
            -10.0,
            5.0,
            20.0,
            1e-9,
            GRAM_RESOLUTION
        ));
        // a_i = (1, 2), a_j = (2, 1)
        assert!(!offending_pair(
            GenericityCheck::Proportional,
            4.0,
            5.0,
            5.0,
            1e-9,
            GRAM_RESOLUTION
        ));
    }

    #[test]
    fn signed_distinct_allows_proportional_but_not_equal_rows() {
        assert!(!offending_pair(
            GenericityCheck::SignedDistinct,
            -10.0,
            5.0,
            20.0,
            1e-9,
            GRAM_RESOLUTION
        ));
        assert!(offending_pair(
            GenericityCheck::SignedDistinct,
            -5.0,
            5.0,
            5.0,
            1e-9,
            GRAM_RESOLUTION
        ));
    }

    #[test]
    fn dead_neurons_are_found() {
        assert_eq!(
            dead_neurons(&[1.0, 0.0, 2.0, 1e-300], &[1.0, 1.0, 0.0, 5e-324]),
            vec![1, 2]
        );
    }

    // ----- proportional_pairs against the quadratic rule -----

    /// The quadratic rule of the Gram assembly (`relaxation`), with `dot`
    /// for the inner products.
    fn brute_force(
        u: &Matrix<'_>,
        b: Option<&[f64]>,
        is_dead: &[bool],
        check: GenericityCheck,
        tol: f64,
    ) -> (Vec<(usize, usize)>, u64) {
        let m = u.rows();
        let bias = |i: usize| b.map_or(0.0, |b| b[i]);
        let aug: Vec<f64> = (0..m)
            .map(|i| dot(u.row(i), u.row(i)) + bias(i) * bias(i))
            .collect();
        let res = resolution(u.cols() + 1);
        let mut pairs = Vec::new();
        let mut count = 0u64;
        for i in 0..m {
            if is_dead[i] || check == GenericityCheck::None {
                continue;
            }
            for j in 0..i {
                if !is_dead[j]
                    && offending_pair(
                        check,
                        dot(u.row(i), u.row(j)) + bias(i) * bias(j),
                        aug[i],
                        aug[j],
                        tol,
                        res,
                    )
                {
                    count += 1;
                    if pairs.len() < MAX_REPORTED_PAIRS {
                        pairs.push((j, i));
                    }
                }
            }
        }
        (pairs, count)
    }

    /// The test data come from the crate's generator.
    type Rng = crate::rng::SplitMix64;

    fn gaussian(rng: &mut Rng, m: usize, d: usize, scale: f64) -> Vec<f64> {
        (0..m * d).map(|_| rng.normal() * scale).collect()
    }

    const TOLS: [f64; 7] = [
        1e-12,
        1e-9,
        1.4901161193847656e-8,
        3.4526698e-4,
        3.1e-2,
        0.3,
        1.5,
    ];
    const CHECKS: [GenericityCheck; 2] = [
        GenericityCheck::Proportional,
        GenericityCheck::SignedDistinct,
    ];

    /// Compare with the quadratic rule for every check and tolerance;
    /// returns the total number of offending pairs seen.
    fn agree(u: &Matrix<'_>, b: Option<&[f64]>, is_dead: &[bool], tols: &[f64]) -> u64 {
        let mut seen = 0;
        for check in CHECKS {
            for &tol in tols {
                let want = brute_force(u, b, is_dead, check, tol);
                let got = proportional_pairs(u, b, is_dead, check, tol);
                assert_eq!(
                    got,
                    want,
                    "check {check:?}, tol {tol:e}, shape {:?}",
                    u.shape()
                );
                seen += want.1;
            }
        }
        assert_eq!(
            proportional_pairs(u, b, is_dead, GenericityCheck::None, 1e-9),
            (Vec::new(), 0)
        );
        seen
    }

    fn matrix(m: usize, d: usize, data: Vec<f64>) -> Matrix<'static> {
        Matrix::from_vec("W", m, d, data).unwrap()
    }

    #[test]
    fn random_blocks_agree_with_the_quadratic_rule() {
        let mut rng = Rng::new(1);
        for &(m, d) in &[
            (0, 3),
            (1, 3),
            (2, 1),
            (40, 1),
            (50, 2),
            (64, 5),
            (150, 17),
            (300, 40),
            (200, 200),
        ] {
            let u = matrix(m, d, gaussian(&mut rng, m, d, 1.0 / (d as f64).sqrt()));
            let b: Vec<f64> = (0..m).map(|_| rng.normal() * 0.1).collect();
            let dead: Vec<bool> = (0..m).map(|_| rng.below(10) == 0).collect();
            agree(&u, None, &vec![false; m], &TOLS);
            agree(&u, Some(&b), &dead, &TOLS);
        }
    }

    /// Rows built as `c * a_src` (and biases `c * b_src`), with positive and
    /// negative factors of mixed scales.
    fn planted(rng: &mut Rng, m: usize, d: usize, sources: usize) -> (Matrix<'static>, Vec<f64>) {
        let mut data = gaussian(rng, m, d, 1.0);
        let mut b: Vec<f64> = (0..m).map(|_| rng.normal()).collect();
        let factors = [
            1.0,
            -1.0,
            2.0,
            -0.5,
            3.0,
            -7.25,
            1e-3,
            -1e5,
            0.1,
            1.0 / 3.0,
            -1e-7,
            1e8,
        ];
        for i in sources..m {
            if rng.below(3) == 0 {
                continue;
            }
            let s = rng.below(sources);
            let c = factors[rng.below(factors.len())];
            for k in 0..d {
                data[i * d + k] = c * data[s * d + k];
            }
            b[i] = c * b[s];
        }
        (matrix(m, d, data), b)
    }

    #[test]
    fn planted_proportional_rows_are_all_found() {
        let mut rng = Rng::new(2);
        for &(m, d, sources) in &[(60, 3, 10), (200, 32, 40), (400, 64, 100), (120, 300, 7)] {
            let (u, b) = planted(&mut rng, m, d, sources);
            let dead = vec![false; m];
            assert!(agree(&u, Some(&b), &dead, &TOLS) > 0);
            assert!(agree(&u, None, &dead, &TOLS) > 0);
            // Zero biases for the planted rows' sources only: still proportional.
            let b0: Vec<f64> = b
                .iter()
                .map(|&x| if x.abs() < 0.5 { 0.0 } else { x })
                .collect();
            agree(&u, Some(&b0), &dead, &TOLS[..4]);
        }
    }

    /// Pairs `a_j = a_i + e`, with `|e|` swept geometrically across the
    /// tolerance of both checks, so that many pairs sit at its edge.
    #[test]
    fn near_proportional_rows_at_the_tolerance_agree() {
        let mut rng = Rng::new(3);
        for &d in &[2usize, 7, 64, 257] {
            for &tol in &[
                1e-13f64,
                1e-9,
                1.4901161193847656e-8,
                1e-6,
                3.4526698e-4,
                1e-2,
            ] {
                let pairs = 120;
                let m = 2 * pairs;
                let mut data = vec![0.0; m * d];
                let mut b = vec![0.0; m];
                for p in 0..pairs {
                    let row: Vec<f64> = (0..d).map(|_| rng.normal()).collect();
                    let bias = rng.normal();
                    let norm = (row.iter().map(|x| x * x).sum::<f64>() + bias * bias).sqrt();
                    // Proportional: 1 - |cos| ~ |e|^2 / 2; SignedDistinct: |e| ~ tol.
                    let target = if p % 2 == 0 { (2.0 * tol).sqrt() } else { tol };
                    let size = target * 2f64.powf((p as f64 / pairs as f64 - 0.5) * 0.4) * norm;
                    let e: Vec<f64> = (0..=d).map(|_| rng.normal()).collect();
                    let en = e.iter().map(|x| x * x).sum::<f64>().sqrt();
                    let c = if p % 3 == 0 {
                        -1.0
                    } else if p % 3 == 1 {
                        1.0
                    } else {
                        -2.5
                    };
                    for k in 0..d {
                        data[2 * p * d + k] = row[k];
                        data[(2 * p + 1) * d + k] = c * (row[k] + e[k] * size / en);
                    }
                    b[2 * p] = bias;
                    b[2 * p + 1] = c * (bias + e[d] * size / en);
                }
                let u = matrix(m, d, data);
                let dead = vec![false; m];
                for check in CHECKS {
                    for t in [tol, tol * (1.0 + 1e-12), tol * (1.0 - 1e-12)] {
                        let want = brute_force(&u, Some(&b), &dead, check, t);
                        assert_eq!(proportional_pairs(&u, Some(&b), &dead, check, t), want);
                    }
                }
                // The sweep straddles the edge: some planted pairs pass, some fail.
                let res = resolution(d + 1);
                let aug = |i: usize| dot(u.row(i), u.row(i)) + b[i] * b[i];
                let flagged = (0..pairs)
                    .filter(|&p| {
                        let (i, j) = (2 * p + 1, 2 * p);
                        let check = if p % 2 == 0 {
                            GenericityCheck::Proportional
                        } else {
                            GenericityCheck::SignedDistinct
                        };
                        let a = dot(u.row(i), u.row(j)) + b[i] * b[j];
                        offending_pair(check, a, aug(i), aug(j), tol, res)
                    })
                    .count();
                assert!(flagged > 0 && flagged < pairs, "d {d} tol {tol}: {flagged}");
            }
        }
    }

    /// Near pairs whose difference lies in the span of the projection
    /// directions, so the projected distance equals the true one: the
    /// window and the filter are exercised right at their edge.
    #[test]
    fn differences_along_the_projections_agree() {
        let mut rng = Rng::new(10);
        let d = 96;
        let n = d + 1;
        for check in CHECKS {
            for &tol in &[1e-13f64, 1e-9, 1.4901161193847656e-8, 1e-6, 1e-4] {
                let res = resolution(n);
                let radii = Radii::new(check, tol, res, n);
                let proj = Projection::new(n, radii.delta);
                assert!(!proj.identity && proj.k < n);
                let pairs = 150;
                let m = 2 * pairs;
                let mut data = vec![0.0; m * d];
                let mut b = vec![0.0; m];
                for p in 0..pairs {
                    let a: Vec<f64> = (0..n).map(|_| rng.normal()).collect();
                    let norm = a.iter().map(|x| x * x).sum::<f64>().sqrt();
                    // e: the first direction, or a mix of the first few.
                    let mut e = vec![0.0; n];
                    let terms = if p % 2 == 0 { 1 } else { 4 };
                    for r in 0..terms {
                        let c = rng.normal();
                        for (x, &q) in e.iter_mut().zip(&proj.q[r * n..(r + 1) * n]) {
                            *x += c * q;
                        }
                    }
                    let en = e.iter().map(|x| x * x).sum::<f64>().sqrt();
                    let size = radii.delta * norm * (0.9 + 0.2 * p as f64 / pairs as f64)
                        / if check == GenericityCheck::Proportional {
                            1.0
                        } else {
                            2.0
                        };
                    let c = if p % 3 == 0 { -1.0 } else { 1.0 };
                    for k in 0..d {
                        data[2 * p * d + k] = a[k];
                        data[(2 * p + 1) * d + k] = c * (a[k] + e[k] * size / en);
                    }
                    b[2 * p] = a[d];
                    b[2 * p + 1] = c * (a[d] + e[d] * size / en);
                }
                let u = matrix(m, d, data);
                let dead = vec![false; m];
                let want = brute_force(&u, Some(&b), &dead, check, tol);
                assert!(want.1 > 0, "{check:?} {tol}");
                assert_eq!(proportional_pairs(&u, Some(&b), &dead, check, tol), want);
            }
        }
    }

    /// Many small random blocks mixing everything above: planted pairs at
    /// the edge of either check, exact multiples, zero and dead rows, and
    /// rows of wildly different scales.
    #[test]
    // Long on purpose: a test: one fuzz loop and its checks, read together.
    #[allow(clippy::too_many_lines)]
    fn fuzzed_small_blocks_agree() {
        let mut rng = Rng::new(11);
        let tols = [
            1e-13f64,
            1e-9,
            1.4901161193847656e-8,
            1e-5,
            3.4526698e-4,
            1e-2,
            0.2,
        ];
        let scales = [1.0, 1.0, 1.0, 3.0, 1e-3, 1e8, 1e-150, 1e150, 1e-300];
        for trial in 0..400 {
            let d = [0, 1, 2, 3, 5, 8, 15, 16, 17, 31, 40, 70][rng.below(12)];
            let n = d + 1;
            let m = 2 + rng.below(60);
            let tol = tols[rng.below(tols.len())];
            let with_bias = rng.below(3) != 0;
            let mut a: Vec<f64> = (0..m * n).map(|_| rng.normal()).collect();
            for i in 1..m {
                let src = rng.below(i);
                match rng.below(6) {
                    0 => {
                        // An exact multiple.
                        let c = [1.0, -1.0, 0.5, -3.0, 1.0 / 7.0][rng.below(5)];
                        for k in 0..n {
                            a[i * n + k] = c * a[src * n + k];
                        }
                    }
                    1 => {
                        // A perturbed copy near the edge of one of the checks.
                        let size = if rng.below(2) == 0 {
                            (2.0 * tol).sqrt()
                        } else {
                            tol
                        } * (0.8 + 0.4 * rng.uniform());
                        let c = if rng.below(2) == 0 { 1.0 } else { -1.0 };
                        let norm = (0..n).map(|k| a[src * n + k].powi(2)).sum::<f64>().sqrt();
                        for k in 0..n {
                            a[i * n + k] = c
                                * (a[src * n + k] + size * norm * rng.normal() / (n as f64).sqrt());
                        }
                    }
                    2 => {
                        // A rescaled copy near the norm edge of SignedDistinct.
                        let h = (tol * tol).max(resolution(n)).sqrt() * (0.8 + 0.4 * rng.uniform());
                        let c = if rng.below(2) == 0 {
                            1.0 + h
                        } else {
                            -1.0 / (1.0 + h)
                        };
                        for k in 0..n {
                            a[i * n + k] = c * a[src * n + k];
                        }
                    }
                    3 if rng.below(4) == 0 => {
                        for k in 0..n {
                            a[i * n + k] = 0.0;
                        }
                    }
                    _ => {}
                }
            }
            for i in 0..m {
                let sc = scales[rng.below(scales.len())];
                for k in 0..n {
                    a[i * n + k] *= sc;
                }
            }
            if !with_bias {
                for i in 0..m {
                    a[i * n + d] = 0.0;
                }
            }
            let u = matrix(
                m,
                d,
                (0..m).flat_map(|i| a[i * n..i * n + d].to_vec()).collect(),
            );
            let b: Vec<f64> = (0..m).map(|i| a[i * n + d]).collect();
            let dead: Vec<bool> = (0..m).map(|_| rng.below(12) == 0).collect();
            let b = if with_bias { Some(&b[..]) } else { None };
            for check in CHECKS {
                let want = brute_force(&u, b, &dead, check, tol);
                let got = proportional_pairs(&u, b, &dead, check, tol);
                assert_eq!(
                    got, want,
                    "trial {trial}: m {m} d {d} tol {tol:e} {check:?}"
                );
            }
        }
    }

    #[test]
    fn degenerate_blocks_agree() {
        let mut rng = Rng::new(4);
        // All rows equal: every pair offends, more than are reported.
        let row: Vec<f64> = (0..9).map(|_| rng.normal()).collect();
        let m = 70;
        let u = matrix(m, 9, (0..m).flat_map(|_| row.clone()).collect());
        let dead = vec![false; m];
        for check in CHECKS {
            let (pairs, count) = proportional_pairs(&u, None, &dead, check, 1e-9);
            assert_eq!(count, (m * (m - 1) / 2) as u64);
            assert_eq!(pairs.len(), MAX_REPORTED_PAIRS);
            assert_eq!((pairs, count), brute_force(&u, None, &dead, check, 1e-9));
        }
        agree(&u, Some(&vec![0.5; m]), &dead, &TOLS);
        // Zero rows, dead or not, and zero biases.
        let mut data = gaussian(&mut rng, 50, 6, 1.0);
        for i in (0..50).step_by(4) {
            data[i * 6..(i + 1) * 6].iter_mut().for_each(|x| *x = 0.0);
        }
        let u = matrix(50, 6, data);
        let dead: Vec<bool> = (0..50).map(|i| i % 8 == 0).collect();
        agree(&u, None, &[false; 50], &TOLS);
        agree(&u, None, &dead, &TOLS);
        agree(&u, Some(&vec![0.0; 50]), &dead, &TOLS);
        let b: Vec<f64> = (0..50).map(|i| (i % 3) as f64).collect();
        agree(&u, Some(&b), &dead, &TOLS);
        // All rows zero; all dead; d = 0 with biases only.
        agree(&matrix(30, 4, vec![0.0; 120]), None, &[false; 30], &TOLS);
        let u = matrix(30, 4, gaussian(&mut rng, 30, 4, 1.0));
        agree(&u, None, &[true; 30], &TOLS);
        let b: Vec<f64> = (0..30).map(|i| [0.0, 1.0, -2.0, 3.5][i % 4]).collect();
        assert!(agree(&matrix(30, 0, vec![]), Some(&b), &[false; 30], &TOLS) > 0);
        // d = 1: every pair of nonzero rows without biases is proportional.
        let u = matrix(80, 1, gaussian(&mut rng, 80, 1, 1.0));
        let (_, count) =
            proportional_pairs(&u, None, &[false; 80], GenericityCheck::Proportional, 1e-9);
        assert_eq!(count, 80 * 79 / 2);
        agree(&u, None, &[false; 80], &TOLS);
        let b: Vec<f64> = (0..80).map(|_| rng.normal()).collect();
        agree(&u, Some(&b), &[false; 80], &TOLS);
        // Integer rows with many exact coincidences.
        let data: Vec<f64> = (0..200 * 3).map(|_| rng.below(3) as f64 - 1.0).collect();
        agree(&matrix(200, 3, data), None, &[false; 200], &TOLS);
    }

    /// Norms far outside the regular range (squares that underflow,
    /// subnormal, or overflow) are compared with every row directly.
    #[test]
    fn extreme_scales_agree() {
        let mut rng = Rng::new(5);
        let (m, d) = (90, 12);
        let (u, b) = planted(&mut rng, m, d, 20);
        let scales = [
            1.0,
            1e-300,
            1e300,
            1e-160,
            1e160,
            2f64.powi(-1060),
            1e-200,
            1e200,
            0.5,
        ];
        let mut data = u.data().to_vec();
        let mut bias = b.clone();
        for i in 0..m {
            let s = scales[rng.below(scales.len())];
            data[i * d..(i + 1) * d].iter_mut().for_each(|x| *x *= s);
            bias[i] *= s;
        }
        let u = matrix(m, d, data);
        let dead = vec![false; m];
        let (_, _, stats) = proportional_pairs_with_stats(
            &u,
            Some(&bias),
            &dead,
            GenericityCheck::Proportional,
            1e-9,
        );
        assert!(stats.irregular > 0 && stats.regular > 0);
        agree(&u, Some(&bias), &dead, &TOLS);
        agree(&u, None, &dead, &TOLS);
    }

    #[test]
    fn reported_pairs_are_the_first_by_row_then_column() {
        // Blocks of equal rows: more than MAX_REPORTED_PAIRS offending pairs,
        // spread over the index range.
        let mut rng = Rng::new(6);
        let (m, d, groups) = (400, 8, 5);
        let base = gaussian(&mut rng, groups, d, 1.0);
        let data: Vec<f64> = (0..m)
            .flat_map(|i| {
                let g = (i * 7919) % groups;
                base[g * d..(g + 1) * d].to_vec()
            })
            .collect();
        let u = matrix(m, d, data);
        let dead = vec![false; m];
        let want = brute_force(&u, None, &dead, GenericityCheck::Proportional, 1e-9);
        assert!(want.1 > MAX_REPORTED_PAIRS as u64);
        assert_eq!(
            proportional_pairs(&u, None, &dead, GenericityCheck::Proportional, 1e-9),
            want
        );
    }

    #[test]
    fn pairs_do_not_depend_on_the_thread_count() {
        let mut rng = Rng::new(7);
        let (u, b) = planted(&mut rng, 700, 48, 150);
        let dead = vec![false; 700];
        for check in CHECKS {
            for tol in [1e-9, 3.4526698e-4, 3.1e-2] {
                let run = |threads: usize| {
                    crate::limits::on_threads(threads, || {
                        proportional_pairs(&u, Some(&b), &dead, check, tol)
                    })
                };
                let one = run(1);
                assert_eq!(one, run(2));
                assert_eq!(one, run(5));
                assert_eq!(one, brute_force(&u, Some(&b), &dead, check, tol));
            }
        }
    }

    #[test]
    fn the_window_is_narrow_at_float64_tolerances() {
        let mut rng = Rng::new(8);
        let (m, d) = (2000, 64);
        let u = matrix(m, d, gaussian(&mut rng, m, d, 0.125));
        let dead = vec![false; m];
        let (_, count, stats) =
            proportional_pairs_with_stats(&u, None, &dead, GenericityCheck::Proportional, 1.5e-8);
        assert_eq!(count, 0);
        assert_eq!(stats.projections, MIN_PROJECTIONS);
        assert!(stats.in_window < (m * m / 100) as u64, "{stats:?}");
        assert!(stats.decided < m as u64, "{stats:?}");
    }

    /// `cargo test --release -- --ignored --nocapture proportional_pairs_timing`
    #[test]
    #[ignore]
    fn proportional_pairs_timing() {
        let shapes: Vec<(usize, usize)> = match std::env::var("PAIRS_SHAPES") {
            Ok(s) => s
                .split(',')
                .map(|p| {
                    let (a, b) = p.split_once('x').unwrap();
                    (a.parse().unwrap(), b.parse().unwrap())
                })
                .collect(),
            Err(_) => vec![(3072, 768), (16384, 4096)],
        };
        let tols: Vec<f64> = match std::env::var("PAIRS_TOLS") {
            Ok(s) => s.split(',').map(|t| t.parse().unwrap()).collect(),
            Err(_) => vec![1.4901161193847656e-8, 3.4526698e-4],
        };
        for (m, d) in shapes {
            let mut rng = Rng::new(9);
            let u = matrix(m, d, gaussian(&mut rng, m, d, 1.0 / (d as f64).sqrt()));
            let b: Vec<f64> = (0..m).map(|_| rng.normal() * 0.1).collect();
            let dead = vec![false; m];
            for check in CHECKS {
                for &tol in &tols {
                    let t0 = std::time::Instant::now();
                    let (_, count, stats) =
                        proportional_pairs_with_stats(&u, Some(&b), &dead, check, tol);
                    let dt = t0.elapsed().as_secs_f64();
                    println!(
                        "m {m} d {d} {:?} tol {tol:e}: {dt:.3} s, {count} pairs, K {}, radius {:.3e}, window {}, filtered {}, decided {}",
                        check, stats.projections, stats.radius, stats.in_window, stats.filtered, stats.decided
                    );
                }
            }
            if m <= 4096 {
                // The quadratic rule, for comparison.
                let t0 = std::time::Instant::now();
                let (_, count) =
                    brute_force(&u, Some(&b), &dead, GenericityCheck::Proportional, tols[0]);
                println!(
                    "m {m} d {d} quadratic rule: {:.3} s, {count} pairs",
                    t0.elapsed().as_secs_f64()
                );
            }
            if std::env::var("PAIRS_GEMM").is_ok() {
                // One dense GEMM of size d x m x d (U^T U), the anchor.
                let mut c = vec![0.0; d * d];
                let t0 = std::time::Instant::now();
                faer::linalg::matmul::matmul(
                    MatMut::from_row_major_slice_mut(&mut c, d, d),
                    Accum::Replace,
                    MatRef::from_row_major_slice(u.data(), m, d).transpose(),
                    MatRef::from_row_major_slice(u.data(), m, d),
                    1.0,
                    crate::linalg::matrix::par(),
                );
                println!(
                    "m {m} d {d} one GEMM d x m x d: {:.3} s",
                    t0.elapsed().as_secs_f64()
                );
            }
        }
    }
}
