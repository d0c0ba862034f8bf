//! Stages 2 and 5: the certificate of impossibility.
//!
//! At the relaxed solution `s*`, `Y = T - sum_i s*_i R_i` is orthogonal to
//! every `R_i` and satisfies `<Y, T> = ||Y||^2`, so no real `s`, and so no
//! flip set, gets closer to the target than `||Y||_F` (docs/theory.md
//! §5.2, after Mijoski & Karbevski 2026).
//!
//! Any `Y` proves something, and [`interval_bound`] checks what, trusting
//! nothing about how `Y` was found: for `s` in `{0,1}^m` (indeed in the box
//! `[0,1]^m`) the value `<Y, A + sum_i s_i R_i>` lies in
//! `[<Y,A> + sum of the negative <Y,R_i>, <Y,A> + sum of the positive ones]`.
//! If 0 is outside, its distance to 0 divided by `||Y||_F` bounds
//! `||E_S||_F` from below for every flip set `S`. This is sharper than
//! `<Y,-A> - sum_i |<Y,R_i>|`.
//!
//! The bound is accepted only above a rigorous bound on the rounding of its
//! own evaluation (Higham 2002, ch. 3; see `rounding`): the a-priori bound
//! first, at no extra cost; when that swallows the margin, the inner
//! products are summed exactly with float64 expansions, for blocks small
//! enough to afford it.

pub mod gram;
pub mod krylov;

use rayon::prelude::*;

use crate::absorption::block::{ldexp, Block};
use crate::absorption::{Evidence, Finding, Numerics, Outcome, Step};
use crate::limits::{Budget, Stop};
use crate::linalg::matrix::{column_fold, Matrix};
use crate::rigor::rounding::{
    down, gamma, inverse_scale, norm_upper, unscale_down, unscale_up, unscaled_is_safe, up,
    Expansion, TINY,
};

/// The largest `m * d_out * d_in` for which the certificate check falls
/// back to exact sums (about a second of work).
const EXACT_TERMS: usize = 1 << 27;

pub struct Certificate {
    /// `Y`, shape `(d_out, d_in)`.
    pub y: Matrix<'static>,
    /// `||Y||_F / ||A||_F`, the relaxation distance.
    pub distance: f64,
}

/// The residual of the relaxation at `s_star`.
pub fn certificate(block: &Block, s_star: &[f64]) -> Certificate {
    let mut y = block.residual(s_star);
    for x in y.data_mut() {
        *x = -*x;
    }
    let a_norm = block.skip.frobenius_norm();
    let norm = y.frobenius_norm();
    Certificate {
        distance: if a_norm == 0.0 { norm } else { norm / a_norm },
        y,
    }
}

/// What a candidate certificate proves, relative to `||A||_F`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntervalBound {
    /// Proven: every flip set has `||E_S||_F / ||A||_F >= bound` (0 when
    /// nothing is proved).
    pub bound: f64,
    /// The rounding allowance subtracted from the margin, in the same units.
    pub rounding: f64,
    /// The margin as float64 evaluates it, without the allowance.
    pub estimate: f64,
    /// Whether the inner products were summed exactly.
    pub exact: bool,
}

impl IntervalBound {
    const NOTHING: IntervalBound = IntervalBound {
        bound: 0.0,
        rounding: 0.0,
        estimate: 0.0,
        exact: false,
    };
}

/// How the inner products `<Y, R_i>` handed to the bound were obtained.
enum Inner<'a> {
    /// Not given: computed here, on the scaled `Y`.
    Compute,
    /// Computed directly as `c v_i^T Y u_i` (see [`Block::inner_products`]).
    Direct(&'a [f64]),
    /// Carried by a recurrence (see `krylov`): each is within
    /// `|c| ||v_i|| ||u_i|| scale` of `<Y, R_i>`, plus `steps` underflow
    /// allowances.
    Recurrence {
        g: &'a [f64],
        scale: f64,
        steps: usize,
    },
}

