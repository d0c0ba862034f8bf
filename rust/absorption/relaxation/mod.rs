//! Stage 3: the least-squares relaxation of the flip condition.
//!
//! With `R_i = c v_i u_i^T` and `T = -A`, the relaxation minimises
//! `|| sum_i s_i R_i - T ||_F` over real `s`. Its normal equations use the
//! `m x m` Gram matrix `G_ij = <R_i, R_j> = c^2 (v_i . v_j)(u_i . u_j)` and
//! `h_i = <R_i, T> = -c v_i^T A u_i`, so the cost is `O(m^2 d + m^3)` and the
//! `(d_out d_in) x m` system is never formed (Mijoski & Karbevski 2026 state
//! the condition; the Gram form is ours).
//!
//! The Gram matrix is built by faer's GEMM in fixed blocks of columns, the
//! lower triangle only, each block on one thread (`Par::Seq` inside a rayon
//! loop), so every entry is computed the same way whatever the thread
//! count. It is stored column-major, ready to be factored in place: the
//! float64 path holds one `m x m` buffer, where numpy's
//! `(W_down.T @ W_down) * (W_up @ W_up.T)` holds three; the float32 path
//! ([`float32_solution`]) holds a float32 copy beside it (1.5 buffers),
//! within what [`exact_path_bytes`] allows.

pub mod certified;
pub mod conjugate_gradients;

use faer::{Accum, MatMut, MatRef, Par};
use rayon::prelude::*;

use crate::absorption::block::Block;
use crate::limits::{Budget, Stop};
use crate::linalg::cholesky::{PivotedCholesky, Pivoting, Real};
use crate::linalg::matrix::{gemm_polled, Matrix};

/// Columns per block of the Gram assembly (256 measured fastest of
/// 64-512 at 2048 x 8192 on AVX2).
const GRAM_COLUMNS: usize = 256;

/// Rows per step within a block of columns.
const GRAM_ROWS: usize = 1024;

/// Bytes the exact path needs for a block of width `m`: the Gram matrix,
/// factored in place (8 m^2), and, for the complete search of degenerate
/// blocks, a second copy and the inverse pivot block (8 m^2 more at most,
/// counted here so the guard never underestimates).
pub fn exact_path_bytes(m: usize) -> u128 {
    16 * (m as u128) * (m as u128)
}

/// The lower triangle (column-major, `m x m`) of the Gram matrix
/// `c^2 (V V^T) o (U U^T)`; the strict upper triangle is left zero.
pub fn gram_lower(block: &Block, budget: &Budget) -> Result<Vec<f64>, Stop> {
    let c = block.flip_constant;
    gram_lower_of(block.w_up.view(), block.w_down.view(), c * c, budget)
}

/// [`gram_lower`] in float32, from float32 copies of the weights: a
/// candidate's Gram matrix only (see [`certified::float32_gram_relaxation`]),
/// half the memory and twice the rate of the float64 one; `None` when an
/// entry is not finite in float32 (the float64 path then decides).
pub fn gram_lower_f32(block: &Block, budget: &Budget) -> Result<Option<Vec<f32>>, Stop> {
    let narrow = |w: &Matrix| -> Vec<f32> { w.data().par_iter().map(|&x| x as f32).collect() };
    let (m, d_in) = block.w_up.shape();
    let d_out = block.w_down.rows();
    let (up, down) = (narrow(&block.w_up), narrow(&block.w_down));
    let c = block.flip_constant;
    let gram = gram_lower_of(
        MatRef::from_row_major_slice(&up, m, d_in),
        MatRef::from_row_major_slice(&down, d_out, m),
        (c * c) as f32,
        budget,
    )?;
    Ok(gram.iter().all(|x| x.is_finite()).then_some(gram))
}

