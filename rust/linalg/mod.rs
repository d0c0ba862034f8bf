//! Dense linear algebra the engines share: row-major matrices and the
//! bridge to faer's kernels (`matrix`), the SIMD kernels chosen at run time
//! for this CPU (`kernels`), the blocked, pivoted Cholesky factor with
//! its rank decision, solves and null basis (`cholesky`), and double-double
//! numbers for the LLL's fallback (`double_double`).
//!
//! Nothing here proves anything by itself: the rounding of these kernels is
//! bounded where their results are used (`rigor` and the stages of
//! `absorption`).

pub mod cholesky;
pub mod double_double;
pub mod kernels;
pub mod matrix;
