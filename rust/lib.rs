//! skipsearch core: decide whether a residual MLP block `x -> A x + f(x)`
//! can be rewritten as a skip-free MLP of the same width by flipping a set
//! of neurons (Mijoski & Karbevski 2026, arXiv:2604.23705).
//!
//! Two engines, one folder each:
//!
//! - [`absorption`]: the decision for float weights (relaxation,
//!   certificate, null space, windows, branch and bound, verification);
//! - [`subset_sum`]: exact 0/1 subset sum, for integer instances and for the
//!   small float systems the absorption engine hands over.
//!
//! Shared pieces: [`linalg`] (row-major matrices and the bridge to faer,
//! the SIMD kernels chosen at run time, the pivoted Cholesky factor),
//! [`rigor`] (rigorous rounding bounds, exact expansions and the IEEE
//! environment they assume), [`limits`] (deadlines, cancellation, worker
//! pools), [`rng`] (the seeded generators) and [`error`].
//! The PyO3 bindings live in their own module, `python`, built only with the
//! `python` feature.

pub mod absorption;
pub mod error;
pub mod limits;
pub mod linalg;
pub mod rigor;
pub mod rng;
pub mod subset_sum;

#[cfg(feature = "python")]
mod python;

pub use absorption::block::Block;
pub use absorption::genericity::{GenericityCheck, GenericityReport};
pub use absorption::{decide, Evidence, Finding, Numerics, Options, Outcome};
pub use error::Error;
pub use limits::{Limits, Stop};
pub use linalg::matrix::Matrix;
