//! Stage 4: pivoted Cholesky factorisation of a positive semi-definite Gram
//! matrix.
//!
//! `P^T D G D P = L L^T` with `D` the Jacobi scaling to unit diagonal and
//! diagonal pivoting, stopped at the numerical rank (remaining diagonal below
//! `m * eps`, LAPACK's `dpstrf` rule). The factorisation is blocked like
//! faer's `llt_pivoting`, with faer's GEMM for the BLAS-3 trailing updates,
//! run in place on the Gram matrix, so the exact path holds one `m x m`
//! buffer.
//!
//! With `M = L^T` over the original neuron order (`r x m`), `M^T M = D G D`
//! up to the truncation: its columns are an isometric image of the scaled
//! rank-one terms `R_i`. Restricted to the pivot columns, `M` is the upper
//! triangular `U = L_11^T`, which gives the least-squares solution and the
//! null space by triangular solves.

use faer::linalg::triangular_inverse::invert_lower_triangular;
use faer::linalg::triangular_solve::{
    solve_lower_triangular_in_place, solve_upper_triangular_in_place,
};
use faer::{Accum, MatMut, MatRef, Par};
use rayon::prelude::*;

use crate::limits::{Budget, Stop};
use crate::linalg::matrix::{gemm_t, par, Matrix};

/// Entries of a null-space vector smaller than this are dropped. The search
/// accepts basic values within a tolerance far larger than the error this
/// introduces.
const NULL_DROP: f64 = 1e-11;

/// The element types the factorisation runs in: float64 for the decision,
/// float32 for the fast solver of the exact path (see `relaxation`).
pub trait Real:
    num_traits::Float
    + faer::traits::RealField
    + std::ops::AddAssign
    + std::ops::MulAssign
    + Send
    + Sync
    + std::fmt::Debug
    + 'static
{
    /// The unit roundoff's double, as in LAPACK's `dpstrf` cut-off.
    const EPS: f64;
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
}

impl Real for f64 {
    const EPS: f64 = f64::EPSILON;
    fn from_f64(x: f64) -> Self {
        x
    }
    fn to_f64(self) -> f64 {
        self
    }
}

impl Real for f32 {
    const EPS: f64 = f32::EPSILON as f64;
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}

#[derive(Debug, Clone)]
pub struct PivotedCholesky<T: Real = f64> {
    m: usize,
    /// Jacobi scaling: the factor is of `diag(scale) G diag(scale)`.
    scale: Vec<f64>,
    /// Neurons in pivot order: `perm[k]` sits at position `k`.
    perm: Vec<usize>,
    rank: usize,
    /// `L`, `m x m` column-major; its first `rank` columns are the factor.
    l: Vec<T>,
    /// The rank decision: the last pivot accepted, the largest diagonal
    /// left when the factorisation stopped, and the cut-off between them.
    decision: RankDecision,
}

/// How the numerical rank was decided, on the Jacobi-scaled Gram matrix
/// (unit diagonal). Pivoted Cholesky stops when the largest remaining
/// Schur-complement diagonal falls below `cutoff = m eps max_diag` (LAPACK's
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

/// Whether the factorisation picks pivots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pivoting {
    /// The largest remaining diagonal at each step: rank-revealing.
    Diagonal,
    /// The natural order, stopping at the first pivot not above the
    /// cut-off: no row or column swaps (at m = 16384 their strided walks
    /// are seconds), for a factor that is used only when of full rank.
    None,
}

/// Columns per panel of the blocked factorisation.
const PANEL: usize = 128;

/// Rows per chunk of the panel's matrix-vector products.
const MATVEC_ROWS: usize = 2048;

/// Columns per block of the trailing update.
const UPDATE_COLUMNS: usize = 256;

/// Fewest free neurons per chunk of the null basis's triangular solve.
const NULL_COLUMNS: usize = 128;

