//! skipsearch core: decide whether a residual MLP block `x -> A x + f(x)`
//! can be rewritten as a skip-free MLP of the same width by flipping a set
//! of neurons.
//!
//! # Design note
//!
//! For an activation with `act(z) - act(-z) = c z` (ReLU, GELU, ...),
//! flipping the neurons in `S` absorbs the skip exactly iff
//! `c W_down[:, S] W_up[S, :] = -A` (Mijoski & Karbevski 2026,
//! arXiv:2604.23705). With `R_i = c v_i u_i^T` this is a 0/1 subset sum
//! in `d_out * d_in` dimensions. The pipeline, one file per stage:
//!
//! 1. `relaxation`: real least squares through the `m x m` Gram matrix
//!    (`O(m^2 d + m^3)`), never the `(d_out d_in) x m` system. The Gram
//!    matrix is built in cache-sized row blocks in parallel, and the
//!    genericity pair test rides along on the inner products it computes.
//! 2. `cholesky`: a blocked, pivoted Cholesky gives the rank, the
//!    least-squares solution and a reduced null basis.
//! 3. `certificate`: if `||Y||_F / ||A||_F` exceeds the tolerance at the
//!    relaxed solution, `Y` proves that no flip set exists. For generic
//!    weights this ends the search in polynomial time.
//! 4. `null_space`: otherwise, the affine solution set splits into
//!    independent components (duplicate or split neurons give tiny ones).
//! 5. `branch_and_bound`: each component is searched exactly with interval
//!    pruning on the basic neurons.
//! 6. `verification`: every subset reported is re-checked in float64 on the
//!    original weights.
//!
//! Every parallel loop gives each output entry to one thread, which computes
//! it with a fixed operation order, and the search is sequential, so results
//! (including node counts) do not depend on the number of threads. Long loops
//! poll a shared cancel flag and the deadline through `limits::Budget`.
//!
//! Which activation may use the condition, and what "no flip set" proves,
//! is decided by the Python layer, which knows the activation registry.
//!
//! # Exact integer subset sum
//!
//! Integer instances `A s = b` (market split, integer-weight absorption)
//! that the relaxation leaves open are decided exactly. The Python layer
//! first runs `feasibility_jump`, a weighted local search from zero with a
//! fixed move budget (it finds small solutions at once and proves nothing),
//! then presolves them (bound fixings, row gcds, independent components)
//! and picks a method per component:
//!
//! - `schroeppel_shamir` for at most 32 columns: the four-list search of
//!   Schroeppel & Shamir in the modular form of Howgrave-Graham & Joux,
//!   `2^(n/2)` time and `2^(n/4)` memory, every fingerprint match checked
//!   exactly (faster than two-list meeting in the middle at every size we
//!   measured, since its lists stay in cache);
//! - `lattice` beyond: the Python layer embeds the component in a lattice
//!   (Aardal, Hurkens & Lenstra 2000), equal columns merged into bounded
//!   variables, and reduces it with fpylll, raising the equation weight
//!   until `n + 1 - rank` kernel vectors separate; this crate enumerates the
//!   kernel part completely for vectors within the per-coordinate bounds
//!   (`+-1` for plain columns), with Wassermann's infinity-norm pruning,
//!   so an empty enumeration is a proof. The tree is cut at a fixed depth into subtrees that run in
//!   parallel, largest estimated first, and are reported in search order,
//!   which keeps answers independent of threads.
//!
//! Float instances of at most 40 columns that the branch and bound leaves
//! open go to `meet_in_the_middle`: subset sums projected on one direction,
//! matched within a window as wide as the tolerance, every candidate checked
//! against the full residual.

pub mod absorption;
pub mod block;
pub mod branch_and_bound;
pub mod certificate;
pub mod cholesky;
pub mod error;
pub mod feasibility_jump;
pub mod genericity;
pub mod lattice;
pub mod limits;
pub mod matrix;
pub mod meet_in_the_middle;
pub mod null_space;
pub mod relaxation;
pub mod rounding;
pub mod schroeppel_shamir;
pub mod verification;
pub mod windows;

#[cfg(feature = "python")]
mod python;

pub use absorption::{decide, Evidence, Finding, Numerics, Options, Outcome};
pub use block::Block;
pub use error::Error;
pub use genericity::{GenericityCheck, GenericityReport};
pub use limits::{Limits, Stop};
pub use matrix::Matrix;
