//! Stages 4 and 5 joined: a relaxed solution, from whichever solver found
//! it (the float64 or float32 factor, or conjugate gradients on the Gram
//! matrix), refined against the weights and certified rigorously in
//! float64 (docs/theory.md §5.2, §5.3, §6). Any `Y` is a proof, so the
//! solver's precision decides only how close the proof comes to the
//! least-squares distance, never whether it holds.

use crate::absorption::block::Block;
use crate::absorption::certificates::gram::{gram_certified, gram_inner_products};
use crate::absorption::certificates::{
    self, certificate_within, column_norms_lower, confirmed_distance, interval_bound,
    interval_bound_recurrence, record_bound, IntervalBound,
};
use crate::absorption::relaxation;
use crate::absorption::relaxation::conjugate_gradients::TARGET;
use crate::absorption::verification::exact_flip_residual;
use crate::absorption::{Evidence, Finding, Options, Outcome, Step};
use crate::limits::{Budget, Stop};
use crate::linalg::matrix::Matrix;
use crate::rigor::rounding::{div_up, down, gamma, norm_lower, two_sum, up, TINY};

/// Refinement steps of the relaxed solution (each costs one `O(m d^2)` pass).
pub(crate) const REFINEMENT_STEPS: usize = 3;

/// Largest `m * d_out * d_in` for which the relaxation's residual is
/// recomputed in exact sums when float64 cannot confirm its distance.
pub(crate) const EXACT_RESIDUAL_TERMS: usize = 1 << 25;

/// Smallest `m * d_out * d_in` for which a formed certificate's inner
/// products `<Y, R_i>` come from the Gram matrix (`O(m^2)`, see
/// [`gram_inner_products`]) instead of a second pass over the weights
/// (`O(m d_out d_in)`): at 4096 x 16384 that pass takes 6 to 7 s. Below
/// it the pass is cheap, and its rounding allowance is the tighter.
pub(crate) const GRAM_INNER_TERMS: usize = 1 << 30;

/// The normal equations of the relaxation: the lower triangle of `G`, `h`
/// and `-h` (the inner products of the certificate `Y = A`).
pub(crate) struct Normal<'a> {
    pub(crate) gram: &'a [f64],
    pub(crate) rhs: &'a [f64],
    pub(crate) minus_h: &'a [f64],
}

/// How a candidate solution was found: a solve of `G x = r` for the
/// refinement, and what to record in the outcome when it settles the block.
pub(crate) struct Solver<'a> {
    pub(crate) solve: &'a dyn Fn(&[f64]) -> Vec<f64>,
    pub(crate) record: &'a dyn Fn(&mut Outcome),
}

/// When the refinement of a candidate against the weights stops before
/// its last step (see [`refine_against_weights`]).
#[derive(Clone, Copy)]
pub(crate) enum Refine<'a> {
    /// While the distance falls: a candidate from a factor, its inner
    /// products computed on the weights.
    Converge,
    /// A candidate from the float64 Gram matrix (its lower triangle and
    /// `h`): the inner products come from it on large blocks (see
    /// [`formed_inner_products`]), and no step is taken once the gradient
    /// meets the conjugate gradients' target (see [`gradient_settled`]).
    Gram(&'a [f64], &'a [f64]),
    /// A candidate from the float32 Gram matrix, which cannot serve the
    /// inner products: no step is taken once the certificate settles the
    /// block (it proves a bound above `tol` and confirms the distance), as
    /// a step costs two passes over the weights.
    UntilSettled(f64),
}

impl<'a> Refine<'a> {
    fn normal(self) -> Option<(&'a [f64], &'a [f64])> {
        match self {
            Refine::Gram(gram, h) => Some((gram, h)),
            _ => None,
        }
    }
}