/// Blocked pivoted Cholesky in place (LAPACK's `dpstrf`, in the form of
/// faer's `llt_pivoting`): each panel picks its pivots left-looking with
/// sequential matrix-vector updates, then the trailing lower triangle gets
/// one rank-`PANEL` update by GEMM, in fixed blocks of columns spread over
/// the threads. Every entry is then computed the same way whatever the
/// thread count (faer's own routine splits the matrix-vector products over
/// threads, which changes their last bits). Stops at the
/// first pivot not above `cutoff`, leaving that (squared) diagonal at
/// `a[(rank, rank)]`; `None` on a NaN.
// Long on purpose: one blocked factorisation loop (panel, pivot, update), kept whole as in LAPACK.
#[allow(clippy::too_many_lines)]
fn pivoted_llt<T: Real>(
    mut a: MatMut<'_, T>,
    perm: &mut [usize],
    cutoff: T,
    pivoting: Pivoting,
    budget: &Budget,
) -> Result<Option<usize>, Stop> {
    let n = a.nrows();
    let zero = T::zero();
    let mut dots = vec![zero; n];
    let mut diag = vec![zero; n];
    let mut base = vec![zero; n];
    let mut swaps: Vec<(usize, usize)> = Vec::with_capacity(PANEL);
    let mut stop = None;
    let mut k = 0;
    while k < n {
        budget.check()?;
        let bs = PANEL.min(n - k);
        dots[k..].iter_mut().for_each(|x| *x = zero);
        // The Schur diagonal at the panel's start, read once (strided).
        for (i, b) in base.iter_mut().enumerate().skip(k) {
            *b = a[(i, i)];
        }
        for j in k..k + bs {
            if j > k {
                // One matrix-vector product per column: at m = 16384 a panel
                // is some 0.1 s of memory traffic, so poll per column.
                budget.check()?;
                let prev = a.as_ref().col(j - 1);
                for i in j..n {
                    let x = prev[i];
                    dots[i] += x * x;
                }
            }
            for i in j..n {
                diag[i] = base[i] - dots[i];
            }
            let mut pvt = j;
            let mut ajj = diag[j];
            if pivoting == Pivoting::Diagonal {
                for (i, &d) in diag.iter().enumerate().skip(j) {
                    if d.is_nan() {
                        return Ok(None);
                    }
                    if d > ajj {
                        ajj = d;
                        pvt = i;
                    }
                }
            }
            if ajj.is_nan() {
                return Ok(None);
            }
            if ajj <= cutoff {
                a[(j, j)] = ajj;
                stop = Some(j);
                break;
            }
            if pvt != j {
                a[(pvt, pvt)] = a[(j, j)];
                // Rows of the panel's columns now; those of earlier panels
                // at the end of the panel, one column at a time (a row swap
                // across columns is a strided walk through the matrix).
                faer::perm::swap_rows_idx(a.as_mut().get_mut(.., k..j), j, pvt);
                swaps.push((j, pvt));
                faer::perm::swap_cols_idx(a.as_mut().get_mut(pvt + 1.., ..), j, pvt);
                for t in j + 1..pvt {
                    let x = a[(t, j)];
                    a[(t, j)] = a[(pvt, t)];
                    a[(pvt, t)] = x;
                }
                dots.swap(j, pvt);
                base.swap(j, pvt);
                perm.swap(j, pvt);
            }
            let root = ajj.sqrt();
            a[(j, j)] = root;
            // Column j below the pivot, minus the panel so far times row j:
            // a matrix-vector product, in fixed chunks of rows (memory-bound,
            // so spread over the threads; each row is one thread's sum).
            let (left, right) = a.as_mut().split_at_col_mut(j);
            let left = left.as_ref();
            let col = right.get_mut(j + 1.., 0);
            let x = left.get(j, k..j).transpose().as_mat();
            let rows = left.get(j + 1.., k..j);
            let inv = root.recip();
            let chunks: Vec<(usize, faer::ColMut<'_, T>)> = {
                let mut out = Vec::new();
                let mut rest = col;
                let mut r0 = 0;
                while rest.nrows() > 0 {
                    let len = MATVEC_ROWS.min(rest.nrows());
                    let (head, tail) = rest.split_at_row_mut(len);
                    out.push((r0, head));
                    rest = tail;
                    r0 += len;
                }
                out
            };
            chunks.into_par_iter().for_each(|(r0, mut chunk)| {
                let len = chunk.nrows();
                gemm_t(
                    chunk.as_mut().as_mat_mut(),
                    Accum::Add,
                    rows.subrows(r0, len),
                    x,
                    -T::one(),
                    Par::Seq,
                );
                chunk.iter_mut().for_each(|v| *v *= inv);
            });
        }
        if k > 0 && !swaps.is_empty() {
            let done = a.as_mut().get_mut(.., ..k);
            let mut cols: Vec<faer::ColMut<'_, T>> = Vec::with_capacity(k);
            let mut rest = done;
            while rest.ncols() > 0 {
                let (head, tail) = rest.split_at_col_mut(1);
                cols.push(head.col_mut(0));
                rest = tail;
            }
            cols.into_par_iter().for_each(|mut col| {
                for &(x, y) in &swaps {
                    let t = col[x];
                    col[x] = col[y];
                    col[y] = t;
                }
            });
        }
        swaps.clear();
        if stop.is_some() {
            return Ok(stop);
        }
        let next = k + bs;
        if next < n {
            // Trailing lower triangle minus the panel's rank-bs update, in
            // fixed blocks of columns, each on one thread.
            let (left, right) = a.as_mut().split_at_col_mut(next);
            let panel = left.as_ref().get(next.., k..next);
            let trailing = right.get_mut(next.., ..);
            let width = n - next;
            let blocks: Vec<(usize, MatMut<'_, T>)> = {
                let mut out = Vec::new();
                let mut rest = trailing;
                let mut c0 = 0;
                while c0 < width {
                    let cols = UPDATE_COLUMNS.min(width - c0);
                    let (head, tail) = rest.split_at_col_mut(cols);
                    out.push((c0, head));
                    rest = tail;
                    c0 += cols;
                }
                out
            };
            // The update is the factorisation's bulk (at m = 16384 the first
            // is 17 G multiply-adds): each block polls before it starts, so
            // a limit takes effect within one block's work per thread.
            blocks.into_par_iter().try_for_each(|(c0, block)| {
                budget.check()?;
                let cols = block.ncols();
                gemm_t(
                    block.subrows_mut(c0, width - c0),
                    Accum::Add,
                    panel.subrows(c0, width - c0),
                    panel.subrows(c0, cols).transpose(),
                    -T::one(),
                    Par::Seq,
                );
                Ok(())
            })?;
        }
        k = next;
    }
    Ok(Some(n))
}