/// [`gram_lower`] of the weights `wu` (`m x d_in`) and `wd` (`d_out x m`)
/// with `c^2`, in either precision.
fn gram_lower_of<T: Real>(
    wu: MatRef<'_, T>,
    wd: MatRef<'_, T>,
    c2: T,
    budget: &Budget,
) -> Result<Vec<T>, Stop> {
    let m = wu.nrows();
    let mut gram = vec![T::zero(); m * m];
    if m == 0 {
        return Ok(gram);
    }
    gram.par_chunks_mut(GRAM_COLUMNS * m)
        .enumerate()
        .try_for_each(|(blk, chunk)| {
            budget.check()?;
            let j0 = blk * GRAM_COLUMNS;
            let cols = chunk.len() / m;
            let rows = m - j0;
            let mut block_cols = MatMut::from_column_major_slice_mut(chunk, m, cols);
            // Rows j0..m in chunks, so the U U^T temporary stays small.
            let mut uu = vec![T::zero(); GRAM_ROWS.min(rows) * cols];
            for r0 in (j0..m).step_by(GRAM_ROWS) {
                // Each step is two GEMMs of GRAM_ROWS x GRAM_COLUMNS x d
                // on one thread (0.1 s at d = 6000): they poll the limits
                // per tile of rows, the same bits as whole calls.
                let len = GRAM_ROWS.min(m - r0);
                let mut dst = block_cols.as_mut().subrows_mut(r0, len);
                // c^2 V[r0..] V[j0..j0+cols]^T, with V = W_down^T.
                gemm_polled(
                    dst.as_mut(),
                    Accum::Replace,
                    wd.subcols(r0, len).transpose(),
                    wd.subcols(j0, cols),
                    c2,
                    Par::Seq,
                    budget,
                )?;
                gemm_polled(
                    MatMut::from_column_major_slice_mut(&mut uu[..len * cols], len, cols),
                    Accum::Replace,
                    wu.subrows(r0, len),
                    wu.subrows(j0, cols).transpose(),
                    T::one(),
                    Par::Seq,
                    budget,
                )?;
                for k in 0..cols {
                    for (i, &x) in uu[k * len..(k + 1) * len].iter().enumerate() {
                        dst[(i, k)] *= x;
                    }
                }
            }
            Ok(())
        })?;
    // Clear the strict upper triangle the diagonal blocks computed.
    gram.par_chunks_mut(m).enumerate().for_each(|(j, col)| {
        col[..j].iter_mut().for_each(|x| *x = T::zero());
    });
    Ok(gram)
}

/// The full symmetric Gram matrix (row-major, equal to its transpose).
/// Callers check that the lower triangle is finite first (the decision
/// does, before factoring it); an overflowed entry is an error here.
pub fn gram_full(block: &Block, budget: &Budget) -> Result<Matrix<'static>, Stop> {
    let m = block.width();
    let mut g = gram_lower(block, budget)?;
    mirror_lower(&mut g, m);
    budget.check()?;
    Ok(Matrix::from_vec("gram", m, m, g).expect("finite, and the shape matches"))
}

/// Turn `gram_lower`'s column-major lower triangle into the full symmetric
/// matrix (row-major, equal to its transpose): column-major lower is
/// row-major upper, mirrored below the diagonal in square tiles so the
/// strided reads stay in cache.
pub fn mirror_lower(g: &mut [f64], m: usize) {
    const TILE: usize = 64;
    for i0 in (0..m).step_by(TILE) {
        for j0 in (0..=i0).step_by(TILE) {
            for i in i0..(i0 + TILE).min(m) {
                for j in j0..(j0 + TILE).min(i) {
                    g[i * m + j] = g[j * m + i];
                }
            }
        }
    }
}

/// Multiply-adds per second of one thread in the exact path's products,
/// measured once per process on a float64 GEMM of 512 x 512 x 512 (best
/// of three, some 10 ms in all): the rate the cost model scales by.
pub fn calibrated_rate() -> f64 {
    static RATE: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *RATE.get_or_init(|| {
        let n = 512;
        let a = vec![0.5f64; n * n];
        let mut c = vec![0.0f64; n * n];
        let mut best = f64::INFINITY;
        for _ in 0..3 {
            let t = std::time::Instant::now();
            crate::linalg::matrix::gemm(
                MatMut::from_column_major_slice_mut(&mut c, n, n),
                Accum::Replace,
                faer::MatRef::from_column_major_slice(&a, n, n),
                faer::MatRef::from_column_major_slice(&a, n, n),
                1.0,
                Par::Seq,
            );
            best = best.min(t.elapsed().as_secs_f64());
        }
        ((n * n * n) as f64 / best.max(1e-6)).max(1e8)
    })
}

