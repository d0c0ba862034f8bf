//! Pivoted Cholesky factorisation of a positive semi-definite Gram matrix.
//!
//! `P^T G P = L L^T` with diagonal pivoting, stopped at the numerical rank
//! (remaining diagonal below `m * eps * max diag`, as LAPACK's `dpstrf`
//! does). The factor is stored as `r` rows `l_k` over the *original* neuron
//! order, so `M = [l_0; ...; l_{r-1}]` is an `r x m` matrix with
//! `M^T M = G` (up to the truncation): its columns are an isometric image of
//! the rank-one terms `R_i`. Restricted to the pivot columns, `M` is upper
//! triangular, which gives the least-squares solution and the null space by
//! substitution.
//!
//! The update is blocked: a panel of `PANEL` pivots is chosen left-looking
//! (only the panel's own columns are subtracted), then the Schur complement
//! is compacted to the neurons not yet pivoted and its lower triangle (the
//! only half ever read) is updated once per panel by GEMM, in fixed blocks
//! of rows spread over the thread pool. Every entry is
//! computed by the same sequence of operations whatever the thread count.

use rayon::prelude::*;

use crate::limits::{Budget, Stop};
use crate::matrix::{axpy, gemm, Matrix, View};

const PANEL: usize = 48;
const UPDATE_ROWS: usize = 64;

/// Entries of a null-space vector smaller than this are dropped. The search
/// accepts basic values within a tolerance far larger than the error this
/// introduces.
const NULL_DROP: f64 = 1e-11;

#[derive(Debug, Clone)]
pub struct PivotedCholesky {
    m: usize,
    /// Jacobi scaling: the factor is of `diag(scale) G diag(scale)`.
    scale: Vec<f64>,
    pivots: Vec<usize>,
    rows: Vec<Vec<f64>>,
    /// The rank decision: the last pivot accepted, the largest diagonal
    /// left when the factorisation stopped, and the cut-off between them.
    decision: RankDecision,
}

/// How the numerical rank was decided, on the Jacobi-scaled Gram matrix
/// (unit diagonal). Pivoted Cholesky stops when the largest remaining
/// Schur-complement diagonal falls to `cutoff = m eps max_diag` (LAPACK's
/// `dpstrf` rule); `last_pivot` and `next_pivot` are the squared pivots on
/// either side of the cut, which track the eigenvalues `lambda_r` and
/// `lambda_{r+1}` of the scaled Gram matrix (so `sigma_r^2`, `sigma_{r+1}^2`
/// of the scaled flip-condition system).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RankDecision {
    pub last_pivot: f64,
    /// `None` when every neuron was pivoted (full rank).
    pub next_pivot: Option<f64>,
    pub cutoff: f64,
}

/// The null space of the Gram matrix in reduced form: one basis vector per
/// free neuron `f`, equal to 1 at `f`, 0 at the other free neurons, and
/// `coefficients[k]` at the basic (pivot) neurons.
#[derive(Debug, Clone)]
pub struct NullBasis {
    pub free: Vec<usize>,
    pub coefficients: Vec<Vec<(usize, f64)>>,
}