/// Jacobi scaling of a Gram matrix with diagonal `diag`: `1 / sqrt(g_jj)`,
/// and 0 for neurons whose term is zero (they are never pivots).
fn jacobi_scale(diag: impl Iterator<Item = f64>) -> Vec<f64> {
    diag.map(|g| {
        if g > 0.0 && g.is_finite() {
            1.0 / g.sqrt()
        } else {
            0.0
        }
    })
    .collect()
}

impl PivotedCholesky {
    /// Factor the Gram matrix held in `gram`, `m x m` column-major with at
    /// least its lower triangle filled (consumed: it becomes the factor).
    /// `None` when the factorisation meets a NaN (an overflowed Gram matrix).
    pub fn factor(gram: Vec<f64>, m: usize, budget: &Budget) -> Result<Option<Self>, Stop> {
        assert_eq!(gram.len(), m * m, "factor: the Gram buffer must be m x m");
        let mut l = gram;
        // Scale to unit diagonal, so that the rank cutoff measures each
        // neuron's term against its own size, not against the largest one.
        let scale = jacobi_scale((0..m).map(|j| l[j * m + j]));
        if m > 0 {
            l.par_chunks_mut(m).enumerate().for_each(|(j, col)| {
                for (i, x) in col.iter_mut().enumerate().skip(j) {
                    *x *= scale[i] * scale[j];
                }
            });
        }
        Self::factor_scaled(l, scale, m, Pivoting::Diagonal, budget)
    }
}

