//! Stage 7: rigorous windows on the relaxed values, for a complete search.
//!
//! The relaxed solution `s*` and the null basis carry rounding errors of
//! about `eps cond(G)`, so a branch and bound that prunes on them can cut a
//! subtree that holds a flip set. This stage replaces them by constraints
//! that every flip set within the tolerance provably satisfies.
//!
//! For any weights `w`, `Y = sum_l w_l R_l` gives `<Y, E(s)> = (G w) . s -
//! h . w`, and a flip set with `||E(s)||_F <= tol ||A||_F` has
//! `|<Y, E(s)>| <= tol ||A||_F sqrt(w^T G w)` (Cauchy-Schwarz). With `w_k`
//! the `k`-th column of `G_BB^-1` (from the pivoted Cholesky factor), row
//! `k` reads `s_k + sum_f (G w_k)_f s_f ~ s*_k`: the basic neuron `k` as a
//! function of the free neurons coupled to it, inside a window. Whatever
//! float64 did to `w_k`, the constraint holds once `G w_k`, `h . w_k` and
//! `w_k^T G w_k` are bounded rigorously, which needs only the a-priori bound
//! `|G^_ij - G_ij| <= gamma(d_in + d_out + 4) n_i n_j`, `n_i = |c| ||v_i||
//! ||u_i||` (Higham 2002, ch. 3, with Cauchy-Schwarz). Terms on neurons that
//! are not coupled to row `k` are moved into the window as an interval, so
//! the rows split into the same independent components as the null basis.
//!
//! The windows are as wide as the conditioning makes them: for a
//! well-conditioned `G_BB` they are a tiny fraction of 1, and the search is
//! as sharp as the heuristic one; for an ill-conditioned one they widen, a
//! basic neuron may take both values, and the search enumerates more
//! candidates, each verified rigorously. Cost `O(m r^2)`, run only when the
//! certificate and the quick search have not settled the question.

use rayon::prelude::*;

use crate::absorption::block::Block;
use crate::limits::{Budget, Stop};
use crate::linalg::cholesky::PivotedCholesky;
use faer::{Accum, MatMut, MatRef};

use crate::linalg::matrix::{gemm, par, Matrix};
use crate::rigor::rounding::{gamma, norm_upper, up, TINY};

/// The largest `m * r` the windows are computed for (two `m x r` buffers).
pub const MAX_ENTRIES: usize = 1 << 24;

/// One rigorous constraint: `own s_k + sum_f coef_f s_f` lies in `[lo, hi]`
/// for every flip set within the tolerance.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The basic neuron `k`.
    pub neuron: usize,
    /// Its own coefficient, about 1.
    pub own: f64,
    /// `(free neuron, coefficient)` for the free neurons coupled to it.
    pub couplings: Vec<(usize, f64)>,
    pub lo: f64,
    pub hi: f64,
}

impl Row {
    /// The relaxed value of `s_k` with every coupled free neuron at 0.
    pub fn center(&self) -> f64 {
        0.5 * (self.lo + self.hi) / self.own
    }

    /// The values of `s_k` this row allows when the coupled free neurons
    /// contribute `sum` (exactly representable here: used for fixed rows).
    pub fn allows(&self, bit: u8) -> bool {
        let x = if bit == 1 { self.own } else { 0.0 };
        self.lo <= x && x <= self.hi
    }
}