impl PivotedCholesky {
    /// Factor `gram` (consumed: it becomes the first Schur complement).
    pub fn factor(gram: Matrix, budget: &Budget) -> Result<Self, Stop> {
        let m = gram.rows();
        // Scale to unit diagonal, so that the rank cutoff measures each
        // neuron's term against its own size, not against the largest one.
        // Neurons whose term is zero get scale 0 and are never pivots.
        let scale: Vec<f64> = (0..m)
            .map(|j| {
                let g = gram.get(j, j);
                if g > 0.0 && g.is_finite() {
                    1.0 / g.sqrt()
                } else {
                    0.0
                }
            })
            .collect();
        let mut gram = gram;
        for (i, row) in gram.data_mut().chunks_exact_mut(m.max(1)).enumerate() {
            for (j, x) in row.iter_mut().enumerate() {
                *x *= scale[i] * scale[j];
            }
        }
        let max_diag = (0..m).map(|j| gram.get(j, j)).fold(0.0, f64::max);
        let tol = (m as f64) * f64::EPSILON * max_diag;
        // The Schur complement over the neurons not yet pivoted, compacted:
        // `schur` is `idx.len()` square and `idx` maps positions to neurons.
        let mut idx: Vec<usize> = (0..m).collect();
        let mut schur = gram.into_vec();
        let mut pivots = Vec::new();
        let mut rows: Vec<Vec<f64>> = Vec::new();
        let mut decision = RankDecision {
            cutoff: tol,
            ..RankDecision::default()
        };
        loop {
            let n = idx.len();
            let mut diag: Vec<f64> = (0..n).map(|j| schur[j * n + j]).collect();
            let mut taken = vec![false; n];
            // Panel rows over positions: panel[t * n + j].
            let mut panel: Vec<f64> = Vec::with_capacity(PANEL * n);
            let mut finished = false;
            while panel.len() < PANEL * n {
                let mut p = usize::MAX;
                let mut best = tol;
                for j in 0..n {
                    if !taken[j] && diag[j] > best {
                        best = diag[j];
                        p = j;
                    }
                }
                if p == usize::MAX {
                    decision.next_pivot = Some(
                        (0..n)
                            .filter(|&j| !taken[j])
                            .map(|j| diag[j])
                            .fold(0.0, f64::max),
                    );
                    finished = true;
                    break;
                }
                decision.last_pivot = diag[p];
                budget.check()?;
                // Row p of the symmetric Schur complement, from its lower triangle.
                let mut col: Vec<f64> = (0..n)
                    .map(|j| {
                        if j <= p {
                            schur[p * n + j]
                        } else {
                            schur[j * n + p]
                        }
                    })
                    .collect();
                for l in panel.chunks_exact(n) {
                    let a = l[p];
                    if a != 0.0 {
                        axpy(&mut col, -a, l);
                    }
                }
                let pivot = diag[p].sqrt();
                taken[p] = true;
                let mut full = vec![0.0; m];
                for j in 0..n {
                    let l = if taken[j] { 0.0 } else { col[j] / pivot };
                    col[j] = l;
                    diag[j] -= l * l;
                    full[idx[j]] = l;
                }
                col[p] = pivot;
                full[idx[p]] = pivot;
                panel.extend_from_slice(&col);
                pivots.push(idx[p]);
                rows.push(full);
            }
            if finished || pivots.len() == m {
                break;
            }
            // Compact to the untaken positions, then subtract the panel's
            // rank-k update with one GEMM per fixed block of rows.
            let keep: Vec<usize> = (0..n).filter(|&j| !taken[j]).collect();
            let n2 = keep.len();
            let k = panel.len() / n;
            let mut next = vec![0.0; n2 * n2];
            for (r, &i) in keep.iter().enumerate() {
                for (c, &j) in keep.iter().enumerate().take(r + 1) {
                    next[r * n2 + c] = schur[i * n + j];
                }
            }
            let mut lp = vec![0.0; k * n2];
            for t in 0..k {
                for (c, &j) in keep.iter().enumerate() {
                    lp[t * n2 + c] = panel[t * n + j];
                }
            }
            let lp_all = View::rows_of(&lp, n2, 0, k);
            next.par_chunks_mut(UPDATE_ROWS * n2)
                .enumerate()
                .for_each(|(blk, out)| {
                    let r0 = blk * UPDATE_ROWS;
                    let r1 = r0 + out.len() / n2;
                    let a = View {
                        data: &lp,
                        offset: r0,
                        rows: r1 - r0,
                        cols: k,
                        row_stride: 1,
                        col_stride: n2,
                    };
                    // Lower triangle of this block of rows: columns 0..r1.
                    let b = View { cols: r1, ..lp_all };
                    gemm(-1.0, a, b, 1.0, out, n2);
                });
            idx = keep.iter().map(|&j| idx[j]).collect();
            schur = next;
        }
        Ok(PivotedCholesky {
            m,
            scale,
            pivots,
            rows,
            decision,
        })
    }

    pub fn rank_decision(&self) -> RankDecision {
        self.decision
    }

    /// `U^-1`, dense `r x r` upper triangular, by back substitution
    /// (`O(r^3 / 3)`), with `U` the pivot block of the factor.
    pub fn pivot_inverse(&self) -> Vec<Vec<f64>> {
        let r = self.rank();
        let u = self.pivot_block();
        let cols: Vec<Vec<f64>> = (0..r)
            .into_par_iter()
            .map(|col| {
                let mut x = vec![0.0; r];
                for k in (0..=col).rev() {
                    let mut acc = if k == col { 1.0 } else { 0.0 };
                    for t in k + 1..=col {
                        acc -= u[k][t] * x[t];
                    }
                    x[k] = acc / u[k][k];
                }
                x
            })
            .collect();
        // cols[col][k] = (U^-1)[k][col]; return rows.
        (0..r)
            .map(|k| (0..r).map(|col| cols[col][k]).collect())
            .collect()
    }

    pub fn rank(&self) -> usize {
        self.pivots.len()
    }

    pub fn pivots(&self) -> &[usize] {
        &self.pivots
    }

    /// `U[k][t] = M[k][pivot t]`, the upper-triangular pivot block, dense.
    fn pivot_block(&self) -> Vec<Vec<f64>> {
        self.rows
            .iter()
            .map(|l| self.pivots.iter().map(|&p| l[p]).collect())
            .collect()
    }