/// The rigorous interval bound proved by `y`. `inner` may hold the
/// `<Y, R_i>` already computed (see [`Block::inner_products`]).
pub fn interval_bound(block: &Block, y: &Matrix, inner: Option<&[f64]>) -> IntervalBound {
    interval_bound_of(block, y, inner.map_or(Inner::Compute, Inner::Direct))
}

/// [`interval_bound`] with inner products carried by a recurrence: `g[i]` is
/// within `|c| ||v_i|| ||u_i|| scale` of `<Y, R_i>` (and `steps` underflow
/// allowances of the products that built it). `scale` must already be an
/// upper bound; the caller derives it step by step (see `krylov`).
pub fn interval_bound_recurrence(
    block: &Block,
    y: &Matrix,
    g: &[f64],
    scale: f64,
    steps: usize,
) -> IntervalBound {
    interval_bound_of(block, y, Inner::Recurrence { g, scale, steps })
}

// Long on purpose: one rigorous bound: every rounding term is derived beside the sum it bounds.
#[allow(clippy::too_many_lines)]
fn interval_bound_of(block: &Block, y: &Matrix, inner: Inner<'_>) -> IntervalBound {
    let m = block.width();
    let (d_out, d_in) = block.skip.shape();
    let y_max = y.data().iter().fold(0.0f64, |a, x| a.max(x.abs()));
    if y_max == 0.0 || !y_max.is_finite() || !block.skip.data().iter().any(|&x| x != 0.0) {
        return IntervalBound::NOTHING;
    }
    // Scale Y by a power of two (exact) so its largest entry is near 1.
    let k = -(y_max.log2().floor() as i32);
    // A copy only when the scale changes anything (not for Y = A = I).
    let scaled;
    let ys = if k == 0 {
        y
    } else {
        let mut copy = y.clone();
        copy.data_mut().iter_mut().for_each(|x| *x = ldexp(*x, k));
        scaled = copy;
        &scaled
    };
    let g: Vec<f64> = match inner {
        Inner::Compute => block.inner_products(ys),
        Inner::Direct(g) | Inner::Recurrence { g, .. } => g.iter().map(|&x| ldexp(x, k)).collect(),
    };
    // Underflow allowances of values computed before the scaling scale with it.
    let tiny = match inner {
        Inner::Compute => TINY,
        _ => ldexp(TINY, k).max(TINY),
    };
    // Y = A itself (the cheap certificate): one set of passes serves both.
    let same = std::ptr::eq(ys.data().as_ptr(), block.skip.data().as_ptr())
        && ys.shape() == block.skip.shape();
    let y_up = norm_upper(ys.data());
    let a_up = if same {
        y_up
    } else {
        norm_upper(block.skip.data())
    };
    let scale = up(y_up * a_up, 1);
    if !(scale.is_finite() && scale > 0.0) || g.iter().any(|x| !x.is_finite()) {
        return IntervalBound::NOTHING;
    }

    // <Y, A> and its a-priori error.
    let n = d_out * d_in;
    let (a_dot, a_mass) = if same {
        // The same terms, in the same order: the same bits.
        let t: f64 = ys.data().iter().map(|y| y * y).sum();
        (t, t)
    } else {
        let dot = ys.data().iter().zip(block.skip.data()).map(|(y, a)| y * a);
        let mass = ys
            .data()
            .iter()
            .zip(block.skip.data())
            .map(|(y, a)| (y * a).abs());
        (dot.sum(), mass.sum())
    };
    let err_a = up(gamma(n + 1) * a_mass, 2) + n as f64 * TINY;
    // Each <Y, R_i> computed directly: |error| <= gamma(d_in + d_out + 5)
    // |c| |v_i|^T |Y| |u_i| (two of the roundings for the flip constant's
    // own), and |v_i|^T |Y| |u_i| <= ||v_i|| ||Y||_F ||u_i|| (Cauchy-Schwarz).
    // By a recurrence: the caller's |c| ||v_i|| ||u_i|| scale.
    let (per, allowance) = match inner {
        Inner::Recurrence { scale, steps, .. } => {
            (up(ldexp(scale, k), 2), (steps + 1) * (d_in + d_out + 10))
        }
        _ => (gamma(d_in + d_out + 5) * y_up, d_in + d_out + 5),
    };
    let c = block.flip_constant.abs();
    let nv = column_norms_upper(&block.w_down);
    // An underflow in a partial product (Y u_i, or c v_i when the block's
    // exponents could not all be balanced) loses up to `tiny` there, and
    // is then multiplied by what follows it: the entries of v_i and c, and
    // for a recurrence those of u_i too. So each neuron's underflow
    // allowance is scaled by `1 + |c| (1 + ||v_i||_1) (1 + ||u_i||_1)`.
    let v1 = column_fold(&block.w_down, 0.0, |a, _, v| a + v.abs());
    // Terms in parallel, summed in neuron order (the same bits for any
    // thread count). Excluded neurons (s_i = 0 in every flip set the bound
    // covers; see `exclusion`) add neither a term nor its error.
    let terms: Vec<f64> = (0..m)
        .into_par_iter()
        .map(|i| {
            if block.is_excluded(i) {
                return 0.0;
            }
            let row = block.w_up.row(i);
            let nu = norm_upper(row);
            let u1: f64 = row.iter().map(|x| x.abs()).sum();
            let amplified = up(1.0 + c * (1.0 + v1[i]) * (1.0 + u1), 5);
            up(c * nv[i] * per * nu, 4) + up(allowance as f64 * tiny * amplified, 2)
        })
        .collect();
    let err_g: f64 = terms.iter().sum();
    if !per.is_finite() {
        return IntervalBound::NOTHING;
    }
    let (neg, pos) = box_sums(block, &g);
    let (lo, hi) = (a_dot + neg, a_dot + pos);
    let err_sum = gamma(m + 2) * (a_dot.abs() + pos - neg);
    let total = up(err_a + up(err_g, m + 1) + err_sum, 4);
    if !total.is_finite() {
        return IntervalBound::NOTHING;
    }
    let margin = lo.max(-hi);
    let estimate = (margin / scale).max(0.0);
    let gap = (lo - total).max(-(hi + total));
    if gap > 0.0 {
        return IntervalBound {
            bound: down(gap / scale, 2).min(block.exclusion_bound()),
            rounding: total / scale,
            estimate,
            exact: false,
        };
    }
    if margin > 0.0 && m * n <= EXACT_TERMS {
        return exact_interval_bound(block, ys, scale, estimate);
    }
    IntervalBound {
        bound: 0.0,
        rounding: total / scale,
        estimate,
        exact: false,
    }
}

