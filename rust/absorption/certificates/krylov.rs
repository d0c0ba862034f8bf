//! Stage 2's cheap certificates: conjugate gradients on the normal
//! equations, matrix-free (docs/theory.md §5.3).
//!
//! A certificate needs only some `Y` whose interval bound (see
//! `certificate`) exceeds the tolerance, not the least-squares solution
//! itself. Jacobi-preconditioned conjugate gradients on `G s = h` approach
//! that solution without forming the `m x m` Gram matrix: the product
//! `G p` is `c v_i^T M u_i` with `M = c W_down diag(p) W_up`, two GEMMs of
//! size `d x m x d` (`O(m d^2)`, against `O(m^2 d)` for the Gram matrix).
//! The residual `E(s) = A + c W_down diag(s) W_up` is kept alongside, and
//! after each step it is tried as `Y`: first by the float64 margin the
//! recurrence predicts, then, when that clears the tolerance, by the
//! rigorous interval bound.
//!
//! The inner products `<E, R_i>` that bound needs come from the recurrence
//! `g <- g + alpha <M, R_i>` rather than from a third GEMM. Their error is
//! carried along in units of `|c| ||v_i|| ||u_i||` (Cauchy-Schwarz, as in
//! `certificate`): `h` starts within `gamma(n+5) ||A||_F`; each step adds
//! `|alpha| gamma(n+5) ||M||_F` for the GEMM behind `<M, R_i>`,
//! `2u (||E||_F + |alpha| ||M||_F)` for rounding `E + alpha M` into the
//! stored `E`, and `gamma(2)` of the magnitudes for the update itself
//! (Higham 2002, ch. 3; `n = d_in + d_out`). So every proof is about the
//! float matrix `E` that is returned as the certificate.
//!
//! A step's two GEMMs poll the limits between tiles (see
//! `matrix::gemm_polled`), so a limit or a cancel ends the stage within one
//! tile. A step that completed is always evaluated: when it proves the
//! answer the proof is kept, whatever the clock says by then.

use crate::absorption::block::Block;
use crate::absorption::certificates::{interval_bound_recurrence, IntervalBound};
use crate::absorption::{Evidence, Finding, Outcome, Step};
use crate::limits::{Budget, Stop};
use crate::linalg::matrix::{dot, Matrix};
use crate::rigor::rounding::{gamma, norm_upper, up, UNIT};

/// Conjugate-gradient steps tried before the exact path takes over.
pub const MAX_STEPS: usize = 12;