/// Estimated seconds of the exact path for a block of `m` neurons and a
/// `d_out x d_in` skip on `threads` threads: the Gram matrix's lower
/// triangle (`m^2 (d_out + d_in) / 2` multiply-adds), its Cholesky factor
/// (`m^3 / 6`, at 1.3 times the rate in float32: its panels are bound by
/// memory, measured at 4096 x 16384 on AVX2) and, when the certificate
/// `Y` is formed, two passes over the weights (`2 m d_out d_in`; the
/// Gram certificate's `O(m^2)` is left out), at the [`calibrated_rate`]
/// per thread with 85% parallel efficiency. The factor is counted even
/// though conjugate gradients usually replace it from 4096 neurons
/// ([`crate::absorption::relaxation::conjugate_gradients`]): it is what the call
/// may take when they do not. An estimate for choosing a path, never part
/// of a result.
pub fn exact_path_seconds(
    (m, d_out, d_in): (usize, usize, usize),
    threads: usize,
    float32: bool,
    formed_certificate: bool,
) -> f64 {
    let (m, d_out, d_in) = (m as f64, d_out as f64, d_in as f64);
    let factor = m * m * m / 6.0 / if float32 { 1.3 } else { 1.0 };
    let passes = if formed_certificate { 2.0 } else { 0.0 };
    let work = m * m * (d_out + d_in) / 2.0 + factor + passes * m * d_out * d_in;
    let rate = calibrated_rate() * (threads.max(1) as f64) * 0.85;
    work / rate
}

/// Columns per chunk of [`lower_matvec`].
const MATVEC_COLUMNS: usize = 256;

/// `G s` from the lower triangle of `G` (`m x m` column-major, as
/// [`gram_lower`] leaves it). Fixed chunks of columns, each summed into a
/// vector of its own on one thread, then added in chunk order: the same
/// bits for every thread count. Memory-bound (one read of the triangle).
pub fn lower_matvec<T: Real>(g: &[T], m: usize, s: &[f64]) -> Vec<f64> {
    let chunks: Vec<(usize, Vec<f64>)> = (0..m.div_ceil(MATVEC_COLUMNS))
        .into_par_iter()
        .map(|c| {
            let j0 = c * MATVEC_COLUMNS;
            let mut y = vec![0.0; m - j0];
            for j in j0..(j0 + MATVEC_COLUMNS).min(m) {
                let col = &g[j * m + j..(j + 1) * m];
                let sj = s[j];
                // Row j: the column below the diagonal against s; rows
                // below: the column times s_j (G is symmetric).
                let mut acc = col[0].to_f64() * sj;
                for ((yi, &gij), &si) in y[j - j0 + 1..].iter_mut().zip(&col[1..]).zip(&s[j + 1..])
                {
                    let gij = gij.to_f64();
                    acc += gij * si;
                    *yi += gij * sj;
                }
                y[j - j0] += acc;
            }
            (j0, y)
        })
        .collect();
    let mut out = vec![0.0; m];
    for (j0, y) in chunks {
        for (o, v) in out[j0..].iter_mut().zip(y) {
            *o += v;
        }
    }
    out
}

/// How the float32 factor pivots: not at all. It is used only when of full
/// rank (the float64 factor, which pivots, reveals the rank otherwise),
/// Cholesky needs no pivoting for stability, and the swaps' strided walks
/// cost a third of the factor (at m = 16384 on AVX2: 12.3 s unpivoted,
/// 17.7 s with diagonal pivoting).
const FLOAT32_PIVOTING: Pivoting = Pivoting::None;

/// A float32 factor of the Gram matrix and the refined solution it gave.
pub type Float32Solution = (PivotedCholesky<f32>, Vec<f64>);