/// The sums of the negative and of the positive `<Y, R_i>` over the
/// neurons not excluded (see `exclusion`): the ends of `<Y, sum_i s_i R_i>`
/// over the box, less `<Y, A>`, for the flip sets the bound covers.
pub(crate) fn box_sums(block: &Block, g: &[f64]) -> (f64, f64) {
    let kept = || {
        g.iter()
            .enumerate()
            .filter(|(i, _)| !block.is_excluded(*i))
            .map(|(_, &x)| x)
    };
    (
        kept().filter(|&x| x < 0.0).sum(),
        kept().filter(|&x| x > 0.0).sum(),
    )
}

/// [`interval_bound`] with `<Y, A>` and every `<Y, R_i>` summed exactly.
fn exact_interval_bound(block: &Block, ys: &Matrix, scale: f64, estimate: f64) -> IntervalBound {
    let (d_out, d_in) = block.skip.shape();
    let c = block.flip_constant;
    let inner: Vec<Expansion> = (0..block.width())
        .into_par_iter()
        .map(|i| {
            let ui = block.w_up.row(i);
            let mut acc = Expansion::new();
            if block.is_excluded(i) {
                return acc;
            }
            for p in 0..d_out {
                let v = block.w_down.get(p, i);
                if v == 0.0 {
                    continue;
                }
                for (q, &u) in ui.iter().enumerate().take(d_in) {
                    acc.add_product3(v, ys.get(p, q), u);
                }
            }
            let mut out = if c == 1.0 { acc.clone() } else { acc.scaled(c) };
            if block.flip_constant_lo != 0.0 {
                out.add_expansion(&acc.scaled(block.flip_constant_lo));
            }
            out
        })
        .collect();
    let mut lo = Expansion::new();
    for (y, a) in ys.data().iter().zip(block.skip.data()) {
        lo.add_product(*y, *a);
    }
    let mut hi = lo.clone();
    let mut finite = lo.is_finite();
    for g in &inner {
        finite &= g.is_finite() && g.slack() == 0.0;
        match g.sign() {
            s if s < 0.0 => lo.add_expansion(g),
            s if s > 0.0 => hi.add_expansion(g),
            _ => {}
        }
    }
    let (lo_v, lo_e) = lo.approx();
    let (hi_v, hi_e) = hi.approx();
    let gap = (lo_v - lo_e).max(-(hi_v + hi_e));
    let rounding = (lo_e.max(hi_e)) / scale;
    IntervalBound {
        bound: if finite && gap > 0.0 {
            down(gap / scale, 2).min(block.exclusion_bound())
        } else {
            0.0
        },
        rounding,
        estimate,
        exact: true,
    }
}