    /// `diag(scale)`: the factor is of the Gram matrix scaled by it on both sides.
    pub fn scale(&self) -> &[f64] {
        &self.scale
    }

    /// The basic least-squares solution of `G s = h`: zero at free neurons.
    pub fn solve(&self, h: &[f64]) -> Vec<f64> {
        let r = self.rank();
        let u = self.pivot_block();
        // U^T y = D h_B (forward), then U z = y (backward), s = D z.
        let mut y = vec![0.0; r];
        for t in 0..r {
            let mut s = h[self.pivots[t]] * self.scale[self.pivots[t]];
            for (k, yk) in y.iter().enumerate().take(t) {
                s -= u[k][t] * yk;
            }
            y[t] = s / u[t][t];
        }
        let mut s = vec![0.0; self.m];
        let mut z = vec![0.0; r];
        for k in (0..r).rev() {
            let mut acc = y[k];
            for t in k + 1..r {
                acc -= u[k][t] * z[t];
            }
            z[k] = acc / u[k][k];
            s[self.pivots[k]] = z[k] * self.scale[self.pivots[k]];
        }
        s
    }

    /// The null space of `M` (so of `G`), one reduced vector per free neuron.
    pub fn null_basis(&self, budget: &Budget) -> Result<NullBasis, Stop> {
        let r = self.rank();
        let mut is_pivot = vec![false; self.m];
        for &p in &self.pivots {
            is_pivot[p] = true;
        }
        let free: Vec<usize> = (0..self.m).filter(|&j| !is_pivot[j]).collect();
        let u = self.pivot_block();
        let coefficients: Result<Vec<Vec<(usize, f64)>>, Stop> = free
            .par_iter()
            .map(|&f| {
                budget.check()?;
                // Solve U x = -M[:, f] by back substitution.
                let mut x = vec![0.0; r];
                for k in (0..r).rev() {
                    let mut acc = -self.rows[k][f];
                    for t in k + 1..r {
                        acc -= u[k][t] * x[t];
                    }
                    x[k] = acc / u[k][k];
                }
                // Back to unscaled neurons, normalised to 1 at f. A neuron
                // with a zero term (scale 0) moves nothing.
                let sf = self.scale[f];
                if sf == 0.0 {
                    return Ok(Vec::new());
                }
                Ok(x.iter()
                    .enumerate()
                    .map(|(k, &v)| (self.pivots[k], v * self.scale[self.pivots[k]] / sf))
                    .filter(|(_, v)| v.abs() > NULL_DROP)
                    .collect())
            })
            .collect();
        Ok(NullBasis {
            free,
            coefficients: coefficients?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    use crate::limits::Limits;

    fn gram_of(cols: &[Vec<f64>]) -> Matrix {
        let m = cols.len();
        let mut g = Matrix::zeros(m, m);
        for i in 0..m {
            for j in 0..m {
                g.data_mut()[i * m + j] = crate::matrix::dot(&cols[i], &cols[j]);
            }
        }
        g
    }

    #[test]
    fn full_rank_solve_matches_direct_solution() {
        // G = [[4, 2], [2, 3]], h = [2, 1] -> s = [0.5, 0]
        let g = Matrix::from_vec("G", 2, 2, vec![4.0, 2.0, 2.0, 3.0]).unwrap();
        let cancel = AtomicBool::new(false);
        let budget = Budget::new(Limits::default(), &cancel);
        let chol = PivotedCholesky::factor(g, &budget).unwrap();
        assert_eq!(chol.rank(), 2);
        let s = chol.solve(&[2.0, 1.0]);
        assert!((s[0] - 0.5).abs() < 1e-14 && s[1].abs() < 1e-14);
    }

    #[test]
    fn duplicate_columns_give_a_null_vector() {
        // columns a, b, a: null vector e_0 - e_2 (or its reduced form).
        let cols = vec![
            vec![1.0, 2.0, 0.0],
            vec![0.0, 1.0, 1.0],
            vec![1.0, 2.0, 0.0],
        ];
        let cancel = AtomicBool::new(false);
        let budget = Budget::new(Limits::default(), &cancel);
        let chol = PivotedCholesky::factor(gram_of(&cols), &budget).unwrap();
        assert_eq!(chol.rank(), 2);
        let null = chol.null_basis(&budget).unwrap();
        assert_eq!(null.free.len(), 1);
        let f = null.free[0];
        let other = if f == 0 { 2 } else { 0 };
        assert_eq!(null.coefficients[0].len(), 1);
        let (b, coef) = null.coefficients[0][0];
        assert_eq!(b, other);
        assert!((coef + 1.0).abs() < 1e-12);
    }
}
