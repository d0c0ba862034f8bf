//! Stage 8: the flip condition evaluated on the original weights, with a
//! rigorous bound. Every subset the core reports passes through here, and
//! the certificate is the same quantity at the relaxed solution.
//!
//! The residual of a flip set `S` is `E = A + c W_down[:, S] W_up[S, :]`.
//! Evaluated in float64 it can lose everything to cancellation: with large
//! neurons that nearly cancel in pairs, a true residual hundreds of times
//! the tolerance can round to 0.0. [`residual_bounds`] therefore brackets
//! `||E||_F / ||A||_F`: first by the float64 value and the a-priori bound
//! `gamma(|S| + 4) (|A| + |c| |W_down[:, S]| |W_up[S, :]|)` on each entry's
//! error (Higham 2002, ch. 3), which costs one more pass; only when that
//! bracket straddles the tolerance is every entry summed exactly with
//! float64 expansions (see `rounding`).

use rayon::prelude::*;

use crate::absorption::block::Block;
use crate::absorption::Outcome;
use crate::linalg::matrix::{axpy, Matrix};
use crate::rigor::rounding::{
    div_down, div_up, gamma, norm_lower, norm_upper, up, Expansion, TINY,
};

const OUT_ROWS: usize = 8;

/// `E(s) = A + c * W_down diag(s) W_up`, shape `(d_out, d_in)`.
///
/// The flip set `S` absorbs the skip exactly when `E(1_S) = 0`
/// (Mijoski & Karbevski 2026, the flip construction). Output rows are
/// computed in groups so that each `u_i` is read once per group.
pub fn flip_residual(block: &Block, weights: &[f64]) -> Matrix<'static> {
    flip_residual_with(block, weights, false)
}

/// [`flip_residual`], or with `magnitude` the matrix
/// `|A| + sum_i |c s_i| |v_i| |u_i|^T` that bounds each entry's rounding.
fn flip_residual_with(block: &Block, weights: &[f64], magnitude: bool) -> Matrix<'static> {
    let (d_out, d_in) = block.skip.shape();
    let c = block.flip_constant;
    let u = &block.w_up;
    let wd = &block.w_down;
    let mut e = block.skip.clone().into_owned();
    if magnitude {
        e.data_mut().iter_mut().for_each(|x| *x = x.abs());
    }
    if d_in == 0 {
        return e;
    }
    let active: Vec<usize> = (0..weights.len()).filter(|&i| weights[i] != 0.0).collect();
    e.data_mut()
        .par_chunks_mut(OUT_ROWS * d_in)
        .enumerate()
        .for_each(|(blk, chunk)| {
            let p0 = blk * OUT_ROWS;
            let rows = chunk.len() / d_in;
            let mut abs_row = vec![0.0; d_in];
            for &i in &active {
                let ui = u.row(i);
                if magnitude {
                    abs_row.iter_mut().zip(ui).for_each(|(a, x)| *a = x.abs());
                }
                for r in 0..rows {
                    let coef = c * weights[i] * wd.get(p0 + r, i);
                    if coef != 0.0 {
                        let out = &mut chunk[r * d_in..(r + 1) * d_in];
                        if magnitude {
                            axpy(out, coef.abs(), &abs_row);
                        } else {
                            axpy(out, coef, ui);
                        }
                    }
                }
            }
        });
    debug_assert_eq!(e.rows(), d_out);
    e
}

/// Every entry of `A + sum (hi_i + lo_i) v_i u_i^T` over `weights = (i, hi_i,
/// lo_i)`, summed exactly as an expansion.
fn exact_entries(block: &Block, weights: &[(usize, f64, f64)]) -> Vec<Expansion> {
    let (d_out, d_in) = block.skip.shape();
    (0..d_out * d_in)
        .into_par_iter()
        .map(|k| {
            let (p, q) = (k / d_in, k % d_in);
            let mut acc = Expansion::new();
            acc.add(block.skip.get(p, q));
            for &(i, hi, lo) in weights {
                let (v, u) = (block.w_down.get(p, i), block.w_up.get(i, q));
                if hi == 1.0 {
                    acc.add_product(v, u);
                } else {
                    acc.add_product3(hi, v, u);
                }
                if lo != 0.0 {
                    acc.add_product3(lo, v, u);
                }
            }
            acc
        })
        .collect()
}

