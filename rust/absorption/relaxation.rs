//! Stage 1: the least-squares relaxation of the flip condition.
//!
//! With `R_i = c v_i u_i^T` and `T = -A`, the relaxation minimises
//! `|| sum_i s_i R_i - T ||_F` over real `s`. Its normal equations use the
//! `m x m` Gram matrix `G_ij = <R_i, R_j> = c^2 (v_i . v_j)(u_i . u_j)` and
//! `h_i = <R_i, T> = -c v_i^T A u_i`, so the cost is `O(m^2 d + m^3)` and the
//! `(d_out d_in) x m` system is never formed (Mijoski & Karbevski 2026 state
//! the condition; the Gram form is ours).
//!
//! The Gram matrix is built in fixed row blocks of 64 neurons, each block's
//! lower triangle by two GEMM calls (`V_blk V^T` and `U_blk U^T`) and an
//! entrywise product, then mirrored; the fixed partition keeps every entry
//! independent of the thread count. The
//! same pass runs the genericity pair test on `u_i . u_j + b_i b_j`.

use rayon::prelude::*;

use crate::absorption::block::Block;
use crate::absorption::genericity::{self, GenericityCheck, GenericityReport, MAX_REPORTED_PAIRS};
use crate::limits::{Budget, Stop};
use crate::matrix::{dot, gemm, Matrix, View};

const ROW_BLOCK: usize = 64;

/// Offending genericity pairs of one row block, and how many there were.
type BlockPairs = Result<(Vec<(usize, usize)>, u64), Stop>;

/// Gram matrix and right-hand side of the normal equations.
pub struct NormalEquations {
    pub gram: Matrix,
    pub rhs: Vec<f64>,
}

/// Assemble the normal equations and run the genericity check.
///
/// `v` is `W_down` transposed (`m x d_out`, row `i` is `v_i`).
pub fn normal_equations(
    block: &Block,
    v: &Matrix,
    check: GenericityCheck,
    tol: f64,
    budget: &Budget,
) -> Result<(NormalEquations, GenericityReport), Stop> {
    let u = &block.w_up;
    let m = block.width();
    let c = block.flip_constant;
    let bias = |i: usize| block.b_up.as_ref().map_or(0.0, |b| b[i]);
    let up_sq: Vec<f64> = (0..m).map(|i| dot(u.row(i), u.row(i))).collect();
    let down_sq: Vec<f64> = (0..m).map(|i| dot(v.row(i), v.row(i))).collect();
    let aug_sq: Vec<f64> = (0..m).map(|i| up_sq[i] + bias(i) * bias(i)).collect();
    let dead = genericity::dead_neurons(&up_sq, &down_sq, tol);
    let res = genericity::resolution(u.cols() + 1);
    let mut is_dead = vec![false; m];
    for &i in &dead {
        is_dead[i] = true;
    }

    let mut gram = Matrix::zeros(m, m);
    let blocks: Vec<BlockPairs> = if m == 0 {
        Vec::new()
    } else {
        gram.data_mut()
            .par_chunks_mut(ROW_BLOCK * m)
            .enumerate()
            .map(|(blk, chunk)| {
                budget.check()?;
                let i0 = blk * ROW_BLOCK;
                let rows = chunk.len() / m;
                let i1 = i0 + rows;
                // Lower triangle only: chunk[:, ..i1] <- V[i0..i1] V[..i1]^T,
                // then multiplied entrywise by U[i0..i1] U[..i1]^T.
                let vb = View::rows_of(v.data(), v.cols(), i0, i1);
                let v_all = View::rows_of(v.data(), v.cols(), 0, i1).t();
                gemm(c * c, vb, v_all, 0.0, chunk, m);
                let mut gu = vec![0.0; rows * i1];
                let ub = View::rows_of(u.data(), u.cols(), i0, i1);
                let u_all = View::rows_of(u.data(), u.cols(), 0, i1).t();
                gemm(1.0, ub, u_all, 0.0, &mut gu, i1);
                let mut pairs = Vec::new();
                let mut count = 0u64;
                for r in 0..rows {
                    let i = i0 + r;
                    let g_row = &mut chunk[r * m..r * m + i1];
                    let u_row = &gu[r * i1..(r + 1) * i1];
                    for (g, &x) in g_row.iter_mut().zip(u_row) {
                        *g *= x;
                    }
                    if is_dead[i] || check == GenericityCheck::None {
                        continue;
                    }
                    for j in 0..i {
                        if !is_dead[j]
                            && genericity::offending_pair(
                                check,
                                u_row[j] + bias(i) * bias(j),
                                aug_sq[i],
                                aug_sq[j],
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
                Ok((pairs, count))
            })
            .collect()
    };
    let mut pairs = Vec::new();
    let mut pair_count = 0;
    for result in blocks {
        let (p, n) = result?;
        pairs.extend(p);
        pair_count += n;
    }
    pairs.truncate(MAX_REPORTED_PAIRS);
    let data = gram.data_mut();
    for i in 0..m {
        for j in i + 1..m {
            data[i * m + j] = data[j * m + i];
        }
    }
    budget.check()?;

    // h_i = -c v_i . (A u_i): AU = U A^T (m x d_out), then one dot per neuron.
    let skip = &block.skip;
    let mut au = vec![0.0; m * skip.rows()];
    gemm(
        1.0,
        View::rows_of(u.data(), u.cols(), 0, m),
        View::rows_of(skip.data(), skip.cols(), 0, skip.rows()).t(),
        0.0,
        &mut au,
        skip.rows(),
    );
    let d_out = skip.rows();
    let rhs: Vec<f64> = (0..m)
        .into_par_iter()
        .map(|i| -c * dot(v.row(i), &au[i * d_out..(i + 1) * d_out]))
        .collect();

    let report = GenericityReport {
        check,
        dead,
        pairs,
        pair_count,
    };
    Ok((NormalEquations { gram, rhs }, report))
}
