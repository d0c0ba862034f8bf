//! A dense row-major matrix, the dot product every stage is built on, and
//! the bridge to faer, whose GEMM, triangular solves and pivoted Cholesky
//! carry the dense linear algebra.
//!
//! faer's kernels split work over threads by output blocks and keep each
//! entry's reduction order fixed, so their results do not depend on the
//! thread count (checked by the tests of `absorption::relaxation` and
//! `absorption::cholesky`).

use std::borrow::Cow;

use faer::{Accum, MatMut, MatRef, Par};
use rayon::prelude::*;

use crate::error::Error;
use crate::limits::{Budget, Stop};

/// `dst = beta * dst + alpha * lhs rhs` (`beta` is 0 or 1 through
/// [`faer::Accum`]) by the gemm crate's kernels, on faer views of any
/// strides. Its parallel split is over blocks of the output, never over the
/// sum, so every entry is computed the same way for any thread count.
pub fn gemm(
    dst: MatMut<'_, f64>,
    beta: Accum,
    lhs: MatRef<'_, f64>,
    rhs: MatRef<'_, f64>,
    alpha: f64,
    par: Par,
) {
    gemm_t(dst, beta, lhs, rhs, alpha, par);
}

/// [`gemm()`] for float64 or float32 (the float32 factor of the exact path).
pub fn gemm_t<T: num_traits::Float + 'static>(
    dst: MatMut<'_, T>,
    beta: Accum,
    lhs: MatRef<'_, T>,
    rhs: MatRef<'_, T>,
    alpha: T,
    par: Par,
) {
    let parallelism = match par {
        Par::Seq => gemm::Parallelism::None,
        Par::Rayon(n) => gemm::Parallelism::Rayon(n.get()),
    };
    let read_dst = beta == Accum::Add;
    let dst_factor = if read_dst { T::one() } else { T::zero() };
    gemm_crate(dst, read_dst, dst_factor, lhs, rhs, alpha, parallelism);
}

/// `dst = lhs rhs` in float32, on one thread, by the gemm crate's kernels
/// (as [`gemm()`]). Not faer's own float32 product: that keeps two copies of
/// the L3 cache (64 MiB here) per thread in a buffer it allocates
/// infallibly, which aborts the process under an address-space limit.
pub fn gemm_f32(dst: MatMut<'_, f32>, lhs: MatRef<'_, f32>, rhs: MatRef<'_, f32>) {
    gemm_crate(dst, false, 0.0, lhs, rhs, 1.0, gemm::Parallelism::None);
}

/// `dst = dst_factor dst + alpha lhs rhs` (`dst` read only when `read_dst`)
/// through the gemm crate, for [`gemm()`] and [`gemm_f32`].
fn gemm_crate<T: Copy + 'static>(
    dst: MatMut<'_, T>,
    read_dst: bool,
    dst_factor: T,
    lhs: MatRef<'_, T>,
    rhs: MatRef<'_, T>,
    alpha: T,
    parallelism: gemm::Parallelism,
) {
    let (m, n) = (dst.nrows(), dst.ncols());
    let k = lhs.ncols();
    assert!(
        lhs.nrows() == m && rhs.nrows() == k && rhs.ncols() == n,
        "gemm: shapes ({m}, {n}) <- ({}, {}) x ({}, {})",
        lhs.nrows(),
        lhs.ncols(),
        rhs.nrows(),
        rhs.ncols()
    );
    if m == 0 || n == 0 {
        return;
    }
    // SAFETY: faer views are in bounds for their shapes and strides; `dst`
    // is a unique borrow, so it aliases neither input; when `read_dst` is
    // false the destination is only written (its factor is not applied).
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_ptr_mut(),
            dst.col_stride(),
            dst.row_stride(),
            read_dst,
            lhs.as_ptr(),
            lhs.col_stride(),
            lhs.row_stride(),
            rhs.as_ptr(),
            rhs.col_stride(),
            rhs.row_stride(),
            dst_factor,
            alpha,
            false,
            false,
            false,
            parallelism,
        );
    }
}

/// Multiply-adds per tile of [`gemm_polled`]: about 10 ms of one core's
/// work on a machine of 2020, 5 ms on two.
pub const POLL_WORK: usize = 1 << 28;

/// Fewest output rows in a tile of [`gemm_polled`]. Above 64 the gemm crate
/// picks its depth blocking from the inner dimension alone, so a tile's
/// entries are computed exactly as in one call over the whole output.
/// Each tile packs the whole right-hand side again, so tiles of fewer rows
/// spend a larger share on packing: 256 rows cost 3% there, 128 rows 15 to
/// 25% (at 4096 x 4096 x 2048 on AVX2). With a long inner dimension a tile
/// is then more than [`POLL_WORK`]: about 70 ms of two cores at that shape.
pub const MIN_TILE_ROWS: usize = 256;