/// `A + c sum_i (s_i + t_i) v_i u_i^T`, the weights given in double-double
/// (`s` and a low part `t`), every entry summed exactly and rounded once:
/// the residual to float64 accuracy however much its terms cancel, so a
/// certificate built from it is orthogonal to the terms to the rounding of
/// `Y` itself, not of the terms or of the weights.
pub fn exact_flip_residual(block: &Block, s: &[f64], t: &[f64]) -> Matrix<'static> {
    let (d_out, d_in) = block.skip.shape();
    let c = block.flip_constant;
    // c (s_i + t_i) = p + (e + c t_i) with c s_i = p + e exactly; the last
    // product's rounding is of order eps^2 |s_i|.
    let w: Vec<(usize, f64, f64)> = s
        .iter()
        .zip(t)
        .enumerate()
        .filter(|(_, (&hi, &lo))| hi != 0.0 || lo != 0.0)
        .map(|(i, (&hi, &lo))| {
            let (p, e) = crate::rigor::rounding::two_prod(c, hi);
            (i, p, e + c * lo)
        })
        .collect();
    let data: Vec<f64> = exact_entries(block, &w)
        .iter()
        .map(|e| e.approx().0)
        .collect();
    Matrix::from_vec("E", d_out, d_in, data).expect("shape matches the skip")
}

impl ResidualBounds {
    /// Whether the flip set is within `tol`: `Some(true)` or `Some(false)`
    /// when the bracket (or the exact squares) settle it, `None` otherwise.
    pub fn within_tolerance(&self, tol: f64) -> Option<bool> {
        if self.upper <= tol {
            Some(true)
        } else if self.lower > tol {
            Some(false)
        } else {
            self.within
        }
    }
}

/// A rigorous bracket on the relative residual `||E(1_S)||_F / ||A||_F` of a
/// flip set, and the float64 estimate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResidualBounds {
    /// The float64 value (from the exact sums when they ran).
    pub estimate: f64,
    /// The true relative residual is at least this.
    pub lower: f64,
    /// The true relative residual is at most this.
    pub upper: f64,
    /// Whether every entry was summed exactly.
    pub exact: bool,
    /// When the bracket straddles the tolerance: `||E||_F^2 <= tol^2
    /// ||A||_F^2` decided in exact arithmetic (`None` if underflow or
    /// overflow leaves it open).
    pub within: Option<bool>,
}

/// Bracket the relative residual of `subset`; `tol` decides whether the
/// exact sums are needed (only when the a-priori bracket straddles it).
pub fn residual_bounds(block: &Block, subset: &[usize], tol: f64) -> ResidualBounds {
    let mut weights = vec![0.0; block.width()];
    for &i in subset {
        weights[i] = 1.0;
    }
    let a_up = norm_upper(block.skip.data());
    let a_low = norm_lower(block.skip.data());
    let zero_skip = block.skip.data().iter().all(|&x| x == 0.0);
    let relative = |e_up: f64, e_low: f64| -> (f64, f64) {
        if zero_skip {
            // Zero skip: absolute residual.
            (e_low, e_up)
        } else if a_low == 0.0 {
            // A skip too small for its norm's lower bound to be positive.
            (
                div_down(e_low, a_up),
                if e_up == 0.0 { 0.0 } else { f64::INFINITY },
            )
        } else {
            // Rounded up past a subnormal quotient too; exactly 0 only when
            // the residual's upper bound is (every entry summed to exactly 0).
            (div_down(e_low, a_up), div_up(e_up, a_low))
        }
    };
    let e = flip_residual_with(block, &weights, false);
    let mag = flip_residual_with(block, &weights, true);
    // Each entry: |S| products with c (two roundings each) and |S| + 1 sums.
    // One more for the flip constant's own rounding.
    let g = gamma(2 * subset.len() + 6);
    // An underflow in a coefficient c v_pi (up to TINY) is multiplied by the
    // entries of u_i that follow it.
    let u_max = subset
        .iter()
        .flat_map(|&i| block.w_up.row(i))
        .fold(1.0f64, |a, x| a.max(x.abs()));
    let err: Vec<f64> = mag
        .data()
        .iter()
        .map(|t| g * t + up((subset.len() + 2) as f64 * TINY * u_max, 2))
        .collect();
    let e_norm = norm_upper(e.data());
    let err_norm = norm_upper(&err);
    let estimate = e.frobenius_norm() / if a_low == 0.0 { 1.0 } else { a_low };
    let (lower, upper) = relative(
        up(e_norm + err_norm, 1),
        (norm_lower(e.data()) - err_norm).max(0.0),
    );
    let all_finite = e.data().iter().chain(mag.data()).all(|x| x.is_finite());
    if all_finite && (upper <= tol || lower > tol) {
        return ResidualBounds {
            estimate,
            lower,
            upper,
            exact: false,
            within: None,
        };
    }
    exact_bounds(
        block,
        subset,
        tol,
        relative,
        all_finite.then_some((lower, upper)),
        estimate,
    )
}