/// The rows for the basic neurons, in pivot order, or `None` when a
/// quantity overflows (then float64 cannot make the search rigorous).
///
/// `gram` is the unscaled Gram matrix as the relaxation computed it, `rhs`
/// the right-hand side `h`, `coupled[k]` the free neurons coupled to the
/// `k`-th pivot (from the null basis).
// Long on purpose: the windows and their rigorous widths, derived together.
#[allow(clippy::too_many_lines)]
pub fn windows(
    block: &Block,
    gram: &Matrix,
    rhs: &[f64],
    factor: &PivotedCholesky,
    coupled: &[Vec<usize>],
    tol: f64,
    budget: &Budget,
) -> Result<Option<Vec<Row>>, Stop> {
    let m = block.width();
    let r = factor.rank();
    let piv = factor.pivots();
    let scale = factor.scale();
    let (d_out, d_in) = block.skip.shape();
    if r == 0 {
        return Ok(Some(Vec::new()));
    }
    // W = G_BB^-1 ~ (D U^-1)(D U^-1)^T, in pivot coordinates.
    let mut p = factor.pivot_inverse();
    budget.check()?;
    for (a, row) in p.data_mut().chunks_exact_mut(r).enumerate() {
        let da = scale[piv[a]];
        row.iter_mut().for_each(|x| *x *= da);
    }
    let mut w = vec![0.0; r * r];
    gemm(
        MatMut::from_row_major_slice_mut(&mut w, r, r),
        Accum::Replace,
        p.view(),
        p.view().transpose(),
        1.0,
        par(),
    );
    drop(p);
    budget.check()?;
    // g = G[:, B] W, m x r: column k is G w_k.
    let mut gb = vec![0.0; m * r];
    for j in 0..m {
        for (l, &b) in piv.iter().enumerate() {
            gb[j * r + l] = gram.get(j, b);
        }
    }
    let mut g = vec![0.0; m * r];
    gemm(
        MatMut::from_row_major_slice_mut(&mut g, m, r),
        Accum::Replace,
        MatRef::from_row_major_slice(&gb, m, r),
        MatRef::from_row_major_slice(&w, r, r),
        1.0,
        par(),
    );
    drop(gb);
    budget.check()?;

    let c = block.flip_constant.abs();
    let nv = crate::absorption::certificates::column_norms_upper(&block.w_down);
    let n: Vec<f64> = (0..m)
        .map(|i| up(c * nv[i] * norm_upper(block.w_up.row(i)), 3))
        .collect();
    let n_sum = up(n.iter().sum::<f64>(), m + 1);
    let a_up = norm_upper(block.skip.data());
    // The Gram entries carry c^2 and h carries c: with the flip constant's
    // own rounding, four more.
    let dd = d_in + d_out + 8;
    let err_h: Vec<f64> = n
        .iter()
        .map(|&nl| gamma(dd) * up(nl * a_up, 1) + dd as f64 * TINY)
        .collect();
    let kappa = gamma(dd) + gamma(r + 2) * (1.0 + gamma(dd));

    let rows: Vec<Option<Row>> = (0..r)
        .into_par_iter()
        .map(|k| {
            let col = |l: usize| w[l * r + k];
            let gk = |j: usize| g[j * r + k];
            let t = up((0..r).map(|l| n[piv[l]] * col(l).abs()).sum::<f64>(), r + 2);
            let center: f64 = (0..r).map(|l| rhs[piv[l]] * col(l)).sum();
            let center_mass: f64 = (0..r).map(|l| (rhs[piv[l]] * col(l)).abs()).sum();
            let err_c = gamma(r + 2) * center_mass
                + up(
                    (0..r).map(|l| col(l).abs() * err_h[piv[l]]).sum::<f64>(),
                    r + 2,
                );
            // ||Y_k||^2 = w_k^T G w_k
            let q: f64 = (0..r).map(|l| col(l) * gk(piv[l])).sum();
            let q_mass: f64 = (0..r).map(|l| (col(l) * gk(piv[l])).abs()).sum();
            let err_q = up(
                kappa * t * (0..r).map(|l| col(l).abs() * n[piv[l]]).sum::<f64>(),
                r + 4,
            ) + gamma(r + 2) * q_mass;
            let y_up = up((q + err_q).max(0.0).sqrt(), 3);
            let sum_eps = up(kappa * t * n_sum, 3) + m as f64 * TINY;
            let radius = up(tol * a_up * y_up + sum_eps + err_c, 4);
            let neuron = piv[k];
            let own = gk(neuron);
            let mut couplings: Vec<(usize, f64)> = coupled[k].iter().map(|&f| (f, gk(f))).collect();
            couplings.sort_unstable_by_key(|&(f, _)| f);
            let mut is_kept = vec![false; m];
            is_kept[neuron] = true;
            for &(f, _) in &couplings {
                is_kept[f] = true;
            }
            let (mut lneg, mut lpos, mut mass) = (0.0f64, 0.0f64, 0.0f64);
            for (j, &kept) in is_kept.iter().enumerate() {
                if !kept {
                    let x = gk(j);
                    if x < 0.0 {
                        lneg += x;
                    } else {
                        lpos += x;
                    }
                    mass += x.abs();
                }
            }
            let err_leak = gamma(m + 2) * mass;
            let spread = radius + err_leak;
            let lo = center - spread - lpos;
            let hi = center + spread - lneg;
            let slack = gamma(8) * (center.abs() + spread + lpos - lneg);
            let row = Row {
                neuron,
                own,
                couplings,
                lo: lo - slack,
                hi: hi + slack,
            };
            let finite = row.lo.is_finite()
                && row.hi.is_finite()
                && row.own.is_finite()
                && row.couplings.iter().all(|(_, x)| x.is_finite());
            finite.then_some(row)
        })
        .collect();
    Ok(rows.into_iter().collect())
}
