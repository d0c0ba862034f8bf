//! Stage 4, first try from [`MIN_WIDTH`] neurons: the relaxation solved by
//! conjugate gradients on the Gram matrix itself, before any factor.
//!
//! The normal equations `G s = h` of the relaxation are symmetric positive
//! semi-definite, and for generic weights (random or trained) the Gram
//! matrix scaled to unit diagonal is close to the identity: each diagonal
//! entry is `c^2 |v_i|^2 |u_i|^2` while the off-diagonal ones are sums of
//! products of nearly orthogonal vectors. Jacobi-preconditioned conjugate
//! gradients (Hestenes & Stiefel 1952; Saad, *Iterative Methods for Sparse
//! Linear Systems*, 2003, algorithm 9.1) then converge in a handful of
//! steps, each one read of the lower triangle (`O(m^2)`, bound by memory),
//! where the Cholesky factor costs `m^3 / 6` multiply-adds: at m = 16384
//! about ten steps against several seconds of factoring.
//!
//! Nothing here is trusted. The solution is only a candidate `s`; stage 5
//! proves what it proves from the weights or the Gram matrix in float64
//! with rigorous rounding bounds, and when that does not settle the block
//! the factor runs as before, on the Gram matrix left intact. So this
//! stage decides speed, never a verdict.
//!
//! The stopping rule follows from the certificate. At `s` with gradient
//! `g = h - G s`, the box bound loses at most `sum_i max(g_i, 0)` of
//! `<Y, T>` against the residual's own norm `||Y||^2`, so the steps stop
//! once `sum |g_i| <= TARGET ||Y||^2` (far inside the `1e-6` to which the
//! certificate must confirm the distance). They also stop, and hand the
//! block to the factor, when the distance falls to the tolerance (a bound
//! above it is then out of reach: conjugate gradients decrease `||Y||`
//! monotonically) or when the contraction seen so far could not reach the
//! target within [`max_steps`] (then the factor costs less than the steps
//! still needed).

use crate::absorption::relaxation::lower_matvec;
use crate::limits::{Budget, Stop};
use crate::linalg::cholesky::Real;

/// Narrowest block for which conjugate gradients are tried before the
/// factor (below it the factor takes well under a second).
pub const MIN_WIDTH: usize = 4096;

/// The stopping target: `sum |g_i| <= TARGET ||Y||^2`, a hundredth of the
/// `1e-6` to which the certificate must confirm the distance.
pub(crate) const TARGET: f64 = 1e-8;

/// Steps after which the contraction so far is extrapolated: the steps
/// stop when it could not reach [`TARGET`] within [`max_steps`].
const PROBES: [usize; 3] = [8, 16, 32];

/// Most steps for a width `m`: `m / 256`, from 16 to 64. One step reads the
/// triangle (`4 m^2` bytes), the factor costs `m^3 / 6` multiply-adds: at
/// m = 16384, 64 steps take about 6 s against 7.3 s for the float32 factor
/// (AMD EPYC, AVX-512). Trained weights need more steps than random ones:
/// 28 to 54 on the six MiniLM layers (a scaled condition number of 20 to
/// 92), 6 to 8 on `benches/scale.py`'s blocks.
pub fn max_steps(m: usize) -> usize {
    (m / 256).clamp(16, 64)
}

/// A solution found by conjugate gradients, and the steps it took.
#[derive(Debug, Clone)]
pub struct Solution {
    pub s: Vec<f64>,
    pub steps: usize,
}