/// [`gemm()`] in tiles of output rows, with `budget` checked before each:
/// a limit or a cancel stops the product within one tile's work
/// ([`POLL_WORK`] multiply-adds, or [`MIN_TILE_ROWS`] rows), instead of at
/// its end. Each tile keeps the inner dimension whole and has more than
/// 64 rows, so every entry is computed as one call over the whole output
/// would compute it (checked by the tests): the result does not depend on
/// the tiling, nor (as with [`gemm()`]) on the thread count. On a stop, `dst`
/// is left partly updated; callers drop it.
pub fn gemm_polled<T: num_traits::Float + 'static>(
    dst: MatMut<'_, T>,
    beta: Accum,
    lhs: MatRef<'_, T>,
    rhs: MatRef<'_, T>,
    alpha: T,
    par: Par,
    budget: &Budget,
) -> Result<(), Stop> {
    let per_row = lhs.ncols().saturating_mul(dst.ncols()).max(1);
    let rows = (POLL_WORK / per_row).max(MIN_TILE_ROWS);
    gemm_in_row_tiles(dst, beta, lhs, rhs, alpha, par, budget, rows)
}

/// [`gemm_polled`] with tiles of at least `rows` output rows (never fewer
/// than [`MIN_TILE_ROWS`]). The output's rows are split into `nrows / rows`
/// tiles of nearly equal size, so none is smaller.
// Many parameters on purpose: a GEMM's operands, strides and tiling, as BLAS takes them.
#[allow(clippy::too_many_arguments)]
pub fn gemm_in_row_tiles<T: num_traits::Float + 'static>(
    mut dst: MatMut<'_, T>,
    beta: Accum,
    lhs: MatRef<'_, T>,
    rhs: MatRef<'_, T>,
    alpha: T,
    par: Par,
    budget: &Budget,
    rows: usize,
) -> Result<(), Stop> {
    let m = dst.nrows();
    // Two columns or fewer: the gemm crate's small-output kernels would
    // take a tile of them (not the whole) and sum in another order; such
    // products are cheap, so they run whole.
    let tiles = if dst.ncols() > 2 {
        (m / rows.max(MIN_TILE_ROWS)).max(1)
    } else {
        1
    };
    for t in 0..tiles {
        budget.check()?;
        let (r0, r1) = (t * m / tiles, (t + 1) * m / tiles);
        gemm_t(
            dst.as_mut().subrows_mut(r0, r1 - r0),
            beta,
            lhs.subrows(r0, r1 - r0),
            rhs,
            alpha,
            par,
        );
    }
    Ok(())
}

/// Columns per chunk of [`column_fold`].
const FOLD_COLUMNS: usize = 2048;

/// `acc_j = f(... f(f(init, j, w[0][j]), j, w[1][j]) ..., j, w[rows-1][j])`
/// for every column `j` of the row-major `w`: chunks of columns on the
/// threads, each column folded over the rows in order, so the bits do not
/// depend on the thread count. One streaming pass, rows read contiguously.
/// Runs on the current rayon pool: call it inside the decision's own.
pub fn column_fold(w: &Matrix, init: f64, f: impl Fn(f64, usize, f64) -> f64 + Sync) -> Vec<f64> {
    let (rows, cols) = w.shape();
    let mut acc = vec![init; cols];
    acc.par_chunks_mut(FOLD_COLUMNS)
        .enumerate()
        .for_each(|(b, out)| {
            let j0 = b * FOLD_COLUMNS;
            for p in 0..rows {
                let row = &w.row(p)[j0..j0 + out.len()];
                for (k, (a, &x)) in out.iter_mut().zip(row).enumerate() {
                    *a = f(*a, j0 + k, x);
                }
            }
        });
    acc
}

/// faer's parallelism for the current rayon pool.
pub fn par() -> Par {
    let n = rayon::current_num_threads();
    if n <= 1 {
        Par::Seq
    } else {
        Par::rayon(n)
    }
}

/// Dense row-major `rows x cols` matrix of `f64`, owned or borrowed: the
/// weights of a block are read in place from the caller's buffers (no copy
/// of the largest arrays); writing to a borrowed matrix copies it first, so
/// the caller's data is never modified.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix<'a> {
    rows: usize,
    cols: usize,
    data: Cow<'a, [f64]>,
}

