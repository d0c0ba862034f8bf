//! Stage 5: the flip condition evaluated exactly, in float64, on the
//! original weights. Every subset the core reports passes through here, and
//! the certificate is the same quantity at the relaxed solution.

use rayon::prelude::*;

use crate::block::Block;
use crate::matrix::{axpy, Matrix};

const OUT_ROWS: usize = 8;

/// `E(s) = A + c * W_down diag(s) W_up`, shape `(d_out, d_in)`.
///
/// The flip set `S` absorbs the skip exactly when `E(1_S) = 0`
/// (Mijoski & Karbevski 2026, the flip construction). Output rows are
/// computed in groups so that each `u_i` is read once per group.
pub fn flip_residual(block: &Block, weights: &[f64]) -> Matrix {
    let (d_out, d_in) = block.skip.shape();
    let c = block.flip_constant;
    let u = &block.w_up;
    let wd = &block.w_down;
    let mut e = block.skip.clone();
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
            for &i in &active {
                let ui = u.row(i);
                for r in 0..rows {
                    let coef = c * weights[i] * wd.get(p0 + r, i);
                    if coef != 0.0 {
                        axpy(&mut chunk[r * d_in..(r + 1) * d_in], coef, ui);
                    }
                }
            }
        });
    debug_assert_eq!(e.rows(), d_out);
    e
}

/// Relative residual `||E(1_S)||_F / ||A||_F` of the flip set `subset`.
pub fn subset_residual(block: &Block, subset: &[usize]) -> f64 {
    let mut weights = vec![0.0; block.width()];
    for &i in subset {
        weights[i] = 1.0;
    }
    let a_norm = block.skip.frobenius_norm();
    let e = flip_residual(block, &weights).frobenius_norm();
    if a_norm == 0.0 {
        e
    } else {
        e / a_norm
    }
}