/// The relaxation solved through a float32 factor (`relaxation::
/// float32_solution`) and certified in float64: the finding when that
/// settles the block (the certificate proves a bound above the tolerance
/// and confirms the distance), `None` otherwise, with `out` untouched but
/// for its timings; the float64 factor then takes over from the same Gram
/// matrix.
pub(crate) fn float32_relaxation(
    block: &Block,
    normal: &Normal,
    options: &Options,
    budget: &Budget,
    out: &mut Outcome,
) -> Result<Option<Finding>, Stop> {
    let m = block.width();
    let Some((factor, s0)) = relaxation::float32_solution(normal.gram, m, normal.rhs, budget)?
    else {
        return Ok(None);
    };
    out.lap("float32 factor", budget);
    let solver = Solver {
        solve: &|r| factor.solve(r),
        record: &|out: &mut Outcome| {
            out.relaxation_precision = Some("float32");
            out.rank = Some(factor.rank());
            out.rank_decision = Some(factor.rank_decision());
        },
    };
    settle_from_solution(block, normal, s0, &solver, options, budget, out)
}

/// The relaxation solved by conjugate gradients on the Gram matrix
/// ([`gram_conjugate_gradients`]) and certified in float64, as
/// [`float32_relaxation`] does with its factor: the finding when that
/// settles the block, `None` otherwise (the factors then take over from
/// the same, intact, Gram matrix). No factor means no rank: `rank` stays
/// `None`.
pub(crate) fn conjugate_gradient_relaxation(
    block: &Block,
    normal: &Normal,
    options: &Options,
    budget: &Budget,
    out: &mut Outcome,
) -> Result<Option<Finding>, Stop> {
    let m = block.width();
    let a_norm = block.skip.frobenius_norm();
    let Some(found) = relaxation::conjugate_gradients::relaxed_solution(
        normal.gram,
        m,
        normal.rhs,
        (a_norm * a_norm, (options.tol * a_norm).powi(2)),
        budget,
    )?
    else {
        return Ok(None);
    };
    out.lap("gram conjugate gradients", budget);
    out.method.push(Step::GramConjugateGradients);
    out.gram_cg_steps = found.steps;
    let solver = Solver {
        // A correction that cannot be computed is a zero step: the
        // refinement then stops where it is.
        solve: &|r| {
            relaxation::conjugate_gradients::correction(normal.gram, m, r)
                .unwrap_or_else(|| vec![0.0; m])
        },
        record: &|out: &mut Outcome| out.relaxation_precision = Some("float64"),
    };
    let settled = settle_from_solution(block, normal, found.s, &solver, options, budget, out)?;
    if settled.is_none() {
        // The factor will solve it: the record names that path only.
        out.method.pop();
        out.gram_cg_steps = 0;
    }
    Ok(settled)
}

/// Stage 5 from a candidate `s0` found without the float64 factor: the
/// Gram certificate first when no `Y` is kept, else the formed one, each
/// rigorous in float64. The finding when the bound exceeds the tolerance
/// and confirms the distance; `None` otherwise, with `out` untouched but
/// for its timings.
pub(crate) fn settle_from_solution(
    block: &Block,
    normal: &Normal,
    s0: Vec<f64>,
    solver: &Solver,
    options: &Options,
    budget: &Budget,
    out: &mut Outcome,
) -> Result<Option<Finding>, Stop> {
    let tol = options.tol;
    if !options.keep_certificate {
        let Normal { gram, rhs, minus_h } = *normal;
        if let Some(found) = gram_certified(block, gram, rhs, minus_h, &s0, tol, out) {
            (solver.record)(out);
            out.lap("gram certificate", budget);
            return Ok(Some(found));
        }
    }
    let relaxed = certify_relaxation(
        block,
        normal.minus_h,
        Refine::Gram(normal.gram, normal.rhs),
        s0,
        solver.solve,
        tol,
        budget,
        out,
    )?;
    Ok(record_if_settled(relaxed, tol, solver.record, out))
}