impl Matrix<'static> {
    pub fn zeros(rows: usize, cols: usize) -> Self {
        Matrix {
            rows,
            cols,
            data: Cow::Owned(vec![0.0; rows * cols]),
        }
    }

    /// Wrap row-major data; `argument` names the array in the error.
    pub fn from_vec(
        argument: &'static str,
        rows: usize,
        cols: usize,
        data: Vec<f64>,
    ) -> Result<Self, Error> {
        Matrix::checked(argument, rows, cols, Cow::Owned(data))
    }

    pub fn identity(n: usize) -> Self {
        let mut m = Matrix::zeros(n, n);
        for i in 0..n {
            m.data.to_mut()[i * n + i] = 1.0;
        }
        m
    }
}

/// Whether every entry is finite: `x * 0` is 0 for a finite `x` and NaN
/// otherwise, so a chunk's sum of them is 0 exactly when the chunk is
/// finite (sums without an early exit, which vectorise: the weights of a
/// large block are read at memory speed).
fn all_finite(data: &[f64]) -> bool {
    data.chunks(1 << 12).all(|chunk| {
        // Eight independent sums, so that the loop vectorises.
        let mut lanes = [0.0f64; 8];
        let mut exact = chunk.chunks_exact(8);
        for group in &mut exact {
            for (lane, &x) in lanes.iter_mut().zip(group) {
                *lane += x * 0.0;
            }
        }
        let tail: f64 = exact.remainder().iter().map(|&x| x * 0.0).sum();
        lanes.iter().sum::<f64>() + tail == 0.0
    })
}

impl<'a> Matrix<'a> {
    /// Borrow row-major data in place; `argument` names the array in the error.
    pub fn from_slice(
        argument: &'static str,
        rows: usize,
        cols: usize,
        data: &'a [f64],
    ) -> Result<Self, Error> {
        Matrix::checked(argument, rows, cols, Cow::Borrowed(data))
    }

    fn checked(
        argument: &'static str,
        rows: usize,
        cols: usize,
        data: Cow<'a, [f64]>,
    ) -> Result<Self, Error> {
        if data.len() != rows * cols {
            return Err(Error::Shape {
                argument,
                expected: format!("{} values for ({rows}, {cols})", rows * cols),
                got: format!("{} values", data.len()),
            });
        }
        // On the caller's thread: the bindings build matrices before any
        // worker pool exists, and starting rayon's global pool can fail
        // (under an address-space limit) where this loop cannot.
        if !all_finite(&data) {
            return Err(Error::NonFinite { argument });
        }
        Ok(Matrix { rows, cols, data })
    }

    /// An owned copy (a no-op move when already owned).
    pub fn into_owned(self) -> Matrix<'static> {
        Matrix {
            rows: self.rows,
            cols: self.cols,
            data: Cow::Owned(self.data.into_owned()),
        }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    pub fn shape(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }

    pub fn data(&self) -> &[f64] {
        &self.data
    }

    /// Mutable data; a borrowed matrix is copied first.
    pub fn data_mut(&mut self) -> &mut [f64] {
        self.data.to_mut()
    }

    pub fn into_vec(self) -> Vec<f64> {
        self.data.into_owned()
    }

    pub fn row(&self, i: usize) -> &[f64] {
        &self.data[i * self.cols..(i + 1) * self.cols]
    }

    pub fn get(&self, i: usize, j: usize) -> f64 {
        self.data[i * self.cols + j]
    }

    pub fn transpose(&self) -> Matrix<'static> {
        let mut t = vec![0.0; self.rows * self.cols];
        for i in 0..self.rows {
            for j in 0..self.cols {
                t[j * self.rows + i] = self.data[i * self.cols + j];
            }
        }
        Matrix {
            rows: self.cols,
            cols: self.rows,
            data: Cow::Owned(t),
        }
    }

    /// Frobenius norm, scaled by the largest entry so that neither tiny
    /// (below 1e-154) nor huge (above 1e154) entries under- or overflow.
    pub fn frobenius_norm(&self) -> f64 {
        scaled_norm(&self.data)
    }

    /// A faer view of the matrix (row-major strides, no copy).
    pub fn view(&self) -> MatRef<'_, f64> {
        MatRef::from_row_major_slice(&self.data, self.rows, self.cols)
    }

    /// A mutable faer view of the matrix.
    pub fn view_mut(&mut self) -> MatMut<'_, f64> {
        MatMut::from_row_major_slice_mut(self.data.to_mut(), self.rows, self.cols)
    }
}