impl PivotedCholesky<f32> {
    /// The float32 factor of the Gram matrix whose lower triangle `gram`
    /// holds (`m x m` column-major, float64, left as it is): the Jacobi
    /// scaling is applied in float64 and the scaled entries rounded once.
    /// The cut-off is float32's (`m * eps32`), so a Gram matrix this
    /// factor calls full rank is well inside float64's rank too.
    pub fn factor_rounded(
        gram: &[f64],
        m: usize,
        pivoting: Pivoting,
        budget: &Budget,
    ) -> Result<Option<Self>, Stop> {
        assert_eq!(gram.len(), m * m, "factor: the Gram buffer must be m x m");
        let scale = jacobi_scale((0..m).map(|j| gram[j * m + j]));
        let mut l = vec![0.0f32; m * m];
        if m > 0 {
            l.par_chunks_mut(m)
                .zip(gram.par_chunks(m))
                .enumerate()
                .for_each(|(j, (col, g))| {
                    for i in j..m {
                        col[i] = (g[i] * (scale[i] * scale[j])) as f32;
                    }
                });
        }
        budget.check()?;
        Self::factor_scaled(l, scale, m, pivoting, budget)
    }
}

impl<T: Real> PivotedCholesky<T> {
    /// Factor `l`, the lower triangle of the Gram matrix already scaled by
    /// `scale` on both sides, in place.
    fn factor_scaled(
        mut l: Vec<T>,
        scale: Vec<f64>,
        m: usize,
        pivoting: Pivoting,
        budget: &Budget,
    ) -> Result<Option<Self>, Stop> {
        budget.check()?;
        let max_diag = (0..m).map(|j| l[j * m + j].to_f64()).fold(0.0, f64::max);
        let cutoff = (m as f64) * T::EPS * max_diag;
        let mut perm: Vec<usize> = (0..m).collect();
        let mut decision = RankDecision {
            cutoff,
            ..RankDecision::default()
        };
        if m == 0 {
            return Ok(Some(PivotedCholesky {
                m,
                scale,
                perm,
                rank: 0,
                l,
                decision,
            }));
        }
        if max_diag == 0.0 {
            // Every term is zero: rank 0, nothing to factor.
            decision.next_pivot = Some(0.0);
            return Ok(Some(PivotedCholesky {
                m,
                scale,
                perm,
                rank: 0,
                l,
                decision,
            }));
        }
        let a = MatMut::from_column_major_slice_mut(&mut l, m, m);
        let Some(rank) = pivoted_llt(a, &mut perm, T::from_f64(cutoff), pivoting, budget)? else {
            return Ok(None);
        };
        budget.check()?;
        let diag = |k: usize| l[k * m + k].to_f64();
        if rank > 0 {
            // The smallest accepted pivot: the last one when pivoting.
            decision.last_pivot = match pivoting {
                Pivoting::Diagonal => diag(rank - 1) * diag(rank - 1),
                Pivoting::None => (0..rank)
                    .map(|k| diag(k) * diag(k))
                    .fold(f64::INFINITY, f64::min),
            };
        }
        if rank < m {
            // The largest remaining diagonal (squared) is left there.
            decision.next_pivot = Some(diag(rank).max(0.0));
        }
        if !(0..rank).all(|k| diag(k).is_finite() && diag(k) > 0.0) {
            return Ok(None);
        }
        Ok(Some(PivotedCholesky {
            m,
            scale,
            perm,
            rank,
            l,
            decision,
        }))
    }

    pub fn rank_decision(&self) -> RankDecision {
        self.decision
    }

