//! The exact subset-sum engine.
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
//!   variables, and reduces it with fpylll (or, without it, with
//!   `reduction`'s LLL), raising the equation weight
//!   until `n + 1 - rank` kernel vectors separate; this crate enumerates the
//!   kernel part completely for vectors within the per-coordinate bounds
//!   (`+-1` for plain columns), with Wassermann's infinity-norm pruning,
//!   so an empty enumeration is a proof. The tree is cut at a fixed depth into subtrees that run in
//!   parallel, largest estimated first, and are reported in search order,
//!   which keeps answers independent of threads.
//!
//! `subtrees` names the depth-first search's subtrees by their prefixes,
//! so that they can be searched in pieces, anywhere: on a cluster's
//! workers, or resumed from a saved list after the process ends.
//!
//! Float instances of at most 40 columns that the branch and bound leaves
//! open go to `meet_in_the_middle`: subset sums projected on one direction,
//! matched within a window as wide as the tolerance, every candidate checked
//! against the full residual.

pub mod feasibility_jump;
pub mod lattice;
pub mod meet_in_the_middle;
pub mod reduction;
pub mod schroeppel_shamir;
pub mod subtrees;