/// The finding of a formed certificate that settles the block (a bound
/// above `tol`, the distance confirmed, no limit reached), recorded in
/// `out` with `record`'s own fields; `None`, with `out` untouched, when it
/// does not.
fn record_if_settled(
    relaxed: Relaxed,
    tol: f64,
    record: &dyn Fn(&mut Outcome),
    out: &mut Outcome,
) -> Option<Finding> {
    if relaxed.refinement_stopped.is_some()
        || relaxed.relaxation_distance.is_none()
        || relaxed.best.bound <= tol
    {
        return None;
    }
    record(out);
    out.method.push(Step::Certificate);
    if relaxed.refined {
        out.method.push(Step::Refinement);
    }
    out.relaxation_distance = relaxed.relaxation_distance;
    record_bound(out, &relaxed.best);
    out.certificate = Some(relaxed.best_y);
    Some(Finding::NoSubset(Evidence::Certificate))
}

/// Stage 4 for a formed certificate when nothing else needs the Gram
/// matrix (no bracket follows): conjugate gradients on a float32 Gram
/// matrix ([`relaxation::gram_lower_f32`]: half the memory and about
/// twice the rate of the float64 one) propose `s`, and the certificate is
/// formed and checked rigorously in float64 on the weights, as for every
/// candidate: its inner products `<Y, R_i>` come from a pass over the
/// weights, since a float32 Gram form would swamp their allowance. The
/// finding when that settles the block; `None` otherwise (a Gram entry
/// beyond float32, steps that cannot serve, or a certificate that does not
/// settle), with `out` untouched but for its timings: the float64 Gram
/// matrix is then built and every later stage runs as before.
pub(crate) fn float32_gram_relaxation(
    block: &Block,
    rhs: &[f64],
    minus_h: &[f64],
    options: &Options,
    budget: &Budget,
    out: &mut Outcome,
) -> Result<Option<Finding>, Stop> {
    let (m, tol) = (block.width(), options.tol);
    let open = |out: &mut Outcome| out.lap("float32 gram left it open", budget);
    let Some(gram) = relaxation::gram_lower_f32(block, budget)? else {
        open(out);
        return Ok(None);
    };
    out.lap("float32 gram", budget);
    let a_norm = block.skip.frobenius_norm();
    let Some(found) = relaxation::conjugate_gradients::relaxed_solution(
        &gram,
        m,
        rhs,
        (a_norm * a_norm, (tol * a_norm).powi(2)),
        budget,
    )?
    else {
        open(out);
        return Ok(None);
    };
    out.lap("gram conjugate gradients", budget);
    let solve = |r: &[f64]| {
        relaxation::conjugate_gradients::correction(&gram, m, r).unwrap_or_else(|| vec![0.0; m])
    };
    let relaxed = certify_relaxation(
        block,
        minus_h,
        Refine::UntilSettled(tol),
        found.s,
        &solve,
        tol,
        budget,
        out,
    )?;
    let record = |out: &mut Outcome| {
        out.method.push(Step::Relaxation);
        out.method.push(Step::GramConjugateGradients);
        out.gram_cg_steps = found.steps;
        out.relaxation_precision = Some("float32");
    };
    let finding = record_if_settled(relaxed, tol, &record, out);
    if finding.is_none() {
        open(out);
    }
    Ok(finding)
}

/// What the relaxation's own certificate proves (stage 5).
pub(crate) struct Relaxed {
    /// The refined least-squares solution.
    pub(crate) s_star: Vec<f64>,
    /// The better of the two certificates (the relaxation's residual and
    /// `Y = A`), and its `Y`.
    pub(crate) best: IntervalBound,
    pub(crate) best_y: Matrix<'static>,
    /// The distance as reported (see [`confirmed_distance`]).
    pub(crate) relaxation_distance: Option<f64>,
    /// A limit reached during the refinement.
    pub(crate) refinement_stopped: Option<Stop>,
    /// Whether a refinement step was taken.
    pub(crate) refined: bool,
}

