//! The genericity checks that turn "no flip set" into "not absorbable".
//!
//! For ReLU and LeakyReLU the kinks of `A x + f(x)` lie on one hyperplane per
//! neuron when every neuron is alive and the augmented rows `(u_i, b_i)` are
//! pairwise non-proportional; a same-width skip-free block must then reuse
//! those hyperplanes, which forces the flip condition (our extension of
//! Mijoski & Karbevski 2026, stated in the README). For GELU the paper's
//! theorem covers generic weights; we report whether the rows are alive and
//! pairwise distinct up to sign.
//!
//! The pair tests run inside the Gram assembly (see `relaxation`), which
//! already computes every inner product `u_i . u_j`.

/// Which pair test the activation's theorem needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GenericityCheck {
    /// Only dead neurons are reported.
    None,
    /// Rows `(u_i, b_i)` must be pairwise non-proportional (ReLU family).
    Proportional,
    /// Rows `(u_i, b_i)` must be pairwise distinct up to sign (GELU family).
    SignedDistinct,
}

impl GenericityCheck {
    pub fn as_str(self) -> &'static str {
        match self {
            GenericityCheck::None => "none",
            GenericityCheck::Proportional => "non_proportional",
            GenericityCheck::SignedDistinct => "distinct_up_to_sign",
        }
    }
}

/// Relative size below which a squared distance computed from Gram entries
/// is rounding noise: equal rows must always be flagged, however the inner
/// products were summed.
pub const GRAM_RESOLUTION: f64 = 1024.0 * f64::EPSILON;

/// At most this many offending pairs are listed; all are counted.
pub const MAX_REPORTED_PAIRS: usize = 1000;

/// Outcome of the genericity check.
#[derive(Debug, Clone, PartialEq)]
pub struct GenericityReport {
    pub check: GenericityCheck,
    /// Neurons with `u_i = 0` or `v_i = 0` (relative to the largest row).
    pub dead: Vec<usize>,
    /// The first offending pairs `(i, j)`, `i < j`, ordered by `j`, then `i`.
    pub pairs: Vec<(usize, usize)>,
    /// Number of offending pairs in all.
    pub pair_count: u64,
}

impl GenericityReport {
    pub fn passed(&self) -> bool {
        self.dead.is_empty() && self.pair_count == 0
    }
}

/// Neurons whose input row or output column is zero at relative tolerance `tol`.
pub fn dead_neurons(up_sq: &[f64], down_sq: &[f64], tol: f64) -> Vec<usize> {
    let max_up = up_sq.iter().cloned().fold(0.0, f64::max);
    let max_down = down_sq.iter().cloned().fold(0.0, f64::max);
    let t2 = tol * tol;
    (0..up_sq.len())
        .filter(|&i| up_sq[i] <= t2 * max_up || down_sq[i] <= t2 * max_down)
        .collect()
}

/// The resolution of the pair test for rows of length `n`: the Gram
/// entries' a-priori rounding (Higham 2002, ch. 3) with room to spare, so an
/// exactly proportional (or equal) pair is always flagged, whatever `tol`.
pub fn resolution(n: usize) -> f64 {
    GRAM_RESOLUTION.max(8.0 * crate::rounding::gamma(n + 4))
}

/// Does the pair with augmented inner product `a_ij` and squared norms
/// `a_ii`, `a_jj` violate `check` at relative tolerance `tol`? `res` is
/// [`resolution`] of the rows' length.
#[inline]
pub fn offending_pair(
    check: GenericityCheck,
    a_ij: f64,
    a_ii: f64,
    a_jj: f64,
    tol: f64,
    res: f64,
) -> bool {
    if a_ii <= 0.0 || a_jj <= 0.0 {
        return false;
    }
    match check {
        GenericityCheck::None => false,
        // 1 - |cos| <= tol
        GenericityCheck::Proportional => {
            a_ij.abs() >= (1.0 - tol.max(res)) * a_ii.sqrt() * a_jj.sqrt()
        }
        // || a_i -+ a_j ||^2 <= max(tol^2, resolution) max(|a_i|^2, |a_j|^2)
        GenericityCheck::SignedDistinct => {
            a_ii + a_jj - 2.0 * a_ij.abs() <= (tol * tol).max(res) * a_ii.max(a_jj)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proportional_rows_are_flagged_with_either_sign() {
        // a_i = (1, 2), a_j = (-2, -4)
        assert!(offending_pair(
            GenericityCheck::Proportional,
            -10.0,
            5.0,
            20.0,
            1e-9,
            GRAM_RESOLUTION
        ));
        // a_i = (1, 2), a_j = (2, 1)
        assert!(!offending_pair(
            GenericityCheck::Proportional,
            4.0,
            5.0,
            5.0,
            1e-9,
            GRAM_RESOLUTION
        ));
    }

    #[test]
    fn signed_distinct_allows_proportional_but_not_equal_rows() {
        assert!(!offending_pair(
            GenericityCheck::SignedDistinct,
            -10.0,
            5.0,
            20.0,
            1e-9,
            GRAM_RESOLUTION
        ));
        assert!(offending_pair(
            GenericityCheck::SignedDistinct,
            -5.0,
            5.0,
            5.0,
            1e-9,
            GRAM_RESOLUTION
        ));
    }

    #[test]
    fn dead_neurons_are_found() {
        assert_eq!(
            dead_neurons(&[1.0, 0.0, 2.0], &[1.0, 1.0, 0.0], 1e-8),
            vec![1, 2]
        );
    }
}