/// Every entry of `E(1_S)` summed exactly with expansions.
fn exact_bounds(
    block: &Block,
    subset: &[usize],
    tol: f64,
    relative: impl Fn(f64, f64) -> (f64, f64),
    apriori: Option<(f64, f64)>,
    estimate: f64,
) -> ResidualBounds {
    let (c, c_lo) = (block.flip_constant, block.flip_constant_lo);
    let weights: Vec<(usize, f64, f64)> = subset.iter().map(|&i| (i, c, c_lo)).collect();
    let entries = exact_entries(block, &weights);
    if entries.iter().any(|e| !e.is_finite()) {
        // Overflow even in the exact sums: nothing better than a-priori.
        let (lower, upper) = apriori.unwrap_or((0.0, f64::INFINITY));
        return ResidualBounds {
            estimate,
            lower,
            upper,
            exact: false,
            within: None,
        };
    }
    let lows: Vec<f64> = entries.iter().map(|e| e.abs_lower()).collect();
    let ups: Vec<f64> = entries.iter().map(|e| e.abs_upper()).collect();
    let (lower, upper) = relative(norm_upper(&ups), norm_lower(&lows));
    let within = (lower <= tol && tol < upper)
        .then(|| squares_within(block, &entries, tol))
        .flatten();
    ResidualBounds {
        estimate: 0.5 * (lower + upper),
        lower,
        upper,
        exact: true,
        within,
    }
}

/// `sum E_pq^2 <= tol^2 sum A_pq^2`, decided exactly on the expansions of
/// the entries; `None` when a product underflowed or overflowed.
fn squares_within(block: &Block, entries: &[Expansion], tol: f64) -> Option<bool> {
    let mut diff = Expansion::new();
    for e in entries {
        diff.add_expansion(&e.mul(e));
    }
    let mut a_sq = Expansion::new();
    for &a in block.skip.data() {
        a_sq.add_product(a, a);
    }
    let mut t = Expansion::new();
    t.add_product(tol, tol);
    diff.add_expansion(&a_sq.mul(&t).neg());
    (diff.is_finite() && diff.slack() == 0.0).then(|| diff.sign() <= 0.0)
}

/// Verify `subset` rigorously and record its residual bracket; `Some(true)`
/// when it is within the tolerance, `Some(false)` when provably not, `None`
/// when the bracket straddles it.
pub(crate) fn verify(block: &Block, subset: &[usize], tol: f64, out: &mut Outcome) -> Option<bool> {
    let b = residual_bounds(block, subset, tol);
    out.candidates += 1;
    out.residual = Some(b.upper);
    out.residual_lower = Some(b.lower);
    out.residual_exact = b.exact;
    let within = b.within_tolerance(tol);
    if within == Some(true) && b.upper > tol {
        // On the tolerance to rounding, settled by exact squares.
        out.residual = Some(tol);
    }
    within
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_residual_exactly_at_the_tolerance_is_decided_by_exact_squares() {
        // E = 1 - (1 - 2^-30) = 2^-30 exactly, and ||A|| = 1.
        let t = 2f64.powi(-30);
        let w_up = Matrix::from_vec("W_up", 1, 1, vec![1.0 - t]).unwrap();
        let w_down = Matrix::from_vec("W_down", 1, 1, vec![-1.0]).unwrap();
        let block = Block::new(w_up, w_down, None, Matrix::identity(1), 1.0).unwrap();
        let at = residual_bounds(&block, &[0], t);
        assert!(at.lower <= t && t < at.upper, "{at:?}");
        assert_eq!(at.within, Some(true));
        let below = residual_bounds(&block, &[0], t * (1.0 - f64::EPSILON));
        assert_eq!(below.within, Some(false));
    }

    #[test]
    fn cancelling_pair_keeps_its_true_residual() {
        // Two neurons of size 3 * 2^26 whose rank-one terms cancel to
        // within 3 * 2^-26: float64 rounds their product, and the a-priori
        // bracket straddles the tolerance, so the exact sums decide.
        let big = 3.0 * 2f64.powi(26);
        let w_up = Matrix::from_vec("W_up", 3, 1, vec![1.0 + 2f64.powi(-52), 1.0, 1.0]).unwrap();
        let w_down = Matrix::from_vec("W_down", 1, 3, vec![big, -big, -1.0]).unwrap();
        let block = Block::new(w_up, w_down, None, Matrix::identity(1), 1.0).unwrap();
        let b = residual_bounds(&block, &[0, 1, 2], 1e-12);
        let truth = 3.0 * 2f64.powi(-26);
        assert!(b.exact);
        assert!(b.lower <= truth && truth <= b.upper, "{b:?}");
        assert!(b.upper < 1.01 * truth);
        // The planted flip set {2} alone is exactly -A: the a-priori bracket
        // settles it without exact sums.
        let exact = residual_bounds(&block, &[2], 1e-12);
        assert!(!exact.exact && exact.lower == 0.0 && exact.upper < 1e-14);
    }
}
