//! Before stage 2: neurons too large to be in any flip set.
//!
//! A neuron whose term `R_i = c v_i u_i^T` outweighs the skip and every
//! smaller term together cannot be flipped: for a flip set `S` containing
//! `i`, the triangle inequality gives
//! `||A + sum_{j in S} R_j||_F >= ||R_i||_F - ||A||_F - sum_{j in S, j != i} ||R_j||_F`
//! (and `||R_i||_F = |c| ||v_i|| ||u_i||` for a rank-one term). Taken
//! greedily from the largest term down, every neuron excluded this way
//! bounds every flip set that contains it (and no larger excluded one) from
//! below; a flip set that meets the excluded set is bounded by the least of
//! those bounds, and every other one by a certificate over the rest alone.
//!
//! Such a neuron (one weight of `1e36` among ordinary ones, an exponent bit
//! flipped in a stored checkpoint) makes every other certificate useless:
//! the rounding allowance of `<Y, R_i>` is `eps ||R_i|| ||Y||`, far above any
//! margin. Fixing `s_i = 0` for the excluded neurons removes it. All norms
//! are bounded rigorously (Higham 2002, ch. 3; `rigor::rounding`).

use rayon::prelude::*;

use crate::absorption::block::Block;
use crate::absorption::certificates::{column_norms_lower, column_norms_upper};
use crate::rigor::rounding::{div_down, down, norm_lower, norm_upper, up};

/// The neurons excluded by the norm bound, and what it proves.
#[derive(Debug, Clone, PartialEq)]
pub struct Exclusion {
    /// `excluded[i]`: neuron `i` is in no flip set within the bound.
    pub excluded: Vec<bool>,
    /// Every flip set containing an excluded neuron has relative residual
    /// `||E_S||_F / ||A||_F >= bound`.
    pub bound: f64,
}

impl Exclusion {
    /// The excluded neurons, in increasing order.
    pub fn neurons(&self) -> Vec<usize> {
        (0..self.excluded.len())
            .filter(|&i| self.excluded[i])
            .collect()
    }
}

/// The least relative bound for which a neuron is excluded: `2^20`. Only a
/// term that large makes the certificates' rounding allowances (about
/// `eps ||R_i|| ||Y||`) a threat to their margins; below it a certificate
/// covers every flip set by itself, as the user's check of `Y` alone
/// expects, and nothing is excluded.
pub const MIN_EXCLUSION_BOUND: f64 = 1_048_576.0;

/// The neurons that the norm bound keeps out of every flip set whose
/// relative residual is at most `tol`, each by a bound of at least
/// [`MIN_EXCLUSION_BOUND`] (see the module note); `None` when there are
/// none. `O(m d)`.
pub fn dominant_neurons(block: &Block, tol: f64) -> Option<Exclusion> {
    let m = block.width();
    let a_up = norm_upper(block.skip.data());
    if m == 0 || !(a_up > 0.0 && a_up.is_finite()) {
        return None;
    }
    // |c_true| within a relative 2^-52 of |c| (flip_constant_lo is at most
    // one ulp of it).
    let c = block.flip_constant.abs();
    let (c_lo, c_hi) = (
        down(c * (1.0 - f64::EPSILON), 2),
        up(c * (1.0 + f64::EPSILON), 2),
    );
    // The columns of W_down read row by row (a column gathered by itself
    // strides over the whole matrix: a tenth of a verdict at 4096 x 16384).
    let (v_lo, v_hi) = (
        column_norms_lower(&block.w_down),
        column_norms_upper(&block.w_down),
    );
    let bounds: Vec<(f64, f64)> = (0..m)
        .into_par_iter()
        .map(|i| {
            let u = block.w_up.row(i);
            let lo = down(c_lo * v_lo[i] * norm_lower(u), 3);
            let hi = up(c_hi * v_hi[i] * norm_upper(u), 3);
            (lo, hi)
        })
        .collect();
    if bounds
        .iter()
        .any(|&(lo, hi)| !(lo.is_finite() && hi.is_finite()))
    {
        return None;
    }
    // Largest lower bound first; ties by index, so the order is fixed.
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| bounds[j].0.total_cmp(&bounds[i].0).then(i.cmp(&j)));
    // after[k] >= sum of the upper bounds of order[k + 1..].
    let mut after = vec![0.0; m];
    for k in (0..m.saturating_sub(1)).rev() {
        after[k] = up(after[k + 1] + bounds[order[k + 1]].1, 1);
    }
    let mut excluded = vec![false; m];
    let mut bound = f64::INFINITY;
    for k in 0..m {
        let rest = up(a_up + after[k], 1);
        let gap = bounds[order[k]].0 - rest;
        // Finite: every bound above is.
        if gap <= 0.0 {
            break;
        }
        let relative = div_down(down(gap, 1), a_up);
        if relative <= tol.max(MIN_EXCLUSION_BOUND) {
            break;
        }
        excluded[order[k]] = true;
        bound = bound.min(relative);
    }
    if bound == f64::INFINITY {
        return None;
    }
    Some(Exclusion { excluded, bound })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::absorption::block::testing::random_block;
    use crate::linalg::matrix::Matrix;

    #[test]
    fn ordinary_blocks_exclude_nothing() {
        for seed in 0..5 {
            assert_eq!(dominant_neurons(&random_block(24, 6, seed), 1e-8), None);
        }
    }

    #[test]
    fn a_huge_weight_is_excluded_with_a_true_bound() {
        let block = random_block(32, 8, 3);
        let (m, d) = (32, 8);
        let mut u = block.w_up.data().to_vec();
        u[3 * d + 2] = 1e36;
        let mut v = block.w_down.data().to_vec();
        v[5 * m + 7] = -1e30;
        let big = Block::new(
            Matrix::from_vec("W_up", m, d, u).unwrap(),
            Matrix::from_vec("W_down", d, m, v).unwrap(),
            None,
            block.skip.clone(),
            1.0,
        )
        .unwrap();
        let ex = dominant_neurons(&big, 1e-8).expect("two dominant neurons");
        assert_eq!(ex.neurons(), vec![3, 7]);
        // The bound holds for the worst flip set containing neuron 7 but
        // not 3: R_7 against A and every other term (all flipped, opposing).
        assert!(ex.bound > 1e20 && ex.bound < 1e31, "{}", ex.bound);
        // Not when the tolerance asks for more than the terms give.
        assert_eq!(dominant_neurons(&big, 1e40), None);
    }

    #[test]
    fn a_column_whose_squares_overflow_is_still_excluded() {
        // W_down[3, 5] = 1e300: its square overflows, so the row-by-row
        // sums bound that column's norm below by 0 only; the neuron must
        // still be excluded, with a bound near 1e300.
        let (m, d) = (24, 4);
        let block = random_block(m, d, 10);
        let mut v = block.w_down.data().to_vec();
        v[3 * m + 5] = 1e300;
        let big = Block::new(
            block.w_up.clone(),
            Matrix::from_vec("W_down", d, m, v).unwrap(),
            None,
            block.skip.clone(),
            1.0,
        )
        .unwrap();
        let ex = dominant_neurons(&big, 1e-8).expect("the huge neuron");
        assert_eq!(ex.neurons(), vec![5]);
        assert!(ex.bound > 1e290, "{}", ex.bound);
    }
}