/// The relaxed solution refined against the weights, with its certificate
/// and the certificate's inner products `<R_i, Y>`.
pub(crate) struct Refined {
    pub(crate) s_star: Vec<f64>,
    pub(crate) cert: certificates::Certificate,
    pub(crate) inner: Vec<f64>,
    /// `Some(scale)` when `inner` came from the Gram matrix: each is then
    /// within `|c| ||v_i|| ||u_i|| scale` of `<Y, R_i>`.
    pub(crate) inner_scale: Option<f64>,
    pub(crate) refined: bool,
    /// A limit reached during the refinement: the last complete
    /// certificate (with its inner products) is kept.
    pub(crate) stopped: Option<Stop>,
}

/// From `s0`, a least-squares solution of `G s = h` by `solve` (a factor of
/// `G`, in either precision), refine against residuals of the weights and
/// check both certificates rigorously in float64: any `Y` is a proof, so
/// the precision of `solve` decides only how close the proof comes to the
/// least-squares distance, never whether it holds.
#[allow(clippy::too_many_arguments)]
pub(crate) fn certify_relaxation(
    block: &Block,
    minus_h: &[f64],
    refine: Refine,
    s0: Vec<f64>,
    solve: &dyn Fn(&[f64]) -> Vec<f64>,
    tol: f64,
    budget: &Budget,
    laps: &mut Outcome,
) -> Result<Relaxed, Stop> {
    let Refined {
        mut s_star,
        mut cert,
        inner,
        inner_scale,
        refined,
        stopped: mut refinement_stopped,
    } = refine_against_weights(block, refine, s0, solve, budget, laps)?;
    // Two certificates, each checked rigorously: the relaxation's residual,
    // and Y = A, whose inner products are -h (already computed).
    let mut relaxed = match inner_scale {
        Some(scale) => interval_bound_recurrence(block, &cert.y, &inner, scale, 1),
        None => interval_bound(block, &cert.y, Some(&inner)),
    };
    laps.lap("interval bound", budget);
    let (d_out, d_in) = block.skip.shape();
    if refinement_stopped.is_none()
        && confirmed_distance(cert.distance, &relaxed, tol).is_none()
        && cert.distance > tol
        && block.width().saturating_mul(d_out * d_in) <= EXACT_RESIDUAL_TERMS
    {
        refinement_stopped = refine_in_extended_precision(
            block,
            &mut s_star,
            solve,
            budget,
            &mut relaxed,
            &mut cert,
        );
    }
    // A refinement cut short by a limit leaves a residual that may be far
    // from the least-squares one: it may still prove the verdict, but it
    // is not reported as the relaxation distance.
    let relaxation_distance = if refinement_stopped.is_none() {
        confirmed_distance(cert.distance, &relaxed, tol)
    } else {
        None
    };
    let skip_cert = interval_bound(block, &block.skip, Some(minus_h));
    let (best, best_y) = if skip_cert.bound > relaxed.bound {
        (skip_cert, block.skip.clone().into_owned())
    } else {
        (relaxed, cert.y)
    };
    Ok(Relaxed {
        s_star,
        best,
        best_y,
        relaxation_distance,
        refinement_stopped,
        refined,
    })
}