/// Upper bounds on the Euclidean norms of the columns of `w`, read row by
/// row (each column scaled by a power of two near its largest entry).
pub fn column_norms_upper(w: &Matrix) -> Vec<f64> {
    let rows = w.rows();
    let (sum, scale, big) = column_scaled_squares(w);
    sum.iter()
        .zip(&scale)
        .zip(&big)
        .map(|((&t, &s), &b)| {
            if b == 0.0 || !b.is_finite() {
                return b;
            }
            let root = (t * (1.0 + gamma(rows + 2)) + rows as f64 * TINY).sqrt();
            unscale_up(up(root, 2), s)
        })
        .collect()
}

/// Lower bounds on the Euclidean norms of the columns of `w`, read row by
/// row and scaled as [`column_norms_upper`] scales them: each square and
/// the sum round down by at most `gamma(rows + 2)`, each square that
/// underflows loses at most `TINY`, and the root rounds once more. 0 for a
/// zero column, or one with an entry that is not finite.
pub fn column_norms_lower(w: &Matrix) -> Vec<f64> {
    let rows = w.rows();
    let (sum, scale, big) = column_scaled_squares(w);
    sum.iter()
        .zip(&scale)
        .zip(&big)
        .map(|((&t, &s), &b)| {
            if b == 0.0 || !b.is_finite() || !t.is_finite() {
                return 0.0;
            }
            let sq = (down(t, rows + 2) - rows as f64 * TINY).max(0.0);
            unscale_down(down(sq.sqrt(), 2), s)
        })
        .collect()
}

/// Per column of `w`: its sum of squares after scaling by a power of two,
/// that power, and its largest `|entry|`. The scale is 1 for every column
/// when no plain square can overflow or lose more than the `TINY`
/// allowance (one pass); otherwise each column is scaled near its largest
/// entry ([`inverse_scale`]) in a second pass.
fn column_scaled_squares(w: &Matrix) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (plain, big) = column_squares_and_max(w);
    let safe = |(t, b): (&f64, &f64)| t.is_finite() && (*b == 0.0 || unscaled_is_safe(*b));
    if plain.iter().zip(&big).all(safe) {
        let ones = vec![1.0; plain.len()];
        return (plain, ones, big);
    }
    let scale: Vec<f64> = big
        .iter()
        .map(|&b| {
            if b > 0.0 && b.is_finite() {
                inverse_scale(b)
            } else {
                1.0
            }
        })
        .collect();
    let sum = column_fold(w, 0.0, |acc, j, x| {
        let y = x * scale[j];
        acc + y * y
    });
    (sum, scale, big)
}