/// What the conjugate-gradient stage proved.
pub struct Krylov {
    /// The best rigorous bound found, with its `Y` (`None` when no step's
    /// margin reached the tolerance in float64).
    pub best: Option<(IntervalBound, Matrix<'static>)>,
    /// Steps taken.
    pub steps: usize,
    /// The limit that ended the stage before a step proved the bound
    /// (`best` keeps what the completed steps proved).
    pub stopped: Option<Stop>,
}

/// The float64 interval margin of `Y = e` with inner products `g`,
/// relative to `||e||_F ||A||_F` (a prediction, not a proof).
fn predicted(block: &Block, e: &Matrix, g: &[f64], a_norm: f64) -> f64 {
    let a_dot = dot(e.data(), block.skip.data());
    let neg: f64 = g.iter().filter(|&&x| x < 0.0).sum();
    let pos: f64 = g.iter().filter(|&&x| x > 0.0).sum();
    let margin = (a_dot + neg).max(-(a_dot + pos));
    let scale = e.frobenius_norm() * a_norm;
    if scale > 0.0 && margin.is_finite() {
        (margin / scale).max(0.0)
    } else {
        0.0
    }
}

/// Run up to `max_steps` Jacobi-preconditioned conjugate-gradient steps
/// from `s = 0` and stop at the first `Y` that proves a bound above `tol`.
/// `rhs` is `h = <R_i, -A>`. A limit reached during a step ends the stage
/// with `stopped` set; the steps completed before it keep their `best`.
pub fn certify(block: &Block, rhs: &[f64], tol: f64, max_steps: usize, budget: &Budget) -> Krylov {
    let mut out = Krylov {
        best: None,
        steps: 0,
        stopped: None,
    };
    if let Err(stop) = steps(block, rhs, tol, max_steps, budget, &mut out) {
        out.stopped = Some(stop);
    }
    out
}

/// The steps of [`certify`], recording into `out`; `Err` when a limit
/// stopped a step before it completed.
fn steps(
    block: &Block,
    rhs: &[f64],
    tol: f64,
    max_steps: usize,
    budget: &Budget,
    out: &mut Krylov,
) -> Result<(), Stop> {
    // The set-up below reads and copies `A` (0.1 s at d = 4000): not when
    // the time is already up.
    budget.check()?;
    let a_norm = block.skip.frobenius_norm();
    let diag = block.gram_diagonal();
    let precondition = |r: &[f64]| -> Vec<f64> {
        r.iter()
            .zip(&diag)
            .map(|(x, d)| if *d > 0.0 { x / d } else { 0.0 })
            .collect()
    };
    // s = 0: E = A, and the normal-equations residual r = h - G s = h.
    let (d_out, d_in) = block.skip.shape();
    let gn = gamma(d_in + d_out + 5);
    let u2 = 2.0 * UNIT * (1.0 + UNIT);
    let mut e = block.skip.clone().into_owned();
    let mut r = rhs.to_vec();
    // |(-r_i) - <E, R_i>| <= |c| ||v_i|| ||u_i|| err.
    let mut err = up(gn * norm_upper(e.data()), 2);
    let mut z = precondition(&r);
    let mut p = z.clone();
    let mut rz = dot(&r, &z);
    let mut last = 0.0f64;
    for _ in 0..max_steps {
        budget.check()?;
        if !(rz.is_finite() && rz > 0.0) {
            break;
        }
        let mut mp = Matrix::zeros(e.rows(), e.cols());
        block.add_combination_within(&mut mp, &p, budget)?;
        let w = block.inner_products_within(&mp, budget)?;
        let pw = dot(&p, &w);
        let alpha = rz / pw;
        if !(alpha.is_finite() && pw > 0.0) {
            break;
        }
        out.steps += 1;
        let (n_e, n_m) = (norm_upper(e.data()), norm_upper(mp.data()));
        let a_m = up(alpha.abs() * n_m, 1);
        err = up(
            err + up(gn * a_m, 1)
                + up(u2 * (n_e + a_m), 2)
                + up(gamma(2) * (n_e + err + up(a_m * (1.0 + gn), 1)), 2),
            4,
        );
        for (x, y) in e.data_mut().iter_mut().zip(mp.data()) {
            *x += alpha * y;
        }
        for (ri, wi) in r.iter_mut().zip(&w) {
            *ri -= alpha * wi;
        }
        // <E(s), R_i> = -(h - G s)_i = -r_i.
        let g: Vec<f64> = r.iter().map(|x| -x).collect();
        let guess = predicted(block, &e, &g, a_norm);
        if guess > tol {
            // No limit check here: the step is complete, and its bound
            // (O(m d + d_out d_in)) is what the step was for.
            let proved = interval_bound_recurrence(block, &e, &g, err, out.steps);
            let better = out
                .best
                .as_ref()
                .is_none_or(|(b, _)| proved.bound > b.bound);
            if better {
                out.best = Some((proved, e.clone()));
            }
            if proved.bound > tol {
                return Ok(());
            }
        }
        // Stagnation: the predicted margin no longer moves.
        if out.steps > 2 && (guess - last).abs() <= 1e-3 * guess.max(tol) {
            break;
        }
        last = guess;
        z = precondition(&r);
        let rz_new = dot(&r, &z);
        let beta = rz_new / rz;
        rz = rz_new;
        for (pi, zi) in p.iter_mut().zip(&z) {
            *pi = zi + beta * *pi;
        }
    }
    Ok(())
}

/// Stage 2's conjugate-gradient certificates (see `krylov`): the finding
/// when one proves a bound above the tolerance; `distance_bound` raised to
/// the best bound they proved. A limit reached during the steps ends the
/// search, keeping what the completed steps proved.
pub(crate) fn krylov_certificate(
    block: &Block,
    rhs: &[f64],
    tol: f64,
    budget: &Budget,
    out: &mut Outcome,
) -> Result<Option<Finding>, Stop> {
    out.method.push(Step::ConjugateGradients);
    let krylov = certify(block, rhs, tol, MAX_STEPS, budget);
    out.krylov_steps = krylov.steps;
    if let Some((bound, y)) = krylov.best {
        if out.distance_bound.is_none_or(|b| bound.bound > b) {
            out.distance_bound = Some(bound.bound);
            out.rounding_bound = Some(bound.rounding);
        }
        if bound.bound > tol {
            out.certificate = Some(y);
            return Ok(Some(Finding::NoSubset(Evidence::Certificate)));
        }
    }
    match krylov.stopped {
        Some(stop) => Err(stop),
        None => Ok(None),
    }
}
