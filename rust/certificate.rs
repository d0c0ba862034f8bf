//! Stage 2: the certificate of impossibility.
//!
//! At the relaxed solution `s*`, `Y = T - sum_i s*_i R_i` is orthogonal to
//! every `R_i` and satisfies `<Y, T> = ||Y||^2`. Then for any real `s`,
//! `<Y, sum_i s_i R_i - T> = -||Y||^2`, so no flip set gets closer to the
//! target than `||Y||_F`: when `||Y||_F / ||A||_F` exceeds the tolerance, no
//! flip set exists (THEORY section 5.2, after Mijoski & Karbevski 2026).
//! Anyone can re-check `Y` in `O(m d^2)` with [`lower_bound`], which does not
//! trust the orthogonality: it subtracts whatever inner products remain.

use rayon::prelude::*;

use crate::block::Block;
use crate::matrix::{dot, Matrix};
use crate::verification::flip_residual;

pub struct Certificate {
    /// `Y`, shape `(d_out, d_in)`.
    pub y: Matrix,
    /// `||Y||_F / ||A||_F`, the relaxation distance.
    pub distance: f64,
}

/// The residual of the relaxation at `s_star`.
pub fn certificate(block: &Block, s_star: &[f64]) -> Certificate {
    let mut y = flip_residual(block, s_star);
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

/// `<Y, R_i> = c v_i^T Y u_i` for every neuron `i`: the gradient of the
/// relaxation at the point whose residual is `y`.
pub fn inner_products(block: &Block, y: &Matrix) -> Vec<f64> {
    let c = block.flip_constant;
    (0..block.width())
        .into_par_iter()
        .map(|i| {
            let ui = block.w_up.row(i);
            let mut acc = 0.0;
            for p in 0..y.rows() {
                let v = block.w_down.get(p, i);
                if v != 0.0 {
                    acc += v * dot(y.row(p), ui);
                }
            }
            c * acc
        })
        .collect()
}

/// A lower bound on `min_{s in [0,1]^m} ||sum_i s_i R_i - T||_F / ||A||_F`
/// proved by `y` alone: `(<Y, T> - sum_i |<Y, R_i>|) / (||Y||_F ||A||_F)`.
/// `inner` are the `<Y, R_i>` (see [`inner_products`]).
pub fn lower_bound_from(block: &Block, y: &Matrix, inner: &[f64]) -> f64 {
    let y_norm = y.frobenius_norm();
    let a_norm = block.skip.frobenius_norm();
    if y_norm == 0.0 || a_norm == 0.0 {
        return 0.0;
    }
    // Normalise first so that neither product can overflow.
    let y_dot_t: f64 = -y
        .data()
        .iter()
        .zip(block.skip.data())
        .map(|(a, b)| (a / y_norm) * (b / a_norm))
        .sum::<f64>();
    let leak: f64 = inner.iter().map(|x| (x / y_norm).abs() / a_norm).sum();
    let bound = y_dot_t - leak;
    if bound.is_finite() {
        bound.max(0.0)
    } else {
        0.0
    }
}

/// [`lower_bound_from`] with the inner products computed here.
pub fn lower_bound(block: &Block, y: &Matrix) -> f64 {
    lower_bound_from(block, y, &inner_products(block, y))
}