    /// `L_11`, the `r x r` lower-triangular pivot block.
    fn l11(&self) -> MatRef<'_, T> {
        MatRef::from_column_major_slice(&self.l, self.m, self.m)
            .submatrix(0, 0, self.rank, self.rank)
    }

    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The pivot neurons, in pivot order.
    pub fn pivots(&self) -> &[usize] {
        &self.perm[..self.rank]
    }

    /// `diag(scale)`: the factor is of the Gram matrix scaled by it on both sides.
    pub fn scale(&self) -> &[f64] {
        &self.scale
    }

    /// The basic least-squares solution of `G s = h`: zero at free neurons.
    /// In float32 the right-hand side is scaled by a power of two to a
    /// largest entry near 1 first (exact), so that small refinement
    /// residuals keep their digits.
    pub fn solve(&self, h: &[f64]) -> Vec<f64> {
        let r = self.rank;
        let piv = self.pivots();
        let mut s = vec![0.0; self.m];
        if r == 0 {
            return s;
        }
        // L_11 L_11^T z = D h_B, s_B = D z.
        let dh: Vec<f64> = piv.iter().map(|&p| h[p] * self.scale[p]).collect();
        let big = dh.iter().fold(0.0f64, |a, x| a.max(x.abs()));
        let k = if big > 0.0 && big.is_finite() && T::EPS > f64::EPSILON {
            -(big.log2().round() as i32)
        } else {
            0
        };
        let mut z: Vec<T> = dh
            .iter()
            .map(|&x| T::from_f64(crate::absorption::block::ldexp(x, k)))
            .collect();
        let l11 = self.l11();
        let mut rhs = MatMut::from_column_major_slice_mut(&mut z, r, 1);
        solve_lower_triangular_in_place(l11, rhs.as_mut(), Par::Seq);
        solve_upper_triangular_in_place(l11.transpose(), rhs.as_mut(), Par::Seq);
        for (k2, &p) in piv.iter().enumerate() {
            s[p] = crate::absorption::block::ldexp(z[k2].to_f64(), -k) * self.scale[p];
        }
        s
    }
}

