//! What makes a float64 result a proof: rigorous bounds on rounding errors
//! and exact sums in float64 expansions (`rounding`), and the IEEE
//! environment (round to nearest, no flush to zero) that those bounds
//! assume, checked and set around every decision (`float_env`).
//!
//! The argument is in docs/theory.md §6.

pub mod float_env;
pub mod rounding;