/// Refinement steps on the normal equations after a float32 solve.
const NORMAL_REFINEMENT_STEPS: usize = 40;

/// The least-squares solution of `G s = h` through a float32 factor of `G`
/// (`gram`, the float64 lower triangle, left as it is), refined on the
/// normal equations with float64 residuals (see [`refine_on_normal_equations`]).
/// `None` when float32 cannot serve: the float32 factor is not of full rank,
/// or the refinement does not converge (`kappa(G)` near `1 / eps32`); the
/// caller then factors in float64. What this solution proves is decided
/// afterwards by the float64 certificate alone.
pub fn float32_solution(
    gram: &[f64],
    m: usize,
    h: &[f64],
    budget: &Budget,
) -> Result<Option<Float32Solution>, Stop> {
    let Some(factor) = PivotedCholesky::<f32>::factor_rounded(gram, m, FLOAT32_PIVOTING, budget)?
    else {
        return Ok(None);
    };
    if factor.rank() < m {
        return Ok(None);
    }
    let s0 = factor.solve(h);
    let refined = refine_on_normal_equations(gram, m, h, s0, &|r| factor.solve(r), budget)?;
    Ok(refined.map(|s| (factor, s)))
}

/// Classical mixed-precision iterative refinement of `G s = h` from `s`:
/// `s += solve(h - G s)`, the residual in float64 from the lower triangle
/// `gram` (each step shrinks the error by about `kappa(G)` times the
/// precision of `solve`). At most `NORMAL_REFINEMENT_STEPS` steps; `None`
/// when the steps stop shrinking before they are below `1e-7` of the
/// solution, or grow non-finite.
pub fn refine_on_normal_equations(
    gram: &[f64],
    m: usize,
    h: &[f64],
    mut s: Vec<f64>,
    solve: &dyn Fn(&[f64]) -> Vec<f64>,
    budget: &Budget,
) -> Result<Option<Vec<f64>>, Stop> {
    let max_abs = |v: &[f64]| v.iter().fold(0.0f64, |a, x| a.max(x.abs()));
    let mut last = f64::INFINITY;
    for _ in 0..NORMAL_REFINEMENT_STEPS {
        budget.check()?;
        let gs = lower_matvec(gram, m, &s);
        let r: Vec<f64> = h.iter().zip(&gs).map(|(a, b)| a - b).collect();
        let step = solve(&r);
        let size = max_abs(&step);
        if !size.is_finite() {
            return Ok(None);
        }
        let scale = max_abs(&s).max(f64::MIN_POSITIVE);
        if size > 0.5 * last {
            // No longer contracting: at float64's floor, or diverging.
            return Ok((size <= 1e-7 * scale).then_some(s));
        }
        s.iter_mut().zip(&step).for_each(|(x, d)| *x += d);
        if size <= 1e-15 * scale {
            return Ok(Some(s));
        }
        last = size;
    }
    Ok((last <= 1e-7 * max_abs(&s).max(f64::MIN_POSITIVE)).then_some(s))
}

/// A 64-bit fingerprint of what the Gram matrix depends on: the bits of
/// `W_up`, `W_down` and `c`, folded in fixed chunks (the same for every
/// thread count). The bracket reuses a decision's Gram matrix only for a
/// block with the same fingerprint.
pub fn gram_fingerprint(block: &Block) -> u64 {
    const CHUNK: usize = 1 << 16;
    fn mix(h: u64, x: u64) -> u64 {
        (h ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29)
    }
    let fold = |data: &[f64]| -> u64 {
        data.par_chunks(CHUNK)
            .map(|c| {
                c.iter()
                    .fold(0x243F_6A88_85A3_08D3, |h, x| mix(h, x.to_bits()))
            })
            .collect::<Vec<u64>>()
            .into_iter()
            .fold(data.len() as u64, mix)
    };
    let (u, v) = (block.w_up.data(), block.w_down.data());
    let mut h = mix(block.width() as u64, block.flip_constant.to_bits());
    h = mix(h, block.w_down.rows() as u64);
    h = mix(h, fold(u));
    mix(h, fold(v))
}