/// Dot product with four independent accumulators, so the compiler
/// vectorises it. The summation order is fixed, which keeps every result
/// independent of the thread count.
#[inline]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f64; 4];
    let chunks = n / 4;
    for k in 0..chunks {
        let i = 4 * k;
        acc[0] += a[i] * b[i];
        acc[1] += a[i + 1] * b[i + 1];
        acc[2] += a[i + 2] * b[i + 2];
        acc[3] += a[i + 3] * b[i + 3];
    }
    let mut tail = 0.0;
    for i in 4 * chunks..n {
        tail += a[i] * b[i];
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// Euclidean norm of `x`, computed without under- or overflow.
pub fn scaled_norm(x: &[f64]) -> f64 {
    let big = x.iter().fold(0.0f64, |acc, v| acc.max(v.abs()));
    if big == 0.0 || !big.is_finite() {
        return big;
    }
    big * x.iter().map(|v| (v / big) * (v / big)).sum::<f64>().sqrt()
}

/// `y += alpha * x`.
#[inline]
pub fn axpy(y: &mut [f64], alpha: f64, x: &[f64]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += alpha * xi;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_matches_naive_sum() {
        let a: Vec<f64> = (0..11).map(|i| i as f64 * 0.5).collect();
        let b: Vec<f64> = (0..11).map(|i| 3.0 - i as f64).collect();
        let naive: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - naive).abs() < 1e-12);
    }

    #[test]
    fn from_vec_rejects_bad_length_and_nan() {
        assert!(matches!(
            Matrix::from_vec("W", 2, 2, vec![1.0; 3]),
            Err(Error::Shape { .. })
        ));
        assert_eq!(
            Matrix::from_vec("W", 1, 2, vec![1.0, f64::NAN]),
            Err(Error::NonFinite { argument: "W" })
        );
    }

    #[test]
    fn one_entry_that_is_not_finite_is_found_anywhere() {
        // Across the eight lanes, the chunk boundary at 4096 and the
        // remainder; huge and tiny finite entries pass.
        let (rows, cols) = (3, 4100);
        let mut data = vec![1.0; rows * cols];
        data[7] = f64::MAX;
        data[8] = -f64::MIN_POSITIVE / 4.0;
        assert!(Matrix::from_vec("W", rows, cols, data.clone()).is_ok());
        for at in [0, 5, 4095, 4096, 4103, rows * cols - 1] {
            for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                let mut d = data.clone();
                d[at] = bad;
                assert_eq!(
                    Matrix::from_vec("W", rows, cols, d),
                    Err(Error::NonFinite { argument: "W" }),
                    "{bad} at {at}"
                );
            }
        }
    }

    use super::testing::noise;

    #[test]
    fn tiled_gemm_gives_the_bits_of_one_call() {
        use std::sync::atomic::AtomicBool;
        // Shapes around the gemm crate's blockings: depths below, at and
        // above its 512 (and not multiples of it), widths around 64, row
        // counts that do not divide into the tiles; row-major, transposed
        // and column-major operands; accumulate and replace.
        let cancel = AtomicBool::new(false);
        for &(m, n, k) in &[
            (700, 300, 1030),
            (517, 65, 512),
            (389, 130, 77),
            (1000, 3, 900),
        ] {
            let lhs = noise(m, k, 1);
            let rhs_t = noise(n, k, 2);
            let start = noise(m, n, 3);
            for threads in [1, 3] {
                crate::limits::on_threads(threads, || {
                    for beta in [Accum::Add, Accum::Replace] {
                        let mut whole = start.clone();
                        gemm(
                            whole.view_mut(),
                            beta,
                            lhs.view(),
                            rhs_t.view().transpose(),
                            -0.75,
                            par(),
                        );
                        for rows in [128, 200, 333, m] {
                            let budget = Budget::new(crate::limits::Limits::default(), &cancel);
                            let mut tiled = start.clone();
                            gemm_in_row_tiles(
                                tiled.view_mut(),
                                beta,
                                lhs.view(),
                                rhs_t.view().transpose(),
                                -0.75,
                                par(),
                                &budget,
                                rows,
                            )
                            .unwrap();
                            assert!(
                                whole == tiled,
                                "({m}, {n}, {k}) rows {rows} threads {threads} {beta:?}"
                            );
                        }
                        // Column-major output (the Gram and Cholesky layout).
                        let mut col_whole = vec![0.0; m * n];
                        let mut col_tiled = vec![0.0; m * n];
                        gemm(
                            MatMut::from_column_major_slice_mut(&mut col_whole, m, n),
                            beta,
                            lhs.view(),
                            rhs_t.view().transpose(),
                            1.0,
                            par(),
                        );
                        gemm_polled(
                            MatMut::from_column_major_slice_mut(&mut col_tiled, m, n),
                            beta,
                            lhs.view(),
                            rhs_t.view().transpose(),
                            1.0,
                            par(),
                            &Budget::unlimited(),
                        )
                        .unwrap();
                        assert!(col_whole == col_tiled, "column-major ({m}, {n}, {k})");
                    }
                });
            }
        }
    }

    #[test]
    fn cancel_flag_stops_a_tiled_gemm() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Barrier;
        use std::time::{Duration, Instant};
        let (m, n, k) = (3000, 1500, 1500);
        let lhs = noise(m, k, 4);
        let rhs = noise(k, n, 5);
        // A NaN-filled destination, so that untouched entries show.
        let nan_filled = || {
            let mut dst = Matrix::zeros(m, n);
            dst.data_mut().fill(f64::NAN);
            dst
        };
        // The product of lhs and rhs on one thread under `budget`.
        let product = |dst: &mut Matrix, budget: &Budget| {
            gemm_polled(
                dst.view_mut(),
                Accum::Replace,
                lhs.view(),
                rhs.view(),
                1.0,
                Par::Seq,
                budget,
            )
        };
        // Tiles of 2^28 / (1500 * 1500) = 119 rows, so MIN_TILE_ROWS: 11
        // tiles of 272 or 273 rows (3000 / 11).
        let tile_end = |t: usize| t * m / (m / MIN_TILE_ROWS);
        // Set before: nothing is computed.
        let cancel = AtomicBool::new(true);
        let mut dst = nan_filled();
        let got = product(
            &mut dst,
            &Budget::new(crate::limits::Limits::default(), &cancel),
        );
        assert_eq!(got, Err(Stop::Interrupted));
        assert!(dst.data().iter().all(|x| x.is_nan()));
        // A budget that runs out at its third check: exactly the first two
        // tiles are computed, and the product stops there.
        let never = AtomicBool::new(false);
        let budget = Budget::expiring_after_checks(2, &never);
        let mut dst = nan_filled();
        assert_eq!(product(&mut dst, &budget), Err(Stop::TimeLimit));
        assert_eq!(budget.checks_made(2), 3);
        let done = tile_end(2);
        assert!(dst.data()[..done * n].iter().all(|x| x.is_finite()));
        assert!(dst.data()[done * n..].iter().all(|x| x.is_nan()));
        // Set while it runs (6.75 G multiply-adds on one thread, a fraction
        // of a second to seconds): the setter starts its 20 ms once the
        // product is about to begin, and the product stops within a tile.
        let cancel = AtomicBool::new(false);
        let started = Barrier::new(2);
        let mut dst = nan_filled();
        let (got, latency) = std::thread::scope(|scope| {
            let setter = scope.spawn(|| {
                started.wait();
                std::thread::sleep(Duration::from_millis(20));
                cancel.store(true, Ordering::Relaxed);
                Instant::now()
            });
            let budget = Budget::new(crate::limits::Limits::default(), &cancel);
            started.wait();
            let got = product(&mut dst, &budget);
            let set = setter.join().unwrap();
            (got, Instant::now().saturating_duration_since(set))
        });
        assert_eq!(got, Err(Stop::Interrupted));
        // The last tile was never started.
        assert!(dst.row(m - 1).iter().all(|x| x.is_nan()));
        // One tile is 0.6 G multiply-adds: well under a second even on a
        // loaded machine.
        assert!(latency < Duration::from_secs(1), "{latency:?}");
    }

    #[test]
    fn transpose_round_trips() {
        let m = Matrix::from_vec("M", 2, 3, vec![1., 2., 3., 4., 5., 6.]).unwrap();
        let t = m.transpose();
        assert_eq!(t.shape(), (3, 2));
        assert_eq!(t.get(2, 1), 6.0);
        assert_eq!(t.transpose(), m);
    }
}

/// Seeded test data shared by the kernels' unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::Matrix;
    use crate::rng::Stream;

    /// Uniform numbers in `[-1/2, 1/2)` from the crate's generator started
    /// at `state`.
    pub(crate) fn uniform(state: u64) -> impl FnMut() -> f64 {
        let mut rng = crate::rng::SplitMix64::new(state);
        move || rng.centered()
    }

    /// A `rows x cols` matrix of [`uniform`] numbers, one stream per seed.
    pub(crate) fn noise(rows: usize, cols: usize, seed: u64) -> Matrix<'static> {
        let mut next = uniform(seed);
        let data = (0..rows * cols).map(|_| next()).collect();
        Matrix::from_vec("M", rows, cols, data).unwrap()
    }
}