/// The relaxed solution of `G s = h` by Jacobi-preconditioned conjugate
/// gradients from `s = 0`, `gram` the lower triangle (column-major, as
/// [`crate::absorption::relaxation::gram_lower`] leaves it), `t_norm2`
/// `||T||_F^2` and `tol_norm2` `(tol ||A||_F)^2`. `None` when the steps
/// cannot serve (see the module docs, or a diagonal entry that is not
/// positive and finite); the caller then factors. Every sum runs in a
/// fixed order, so the bits do not depend on the thread count.
pub fn relaxed_solution<T: Real>(
    gram: &[T],
    m: usize,
    h: &[f64],
    (t_norm2, tol_norm2): (f64, f64),
    budget: &Budget,
) -> Result<Option<Solution>, Stop> {
    let Some(mut cg) = Iteration::new(gram, m, h) else {
        return Ok(None);
    };
    let mut first = f64::NAN;
    for step in 1..=max_steps(m) {
        budget.check()?;
        if !cg.advance(gram, m) {
            return Ok(None);
        }
        let (s, r) = (&cg.x, &cg.r);
        // ||Y||^2 = ||T||^2 - 2 s.h + s.G s = ||T||^2 - s.h - s.r.
        let y_norm2 = t_norm2 - dot(s, h) - dot(s, r);
        if !y_norm2.is_finite() || y_norm2 <= tol_norm2 {
            return Ok(None);
        }
        let ratio = r.iter().map(|x| x.abs()).sum::<f64>() / y_norm2;
        if ratio <= TARGET {
            return Ok(Some(Solution {
                s: cg.x,
                steps: step,
            }));
        }
        if step == 1 {
            first = ratio;
        } else if PROBES.contains(&step) {
            let rate = (ratio / first).powf(1.0 / (step - 1) as f64);
            let needed = (TARGET / ratio).ln() / rate.ln();
            if !(rate < 1.0 && step as f64 + needed <= max_steps(m) as f64) {
                return Ok(None);
            }
        }
        cg.next_direction();
    }
    Ok(None)
}

/// A correction `G^-1 r` by the same steps, for the refinement of stage 5:
/// the steps stop at `||G x - r|| <= 1e-10 ||r||` or after [`max_steps`];
/// `None` when they cannot serve.
pub fn correction<T: Real>(gram: &[T], m: usize, rhs: &[f64]) -> Option<Vec<f64>> {
    let mut cg = Iteration::new(gram, m, rhs)?;
    let goal = 1e-20 * dot(rhs, rhs);
    for _ in 0..max_steps(m) {
        if dot(&cg.r, &cg.r) <= goal {
            break;
        }
        if !cg.advance(gram, m) {
            return None;
        }
        cg.next_direction();
    }
    cg.x.iter().all(|v| v.is_finite()).then_some(cg.x)
}

/// The state of Jacobi-preconditioned conjugate gradients on `G x = b`
/// from `x = 0`: the iterate, the residual `r = b - G x`, the
/// preconditioned residual `z = D^-1 r` and the search direction.
struct Iteration {
    inv_diag: Vec<f64>,
    x: Vec<f64>,
    r: Vec<f64>,
    z: Vec<f64>,
    p: Vec<f64>,
    rz: f64,
}

impl Iteration {
    fn new<T: Real>(gram: &[T], m: usize, b: &[f64]) -> Option<Self> {
        let inv_diag = inverse_diagonal(gram, m)?;
        let r = b.to_vec();
        let z: Vec<f64> = r.iter().zip(&inv_diag).map(|(a, b)| a * b).collect();
        let rz = dot(&r, &z);
        Some(Iteration {
            inv_diag,
            x: vec![0.0; m],
            p: z.clone(),
            r,
            z,
            rz,
        })
    }

    /// One step along `p`: `x`, `r` and `z` updated; false when the
    /// curvature `p.G p` is not positive or the sums are not finite.
    fn advance<T: Real>(&mut self, gram: &[T], m: usize) -> bool {
        let q = lower_matvec(gram, m, &self.p);
        let pq = dot(&self.p, &q);
        if !(pq > 0.0 && self.rz.is_finite()) {
            return false;
        }
        let alpha = self.rz / pq;
        axpy(&mut self.x, alpha, &self.p);
        axpy(&mut self.r, -alpha, &q);
        self.z
            .iter_mut()
            .zip(&self.r)
            .zip(&self.inv_diag)
            .for_each(|((zi, ri), di)| *zi = ri * di);
        true
    }

    /// The next search direction, conjugate to the last.
    fn next_direction(&mut self) {
        let rz_next = dot(&self.r, &self.z);
        let beta = rz_next / self.rz;
        self.rz = rz_next;
        self.p
            .iter_mut()
            .zip(&self.z)
            .for_each(|(pi, zi)| *pi = zi + beta * *pi);
    }
}