/// The normal equations square the condition number, so the solution is
/// refined against residuals computed from the weights themselves
/// (corrected semi-normal equations): `s += G^+ <R_i, Y(s)>`, up to
/// [`REFINEMENT_STEPS`] times, while the distance falls.
pub(crate) fn refine_against_weights(
    block: &Block,
    refine: Refine,
    s0: Vec<f64>,
    solve: &dyn Fn(&[f64]) -> Vec<f64>,
    budget: &Budget,
    laps: &mut Outcome,
) -> Result<Refined, Stop> {
    let normal = refine.normal();
    let mut s_star = s0;
    let mut cert = certificate_within(block, &s_star, budget)?;
    let (mut inner, mut inner_scale) =
        formed_inner_products(block, normal, &cert, &s_star, budget)?;
    laps.lap("solve", budget);
    let mut refined = false;
    // A limit reached during the refinement keeps the last complete
    // certificate (with its inner products): if it proves the answer, the
    // proof is used; otherwise the limit ends the search.
    let mut stopped = None;
    for _ in 0..REFINEMENT_STEPS {
        if let Err(stop) = budget.check() {
            stopped = Some(stop);
            break;
        }
        let settled = match refine {
            Refine::Converge => false,
            Refine::Gram(..) => gradient_settled(&inner, &cert, block),
            Refine::UntilSettled(tol) => {
                let bound = interval_bound(block, &cert.y, Some(&inner));
                bound.bound > tol && confirmed_distance(cert.distance, &bound, tol).is_some()
            }
        };
        if settled {
            break;
        }
        let step = solve(&inner);
        let size = step.iter().fold(0.0f64, |a, x| a.max(x.abs()));
        // The distance moves by the square of the correction (the gradient
        // vanishes at the solution): below 1e-8 relative it cannot change.
        if size <= 1e-8 * s_star.iter().fold(f64::MIN_POSITIVE, |a, x| a.max(x.abs())) {
            break;
        }
        let trial: Vec<f64> = s_star.iter().zip(&step).map(|(s, d)| s + d).collect();
        let trial_cert = match certificate_within(block, &trial, budget) {
            Ok(c) => c,
            Err(stop) => {
                stopped = Some(stop);
                break;
            }
        };
        if trial_cert.distance.partial_cmp(&cert.distance) == Some(std::cmp::Ordering::Greater)
            || !trial_cert.distance.is_finite()
        {
            break;
        }
        let converged = (cert.distance - trial_cert.distance).abs() <= 1e-12 * cert.distance;
        let (trial_inner, trial_scale) =
            match formed_inner_products(block, normal, &trial_cert, &trial, budget) {
                Ok(g) => g,
                Err(stop) => {
                    stopped = Some(stop);
                    break;
                }
            };
        refined = true;
        s_star = trial;
        cert = trial_cert;
        inner = trial_inner;
        inner_scale = trial_scale;
        laps.lap("refinement", budget);
        if converged {
            break;
        }
    }
    Ok(Refined {
        s_star,
        cert,
        inner,
        inner_scale,
        refined,
        stopped,
    })
}

/// Whether a candidate from the Gram matrix (conjugate gradients or the
/// float32 factor) needs no refinement: `sum |<Y, R_i>| <= TARGET ||Y||^2`,
/// the stopping rule of the conjugate gradients. The
/// box bound then lies within that fraction of the distance, and a step
/// could lower the distance by no more, so the correction solve (tens of
/// reads of the Gram matrix, whose step the loop would then find below
/// its threshold) is skipped. Speed only: the bound is rigorous whatever
/// the candidate, and `confirmed_distance` judges what is reported.
fn gradient_settled(inner: &[f64], cert: &certificates::Certificate, block: &Block) -> bool {
    let a_norm = block.skip.frobenius_norm();
    let y_norm = if a_norm == 0.0 {
        cert.distance
    } else {
        cert.distance * a_norm
    };
    let loss: f64 = inner.iter().map(|g| g.abs()).sum();
    loss.is_finite() && y_norm.is_finite() && loss <= TARGET * y_norm * y_norm
}