/// Per column: the sum of squares (rows in order) and the largest
/// `|entry|`, in one parallel pass over the rows.
fn column_squares_and_max(w: &Matrix) -> (Vec<f64>, Vec<f64>) {
    const COLUMNS: usize = 2048;
    let (rows, cols) = w.shape();
    let mut sum = vec![0.0f64; cols];
    let mut big = vec![0.0f64; cols];
    sum.par_chunks_mut(COLUMNS)
        .zip(big.par_chunks_mut(COLUMNS))
        .enumerate()
        .for_each(|(b, (s, m))| {
            let j0 = b * COLUMNS;
            for p in 0..rows {
                let row = &w.row(p)[j0..j0 + s.len()];
                for ((si, mi), &x) in s.iter_mut().zip(m.iter_mut()).zip(row) {
                    *si += x * x;
                    *mi = mi.max(x.abs());
                }
            }
        });
    (sum, big)
}

/// The rigorous lower bound proved by `y` alone (see [`interval_bound`]).
pub fn lower_bound(block: &Block, y: &Matrix) -> f64 {
    interval_bound(block, y, None).bound
}

/// The Gram matrix overflowed: on the exact path (which skipped the cheap
/// certificates) the certificate `Y = A` may still prove impossibility,
/// since it needs no Gram matrix; otherwise the overflow is the answer.
pub(crate) fn overflow_unless_skip_certifies(
    block: &Block,
    minus_h: &[f64],
    tol: f64,
    exact: bool,
    out: &mut Outcome,
) -> Finding {
    if exact {
        out.method.push(Step::SkipCertificate);
        let skip_cert = interval_bound(block, &block.skip, Some(minus_h));
        if skip_cert.bound > tol {
            out.distance_bound = Some(skip_cert.bound);
            out.rounding_bound = Some(skip_cert.rounding);
            out.certificate = Some(block.skip.clone().into_owned());
            return Finding::NoSubset(Evidence::Certificate);
        }
    }
    Finding::Inconclusive(Numerics::Overflow)
}

/// The relaxation distance as reported: the rigorous bound `relaxed` proved
/// by the relaxation's own residual `Y`, when it confirms the float64
/// `estimate` (they differ by no more than twice the rounding allowance, or
/// 1e-6 relative), or when the estimate is within the tolerance (then the
/// bound, often 0, is all that holds); `None` when float64 cannot resolve
/// it, which includes a rounding allowance above both the tolerance and
/// 1e-6 of the estimate (terms so large that the bound is 0 whatever the
/// distance: the two then "agree" only by proving nothing). So it never
/// exceeds the residual of any flip set, and it is never a 0 that stands
/// for "unknown".
pub fn confirmed_distance(estimate: f64, relaxed: &IntervalBound, tol: f64) -> Option<f64> {
    // False for a NaN allowance too.
    let resolved = 2.0 * relaxed.rounding <= (1e-6 * estimate).max(tol);
    if !estimate.is_finite() || !resolved {
        return None;
    }
    let slack = (2.0 * relaxed.rounding).max(1e-6 * estimate);
    let bound = relaxed.bound;
    (bound >= estimate - slack || estimate <= tol).then_some(bound.min(estimate))
}

/// The relaxation's residual certificate at `s` (see
/// [`certificates::certificate`]), its GEMMs polling `budget`.
pub(crate) fn certificate_within(
    block: &Block,
    s: &[f64],
    budget: &Budget,
) -> Result<Certificate, Stop> {
    let mut y = block.residual_within(s, budget)?;
    y.data_mut().iter_mut().for_each(|x| *x = -*x);
    let a_norm = block.skip.frobenius_norm();
    let norm = y.frobenius_norm();
    Ok(Certificate {
        distance: if a_norm == 0.0 { norm } else { norm / a_norm },
        y,
    })
}