/// `1 / G_ii`, or `None` when a diagonal entry is not positive and finite
/// (a dead neuron: the factor handles the rank).
fn inverse_diagonal<T: Real>(gram: &[T], m: usize) -> Option<Vec<f64>> {
    let inv: Vec<f64> = (0..m).map(|j| 1.0 / gram[j * m + j].to_f64()).collect();
    inv.iter().all(|x| x.is_finite() && *x > 0.0).then_some(inv)
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn axpy(y: &mut [f64], a: f64, x: &[f64]) {
    y.iter_mut().zip(x).for_each(|(yi, xi)| *yi += a * xi);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::absorption::block::testing::random_block;
    use crate::absorption::relaxation::{gram_lower, rhs};
    use crate::limits::Limits;
    use crate::linalg::cholesky::PivotedCholesky;
    use std::sync::atomic::AtomicBool;

    fn solve_both(m: usize, d: usize, seed: u64) -> (Option<Solution>, Vec<f64>, Vec<f64>, f64) {
        let block = random_block(m, d, seed);
        let cancel = AtomicBool::new(false);
        let budget = Budget::new(Limits::default(), &cancel);
        let gram = gram_lower(&block, &budget).unwrap();
        let h = rhs(&block);
        let t2 = block.skip.frobenius_norm().powi(2);
        let cg = relaxed_solution(&gram, m, &h, (t2, 0.0), &budget).unwrap();
        let factor = PivotedCholesky::factor(gram.clone(), m, &budget)
            .unwrap()
            .unwrap();
        (cg, factor.solve(&h), gram, t2)
    }

    #[test]
    fn the_steps_reach_the_factors_solution() {
        // m = 4 d, as in transformer blocks: the uniform entries (mean 0)
        // make the scaled Gram matrix close to the identity.
        let (m, d) = (1024, 256);
        let (cg, exact, gram, t2) = solve_both(m, d, 11);
        let cg = cg.expect("conjugate gradients converge on a generic block");
        assert!(cg.steps <= 12, "{} steps", cg.steps);
        let scale = exact.iter().fold(0.0f64, |a, x| a.max(x.abs()));
        let err =
            cg.s.iter()
                .zip(&exact)
                .fold(0.0f64, |a, (x, y)| a.max((x - y).abs()));
        assert!(err <= 1e-7 * scale, "max error {err:e} of {scale:e}");
        // The stopping rule holds on the true gradient, not only on the
        // recurrence.
        let block = random_block(m, d, 11);
        let h = rhs(&block);
        let gs = lower_matvec(&gram, m, &cg.s);
        let g1: f64 = h.iter().zip(&gs).map(|(a, b)| (a - b).abs()).sum();
        let y2 = t2 - 2.0 * dot(&cg.s, &h) + dot(&cg.s, &gs);
        assert!(g1 <= 10.0 * TARGET * y2, "{g1:e} vs {y2:e}");
        let c = correction(&gram, m, &h).unwrap();
        let err = c
            .iter()
            .zip(&exact)
            .fold(0.0f64, |a, (x, y)| a.max((x - y).abs()));
        assert!(err <= 1e-7 * scale);
    }

    #[test]
    fn a_distance_within_the_tolerance_or_a_dead_neuron_leaves_it_to_the_factor() {
        let (m, d) = (256, 32);
        let block = random_block(m, d, 5);
        let cancel = AtomicBool::new(false);
        let budget = Budget::new(Limits::default(), &cancel);
        let mut gram = gram_lower(&block, &budget).unwrap();
        let h = rhs(&block);
        let t2 = block.skip.frobenius_norm().powi(2);
        // A tolerance above the distance: no bound above it can follow.
        assert!(relaxed_solution(&gram, m, &h, (t2, t2), &budget)
            .unwrap()
            .is_none());
        gram[3 * m + 3] = 0.0;
        assert!(relaxed_solution(&gram, m, &h, (t2, 0.0), &budget)
            .unwrap()
            .is_none());
        assert!(correction(&gram, m, &h).is_none());
    }

    #[test]
    fn the_bits_do_not_depend_on_the_thread_count() {
        let (m, d) = (700, 200);
        let block = random_block(m, d, 9);
        let cancel = AtomicBool::new(false);
        let budget = Budget::new(Limits::default(), &cancel);
        let gram = gram_lower(&block, &budget).unwrap();
        let h = rhs(&block);
        let run = || {
            relaxed_solution(&gram, m, &h, (d as f64, 0.0), &budget)
                .unwrap()
                .unwrap()
                .s
        };
        let one = crate::limits::on_threads(1, run);
        let three = crate::limits::on_threads(3, run);
        assert!(one == three);
    }
}