/// The inner products `<Y, R_i>` of the formed certificate `cert` at `s`,
/// with `None`: computed on the weights (`O(m d_out d_in)`); or, from
/// `normal` (the lower triangle of the Gram matrix and `h`) on blocks of
/// [`GRAM_INNER_TERMS`] or more, as `g_i = h_i - (G s)_i` (`O(m^2)`, see
/// [`gram_inner_products`]) with `Some(scale)`: each `g_i` is within
/// `r_i scale` of `<Y, R_i>`, `r_i = |c| ||v_i|| ||u_i||`, for the interval
/// bound's recurrence form. The scale adds two rigorous terms:
///
/// - `|g^_i - <Y(s), R_i>| <= e_i` for the exact, unformed residual `Y(s)`
///   (see `gram`), so `e_i / r_i`;
/// - `|<Y - Y(s), R_i>| <= ||Y - Y(s)||_F r_i` (Cauchy-Schwarz), where `Y`
///   was formed as `-(A + sum_i W_down[:, i] (c s_i u_i))`: each entry a
///   sum of `m + 1` terms after two roundings of each product's factor, so
///   `|Y - Y(s)| <= gamma(m + 3) (|A| + sum_i |c s_i| |v_i| |u_i|^T)`
///   entrywise (Higham 2002, ch. 3, any order of summation), whose
///   Frobenius norm is at most `gamma(m + 3) (||A||_F + sum_i |s_i| r_i)`,
///   plus `(m + 3)` underflows of at most `TINY (1 + max |W_down|)` per
///   entry. The flip constant's own low part is covered by taking
///   `gamma(m + 6)`.
///
/// Falls back to the weights when the Gram form cannot serve: a value that
/// is not finite, or a neuron (not excluded) whose `r_i` has no positive
/// lower bound.
fn formed_inner_products(
    block: &Block,
    normal: Option<(&[f64], &[f64])>,
    cert: &certificates::Certificate,
    s: &[f64],
    budget: &Budget,
) -> Result<(Vec<f64>, Option<f64>), Stop> {
    let m = block.width();
    let (d_out, d_in) = block.skip.shape();
    let large = m.saturating_mul(d_out).saturating_mul(d_in) >= GRAM_INNER_TERMS;
    if let (true, Some((gram, h))) = (large, normal) {
        if let Some((inner, scale)) = gram_inner_form(block, gram, h, s) {
            return Ok((inner, Some(scale)));
        }
    }
    Ok((block.inner_products_within(&cert.y, budget)?, None))
}

/// The inner products and the `scale` of [`formed_inner_products`]'s Gram
/// form, or `None`.
fn gram_inner_form(block: &Block, gram: &[f64], h: &[f64], s: &[f64]) -> Option<(Vec<f64>, f64)> {
    let m = block.width();
    let (d_out, d_in) = block.skip.shape();
    let gi = gram_inner_products(block, gram, h, s)?;
    // The recurrence form scales by |c| ||v_i|| ||u_i|| with the true
    // norms, so each e_i is divided by a lower bound of that product.
    let c = block.flip_constant.abs();
    let nv = column_norms_lower(&block.w_down);
    let mut per = 0.0f64;
    for (i, (&nv_i, &e_i)) in nv.iter().zip(&gi.e).enumerate() {
        let r_lo = down(c * nv_i * norm_lower(block.w_up.row(i)), 3);
        if r_lo > 0.0 {
            per = per.max(div_up(e_i, r_lo));
        } else if !block.is_excluded(i) {
            // A dead neuron (or one too small to bound): the weights serve.
            return None;
        }
    }
    let v_max = block
        .w_down
        .data()
        .iter()
        .fold(0.0f64, |a, x| a.max(x.abs()));
    let entries = (d_out * d_in) as f64;
    let formed = up(gamma(m + 6) * up(gi.a_up + gi.rho, 1), 2)
        + up(entries * (m + 3) as f64 * TINY * (1.0 + v_max), 3);
    let scale = up(per + formed, 1);
    // g is finite: gram_inner_products checked it.
    scale.is_finite().then_some((gi.g, scale))
}