impl PivotedCholesky {
    /// `U^-1` with `U = L_11^T`, dense `r x r` upper triangular, row-major.
    pub fn pivot_inverse(&self) -> Matrix<'static> {
        let r = self.rank;
        let mut inv = Matrix::zeros(r, r);
        // Row-major U^-1 is column-major L_11^-1.
        let dst = MatMut::from_column_major_slice_mut(inv.data_mut(), r, r);
        invert_lower_triangular(dst, self.l11(), par());
        inv
    }

    /// The null space of `M` (so of `G`), one reduced vector per free neuron.
    /// The triangular solve (`r^2 (m - r)` multiply-adds) runs in chunks of
    /// free neurons with `budget` checked between them, so a limit takes
    /// effect within one chunk.
    pub fn null_basis(&self, budget: &Budget) -> Result<NullBasis, Stop> {
        let r = self.rank.max(1);
        let columns = (crate::linalg::matrix::POLL_WORK / (r * r)).max(NULL_COLUMNS);
        self.null_basis_in_chunks(budget, columns)
    }

    /// [`PivotedCholesky::null_basis`] with chunks of `columns` free neurons
    /// (the same bits for any chunking: each column is solved on its own).
    fn null_basis_in_chunks(&self, budget: &Budget, columns: usize) -> Result<NullBasis, Stop> {
        let (m, r) = (self.m, self.rank);
        let free: Vec<usize> = self.perm[r..].to_vec();
        let nf = free.len();
        // X = -U^-1 M_F with M_F = L_21^T (r x nf): one triangular solve.
        let l = MatRef::from_column_major_slice(&self.l, m, m);
        let mut x = vec![0.0; r * nf];
        for (q, col) in x.chunks_exact_mut(r.max(1)).enumerate().take(nf) {
            for (k, v) in col.iter_mut().enumerate() {
                *v = -l[(r + q, k)];
            }
        }
        if r > 0 && nf > 0 {
            for chunk in x.chunks_mut(r.saturating_mul(columns.max(1))) {
                budget.check()?;
                let rhs = MatMut::from_column_major_slice_mut(chunk, r, chunk.len() / r);
                solve_upper_triangular_in_place(self.l11().transpose(), rhs, par());
            }
        }
        budget.check()?;
        let coefficients: Vec<Vec<(usize, f64)>> = free
            .par_iter()
            .enumerate()
            .map(|(q, &f)| {
                // Back to unscaled neurons, normalised to 1 at f. A neuron
                // with a zero term (scale 0) moves nothing.
                let sf = self.scale[f];
                if sf == 0.0 || r == 0 {
                    return Vec::new();
                }
                x[q * r..(q + 1) * r]
                    .iter()
                    .enumerate()
                    .map(|(k, &v)| {
                        let p = self.perm[k];
                        (p, v * self.scale[p] / sf)
                    })
                    .filter(|(_, v)| v.abs() > NULL_DROP)
                    .collect()
            })
            .collect();
        Ok(NullBasis { free, coefficients })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    use crate::limits::Limits;

    fn gram_of(cols: &[Vec<f64>]) -> Vec<f64> {
        let m = cols.len();
        let mut g = vec![0.0; m * m];
        for i in 0..m {
            for j in 0..m {
                g[i * m + j] = crate::linalg::matrix::dot(&cols[i], &cols[j]);
            }
        }
        g
    }

    #[test]
    fn full_rank_solve_matches_direct_solution() {
        // G = [[4, 2], [2, 3]], h = [2, 1] -> s = [0.5, 0]
        let g = vec![4.0, 2.0, 2.0, 3.0];
        let cancel = AtomicBool::new(false);
        let budget = Budget::new(Limits::default(), &cancel);
        let chol = PivotedCholesky::factor(g, 2, &budget).unwrap().unwrap();
        assert_eq!(chol.rank(), 2);
        let s = chol.solve(&[2.0, 1.0]);
        assert!((s[0] - 0.5).abs() < 1e-14 && s[1].abs() < 1e-14);
    }

    #[test]
    fn the_unpivoted_float32_factor_solves_and_stops_at_a_deficient_rank() {
        // A full-rank Gram matrix of 30 columns in 40 dimensions: both
        // orders solve it to float32's accuracy, the natural one with
        // the identity permutation.
        let mut next = crate::linalg::matrix::testing::uniform(3);
        let cols: Vec<Vec<f64>> = (0..30).map(|_| (0..40).map(|_| next()).collect()).collect();
        let m = cols.len();
        let g = gram_of(&cols);
        let h: Vec<f64> = (0..m).map(|i| (i as f64).sin()).collect();
        let budget = Budget::unlimited();
        let plain = PivotedCholesky::<f32>::factor_rounded(&g, m, Pivoting::None, &budget)
            .unwrap()
            .unwrap();
        let pivoted = PivotedCholesky::<f32>::factor_rounded(&g, m, Pivoting::Diagonal, &budget)
            .unwrap()
            .unwrap();
        assert_eq!((plain.rank(), pivoted.rank()), (m, m));
        assert_eq!(plain.pivots(), (0..m).collect::<Vec<_>>().as_slice());
        let exact = PivotedCholesky::factor(g.clone(), m, &budget)
            .unwrap()
            .unwrap()
            .solve(&h);
        let size = exact.iter().fold(0.0f64, |a, x| a.max(x.abs()));
        for f in [&plain, &pivoted] {
            let s = f.solve(&h);
            let err = s
                .iter()
                .zip(&exact)
                .fold(0.0f64, |a, (x, y)| a.max((x - y).abs()));
            assert!(err <= 1e-3 * size, "{err} vs {size}");
        }
        let d = plain.rank_decision();
        assert!(d.last_pivot > d.cutoff && d.next_pivot.is_none());
        // A repeated column: the natural order stops at its copy.
        let mut dup = cols.clone();
        dup[7] = dup[2].clone();
        let f = PivotedCholesky::<f32>::factor_rounded(&gram_of(&dup), m, Pivoting::None, &budget)
            .unwrap()
            .unwrap();
        assert_eq!(f.rank(), 7);
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
        let chol = PivotedCholesky::factor(gram_of(&cols), 3, &budget)
            .unwrap()
            .unwrap();
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

    /// A Gram matrix of exactly 2^31 bytes (m = 16384), where the OpenBLAS
    /// that numpy and scipy bundle crashes in syrk and potrf: `G = B B^T`
    /// with `B` of rank 48, so the factorisation stops after 48 pivots but
    /// indexes the whole buffer. The factor must reproduce `G` and solve
    /// `G s = h` for `h` in its range.
    #[test]
    fn factors_a_gram_matrix_of_two_to_the_31_bytes() {
        let (m, k) = (16384usize, 48usize);
        assert_eq!(8 * m * m, 1usize << 31);
        let mut next = crate::linalg::matrix::testing::uniform(0x9E37_79B9_7F4A_7C15u64);
        let b: Vec<f64> = (0..m * k).map(|_| next()).collect();
        let row = |i: usize| &b[i * k..(i + 1) * k];
        let mut g = vec![0.0; m * m];
        g.par_chunks_mut(m).enumerate().for_each(|(j, col)| {
            for (i, x) in col.iter_mut().enumerate().skip(j) {
                *x = crate::linalg::matrix::dot(row(i), row(j));
            }
        });
        let cancel = AtomicBool::new(false);
        let budget = Budget::new(Limits::default(), &cancel);
        let chol = PivotedCholesky::factor(g, m, &budget).unwrap().unwrap();
        assert_eq!(chol.rank(), k);
        let decision = chol.rank_decision();
        assert!(decision.next_pivot.unwrap() <= decision.cutoff);
        // h = G x for a known x; the basic solution s must satisfy G s = h,
        // checked through B (G s = B (B^T s)) at every neuron.
        let x: Vec<f64> = (0..m).map(|i| ((i * 7919) % 13) as f64 - 6.0).collect();
        let bt = |v: &[f64]| -> Vec<f64> {
            let mut out = vec![0.0; k];
            for (i, &vi) in v.iter().enumerate() {
                for (o, &bij) in out.iter_mut().zip(row(i)) {
                    *o += vi * bij;
                }
            }
            out
        };
        let btx = bt(&x);
        let h: Vec<f64> = (0..m)
            .map(|i| crate::linalg::matrix::dot(row(i), &btx))
            .collect();
        let s = chol.solve(&h);
        let bts = bt(&s);
        let scale = h.iter().fold(0.0f64, |a, v| a.max(v.abs()));
        for (i, &hi) in h.iter().enumerate() {
            let gs = crate::linalg::matrix::dot(row(i), &bts);
            assert!((gs - hi).abs() <= 1e-8 * scale, "neuron {i}: {gs} vs {hi}");
        }
    }

    #[test]
    fn null_basis_in_chunks_gives_the_bits_of_one_solve() {
        // Rank 600 of 900: 300 free neurons, solved whole and in chunks of
        // 128 and 200, at 1 and 3 threads.
        let (m, k) = (900usize, 600usize);
        let mut next = crate::linalg::matrix::testing::uniform(5u64);
        let basis: Vec<Vec<f64>> = (0..k).map(|_| (0..k).map(|_| next()).collect()).collect();
        let cols: Vec<Vec<f64>> = (0..m)
            .map(|i| {
                if i < k {
                    basis[i].clone()
                } else {
                    // Sums of two earlier columns: in the span.
                    let (a, b) = (&basis[(7 * i) % k], &basis[(13 * i) % k]);
                    a.iter().zip(b).map(|(x, y)| x - 0.5 * y).collect()
                }
            })
            .collect();
        let g = gram_of(&cols);
        for threads in [1, 3] {
            crate::limits::on_threads(threads, || {
                let budget = Budget::unlimited();
                let chol = PivotedCholesky::factor(g.clone(), m, &budget)
                    .unwrap()
                    .unwrap();
                assert_eq!(chol.rank(), k);
                let whole = chol.null_basis_in_chunks(&budget, usize::MAX).unwrap();
                assert_eq!(whole.free.len(), m - k);
                for columns in [128, 200] {
                    let part = chol.null_basis_in_chunks(&budget, columns).unwrap();
                    assert!(part.free == whole.free && part.coefficients == whole.coefficients);
                }
                let set = AtomicBool::new(true);
                let stopped = Budget::new(Limits::default(), &set);
                assert_eq!(chol.null_basis(&stopped).err(), Some(Stop::Interrupted));
            });
        }
    }

    #[test]
    fn cancel_flag_stops_the_factorisation() {
        use std::sync::atomic::Ordering;
        use std::time::{Duration, Instant};
        // G = B B^T + I, m = 3000, of full rank: the factorisation is some
        // 9 G floating-point operations, tenths of a second on two threads;
        // the flag is set 20 ms in, and it stops at the next column of a
        // panel or block of a trailing update.
        let (m, k) = (3000usize, 64usize);
        let mut next = crate::linalg::matrix::testing::uniform(11u64);
        let b: Vec<f64> = (0..m * k).map(|_| next()).collect();
        let mut g = vec![0.0; m * m];
        g.par_chunks_mut(m).enumerate().for_each(|(j, col)| {
            for (i, x) in col.iter_mut().enumerate().skip(j) {
                let d = crate::linalg::matrix::dot(&b[i * k..(i + 1) * k], &b[j * k..(j + 1) * k]);
                *x = d + if i == j { 1.0 } else { 0.0 };
            }
        });
        let set = AtomicBool::new(true);
        let budget = Budget::new(Limits::default(), &set);
        assert_eq!(
            PivotedCholesky::factor(g.clone(), m, &budget).err(),
            Some(Stop::Interrupted)
        );
        let cancel = AtomicBool::new(false);
        let budget = Budget::new(Limits::default(), &cancel);
        let (got, latency) = crate::limits::on_threads(2, || {
            std::thread::scope(|scope| {
                let setter = scope.spawn(|| {
                    std::thread::sleep(Duration::from_millis(20));
                    cancel.store(true, Ordering::Relaxed);
                    Instant::now()
                });
                let got = PivotedCholesky::factor(g, m, &budget).err();
                let set = setter.join().unwrap();
                (got, Instant::now().saturating_duration_since(set))
            })
        });
        assert_eq!(got, Some(Stop::Interrupted));
        assert!(latency < Duration::from_secs(1), "{latency:?}");
    }

    #[test]
    fn factor_does_not_depend_on_the_thread_count() {
        let (m, k) = (900usize, 600usize);
        let mut next = crate::linalg::matrix::testing::uniform(7u64);
        let cols: Vec<Vec<f64>> = (0..m).map(|_| (0..k).map(|_| next()).collect()).collect();
        let g = gram_of(&cols);
        let h: Vec<f64> = (0..m).map(|i| (i % 5) as f64).collect();
        let run = |threads: usize| {
            crate::limits::on_threads(threads, || {
                let cancel = AtomicBool::new(false);
                let budget = Budget::new(Limits::default(), &cancel);
                let chol = PivotedCholesky::factor(g.clone(), m, &budget)
                    .unwrap()
                    .unwrap();
                (
                    chol.rank(),
                    chol.pivots().to_vec(),
                    chol.solve(&h),
                    chol.l.clone(),
                )
            })
        };
        let one = run(1);
        assert_eq!(one.0, k);
        for threads in [2, 3, 4] {
            assert!(one == run(threads), "threads = {threads}");
        }
    }
}
