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

use crate::error::Error;

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
    let parallelism = match par {
        Par::Seq => gemm::Parallelism::None,
        Par::Rayon(n) => gemm::Parallelism::Rayon(n.get()),
    };
    let read_dst = beta == Accum::Add;
    // SAFETY: faer views are in bounds for their shapes and strides; `dst`
    // is a unique borrow, so it aliases neither input.
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
            if read_dst { 1.0 } else { 0.0 },
            alpha,
            false,
            false,
            false,
            parallelism,
        );
    }
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
        if data.iter().any(|x| !x.is_finite()) {
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
    fn transpose_round_trips() {
        let m = Matrix::from_vec("M", 2, 3, vec![1., 2., 3., 4., 5., 6.]).unwrap();
        let t = m.transpose();
        assert_eq!(t.shape(), (3, 2));
        assert_eq!(t.get(2, 1), 6.0);
        assert_eq!(t.transpose(), m);
    }
}