/// The right-hand side `h_i = <R_i, -A> = -c v_i^T A u_i`.
pub fn rhs(block: &Block) -> Vec<f64> {
    let mut h = block.inner_products(&block.skip);
    h.iter_mut().for_each(|x| *x = -*x);
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    use crate::limits::Limits;
    use crate::linalg::matrix::dot;

    use crate::absorption::block::testing::random_block;

    #[test]
    fn gram_matches_its_definition() {
        let block = random_block(300, 7, 3);
        let cancel = AtomicBool::new(false);
        let budget = Budget::new(Limits::default(), &cancel);
        let g = gram_full(&block, &budget).unwrap();
        let v = block.w_down.transpose();
        for i in (0..300).step_by(7) {
            for j in (0..300).step_by(11) {
                let want = dot(v.row(i), v.row(j)) * dot(block.w_up.row(i), block.w_up.row(j));
                assert!(
                    (g.get(i, j) - want).abs() <= 1e-13 * (1.0 + want.abs()),
                    "{i} {j}"
                );
            }
        }
        let h = rhs(&block);
        for (i, &hi) in h.iter().enumerate() {
            let want = -dot(v.row(i), block.w_up.row(i));
            assert!((hi - want).abs() <= 1e-14);
        }
    }

    #[test]
    fn polled_gram_gives_the_bits_of_whole_gemms() {
        // d = 4200: each chunk of 1024 rows is polled in two tiles of rows.
        // The reference computes every chunk by one GEMM per factor.
        let (m, d) = (1100, 4200);
        let block = random_block(m, d, 9);
        let c = block.flip_constant;
        let (wu, wd) = (block.w_up.view(), block.w_down.view());
        let mut want = vec![0.0; m * m];
        for j0 in (0..m).step_by(GRAM_COLUMNS) {
            let cols = GRAM_COLUMNS.min(m - j0);
            for r0 in (j0..m).step_by(GRAM_ROWS) {
                let len = GRAM_ROWS.min(m - r0);
                let mut vv = vec![0.0; len * cols];
                let mut uu = vec![0.0; len * cols];
                crate::linalg::matrix::gemm(
                    MatMut::from_column_major_slice_mut(&mut vv, len, cols),
                    Accum::Replace,
                    wd.subcols(r0, len).transpose(),
                    wd.subcols(j0, cols),
                    c * c,
                    Par::Seq,
                );
                crate::linalg::matrix::gemm(
                    MatMut::from_column_major_slice_mut(&mut uu, len, cols),
                    Accum::Replace,
                    wu.subrows(r0, len),
                    wu.subrows(j0, cols).transpose(),
                    1.0,
                    Par::Seq,
                );
                for k in 0..cols {
                    for i in 0..len {
                        let (row, col) = (r0 + i, j0 + k);
                        if row >= col {
                            want[col * m + row] = vv[k * len + i] * uu[k * len + i];
                        }
                    }
                }
            }
        }
        let cancel = AtomicBool::new(false);
        let budget = Budget::new(Limits::default(), &cancel);
        assert!(gram_lower(&block, &budget).unwrap() == want);
        let stopped = AtomicBool::new(true);
        let budget = Budget::new(Limits::default(), &stopped);
        assert_eq!(gram_lower(&block, &budget).err(), Some(Stop::Interrupted));
    }

    #[test]
    fn gram_and_products_do_not_depend_on_the_thread_count() {
        let block = random_block(700, 40, 5);
        let run = |threads: usize| {
            crate::limits::on_threads(threads, || {
                let cancel = AtomicBool::new(false);
                let budget = Budget::new(Limits::default(), &cancel);
                let g = gram_lower(&block, &budget).unwrap();
                let s: Vec<f64> = (0..700).map(|i| (i % 3) as f64 * 0.25).collect();
                let e = block.residual(&s);
                let y = block.inner_products(&e);
                (g, e, y)
            })
        };
        let one = run(1);
        for threads in [2, 3, 4] {
            assert!(one == run(threads), "threads = {threads}");
        }
    }
}