/// Raise `distance_bound` (and its rounding) to what `bound` proved.
pub(crate) fn record_bound(out: &mut Outcome, bound: &IntervalBound) {
    if out.distance_bound.is_none_or(|b| bound.bound >= b) {
        out.distance_bound = Some(bound.bound);
        out.rounding_bound = Some(bound.rounding);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rigor::rounding::norm_lower;

    #[test]
    fn one_pass_and_rescaled_column_norms_both_bound_the_norm() {
        // Columns near 1 take the one-pass plain squares; a column near
        // 2^-600 or 2^600 sends the whole matrix through the rescaled pass.
        let mut next = crate::linalg::matrix::testing::uniform(41);
        let (rows, cols) = (300, 5);
        for scale in [1.0, f64::powi(2.0, -600), f64::powi(2.0, 600)] {
            let mut data: Vec<f64> = (0..rows * cols).map(|_| next()).collect();
            for p in 0..rows {
                data[p * cols + 4] *= scale;
            }
            let w = Matrix::from_vec("W", rows, cols, data.clone()).unwrap();
            let bounds = column_norms_upper(&w);
            for (j, b) in bounds.iter().enumerate() {
                let col: Vec<f64> = (0..rows).map(|p| data[p * cols + j]).collect();
                let lower = norm_lower(&col);
                let norm = crate::linalg::matrix::scaled_norm(&col);
                assert!(*b >= norm && *b >= lower, "{j}: {b:e} < {norm:e}");
                assert!(*b <= norm * (1.0 + 1e-12), "{j}: {b:e} far above {norm:e}");
            }
        }
    }

    #[test]
    fn column_norms_bracket_each_column() {
        let w = Matrix::from_vec(
            "W",
            3,
            3,
            vec![3.0, 0.0, 1e-300, 4.0, 0.0, -1e-300, 12.0, 0.0, 0.0],
        )
        .unwrap();
        let n = column_norms_upper(&w);
        let t = w.transpose();
        for (i, &x) in n.iter().enumerate() {
            assert!(x >= norm_lower(t.row(i)) && x <= norm_upper(t.row(i)) * (1.0 + 1e-12));
        }
        assert_eq!(n[1], 0.0);
        assert!(n[0] >= 13.0 && n[0] < 13.0 * (1.0 + 1e-14));
    }

    #[test]
    fn column_lower_bounds_see_columns_whose_squares_overflow_or_underflow() {
        // Columns of norm 13e300 (squares overflow), 13e-300 (squares
        // underflow), 13 and 0: the lower bound is within a few ulps of
        // the norm for each nonzero one, never above it, and 0 for zero.
        let w = Matrix::from_vec(
            "W",
            3,
            4,
            vec![
                3e300, 3e-300, 3.0, 0.0, 4e300, -4e-300, 4.0, 0.0, 12e300, 12e-300, 12.0, 0.0,
            ],
        )
        .unwrap();
        let (lo, hi) = (column_norms_lower(&w), column_norms_upper(&w));
        for (j, norm) in [13e300, 13e-300, 13.0].into_iter().enumerate() {
            assert!(
                lo[j] <= norm && lo[j] > norm * (1.0 - 1e-14),
                "{j}: {}",
                lo[j]
            );
            assert!(
                hi[j] >= norm && hi[j] < norm * (1.0 + 1e-14),
                "{j}: {}",
                hi[j]
            );
        }
        assert_eq!((lo[3], hi[3]), (0.0, 0.0));
    }

    #[test]
    fn interval_form_is_sharper_than_subtracting_every_inner_product() {
        // One neuron R_0 = e_0 e_0^T with A = I_2 and Y = A: <Y, A> = 2 and
        // <Y, R_0> = 1 > 0, so <Y, E_S> lies in [2, 3] for every flip set:
        // the bound is 2 / (sqrt 2 sqrt 2) = 1, where <Y,A> - |<Y,R_0>|
        // would give only 1/2.
        let block = Block::new(
            Matrix::from_vec("W_up", 1, 2, vec![1.0, 0.0]).unwrap(),
            Matrix::from_vec("W_down", 2, 1, vec![1.0, 0.0]).unwrap(),
            None,
            Matrix::identity(2),
            1.0,
        )
        .unwrap();
        let b = interval_bound(&block, &Matrix::identity(2), None);
        assert!(b.bound > 1.0 - 1e-14 && b.bound <= 1.0, "{b:?}");
        assert!(b.rounding > 0.0 && b.rounding < 1e-14);
    }
}