/// A small distance between large terms: the float64 residual, and float64
/// weights, are too coarse for `Y` to be orthogonal to them. Refine with
/// weights in double-double and residuals summed exactly (iterative
/// refinement in extended precision): `s_star` becomes the high part of
/// the refined solution, and `relaxed` and `cert` keep the sharpest bound
/// found, updated together; the limit that stopped it, if any.
pub(crate) fn refine_in_extended_precision(
    block: &Block,
    s_star: &mut [f64],
    solve: &dyn Fn(&[f64]) -> Vec<f64>,
    budget: &Budget,
    relaxed: &mut IntervalBound,
    cert: &mut certificates::Certificate,
) -> Option<Stop> {
    let mut s_lo = vec![0.0; s_star.len()];
    for _ in 0..3 {
        if let Err(stop) = budget.check() {
            return Some(stop);
        }
        let mut y = exact_flip_residual(block, s_star, &s_lo);
        y.data_mut().iter_mut().for_each(|x| *x = -*x);
        let g = block.inner_products(&y);
        let sharper = interval_bound(block, &y, Some(&g));
        if sharper.bound > relaxed.bound {
            *relaxed = sharper;
            cert.y = y;
        }
        let step = solve(&g);
        for ((hi, lo), d) in s_star.iter_mut().zip(s_lo.iter_mut()).zip(&step) {
            let (s, e) = two_sum(*hi, *lo + d);
            *hi = s;
            *lo = e;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::absorption::block::testing::{least_squares, random_block};
    use crate::absorption::certificates::certificate;

    #[test]
    fn the_gram_inner_products_are_within_their_scale() {
        for (d, m, seed) in [(12, 40, 1), (16, 200, 2), (32, 300, 3), (4, 9, 4)] {
            let block = random_block(m, d, seed);
            let (gram, h, s) = least_squares(&block);
            let c = block.flip_constant.abs();
            for shift in [0.0, 0.01, 0.3] {
                let t: Vec<f64> = s
                    .iter()
                    .enumerate()
                    .map(|(i, x)| x + shift * ((i % 3) as f64 - 1.0))
                    .collect();
                let (g, scale) = gram_inner_form(&block, &gram, &h, &t).expect("it serves");
                let formed = certificate(&block, &t);
                let direct = block.inner_products(&formed.y);
                for i in 0..m {
                    let r = c * norm_lower(block.w_up.row(i)) * {
                        let v: Vec<f64> = (0..d).map(|p| block.w_down.row(p)[i]).collect();
                        norm_lower(&v)
                    };
                    // The direct products carry their own rounding, far
                    // below the scale.
                    assert!(
                        (g[i] - direct[i]).abs() <= r * scale,
                        "d {d} m {m} shift {shift} neuron {i}: {} vs {} (scale {scale:e})",
                        g[i],
                        direct[i]
                    );
                }
                // The allowance stays small: the bound agrees with the one
                // from the direct products to 1e-6 and is never above it by
                // more than their own rounding.
                let recurrence = interval_bound_recurrence(&block, &formed.y, &g, scale, 1);
                let plain = interval_bound(&block, &formed.y, Some(&direct));
                assert!(recurrence.bound <= plain.bound + 2.0 * plain.rounding);
                assert!(
                    recurrence.bound >= plain.bound - 1e-6 * plain.estimate,
                    "{recurrence:?} {plain:?}"
                );
            }
        }
    }

    #[test]
    fn the_gram_serves_the_formed_certificate_on_large_blocks_only() {
        let budget = Budget::unlimited();
        // 40 x 12 x 12: far below the threshold, the weights serve.
        let small = random_block(40, 12, 1);
        let (gram, h, s) = least_squares(&small);
        let cert = certificate(&small, &s);
        let (inner, scale) =
            formed_inner_products(&small, Some((&gram, &h)), &cert, &s, &budget).unwrap();
        assert_eq!(scale, None);
        assert_eq!(inner, small.inner_products(&cert.y));
        // 1024 x 1024 x 1024 = 2^30: the Gram form, with the same verdict
        // and a bound within 1e-6 of the direct one.
        let large = random_block(1024, 1024, 2);
        let (gram, h, s) = least_squares(&large);
        let cert = certificate(&large, &s);
        let (inner, scale) =
            formed_inner_products(&large, Some((&gram, &h)), &cert, &s, &budget).unwrap();
        let scale = scale.expect("the Gram form");
        let via_gram = interval_bound_recurrence(&large, &cert.y, &inner, scale, 1);
        let direct = interval_bound(&large, &cert.y, None);
        assert!(via_gram.bound > 0.0 && direct.bound > 0.0);
        assert!((via_gram.bound - direct.bound).abs() <= 1e-6 * direct.bound);
        // Without the Gram matrix, the weights serve whatever the size.
        let (_, none) = formed_inner_products(&large, None, &cert, &s, &budget).unwrap();
        assert_eq!(none, None);
    }
}
