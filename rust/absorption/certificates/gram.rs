//! Stage 5, without forming `Y`: the relaxation's certificate bounded from
//! the Gram matrix alone.
//!
//! For any float64 vector `s`, let `Y = T - sum_j s_j R_j` be the exact
//! residual (`T = -A`, `R_j = c v_j u_j^T`); it is never formed. Everything
//! the interval bound of `certificate` needs from `Y` is a function of the
//! Gram matrix `G_ij = <R_i, R_j>` and of `h_i = <R_i, T>`:
//!
//! - `g_i = <Y, R_i> = h_i - (G s)_i`,
//! - `<Y, A> = -||A||^2 + s^T h`,
//! - `||Y||^2 = ||A||^2 - s^T h - s^T g`.
//!
//! So `O(m^2)` work on the Gram matrix the exact path built replaces the two
//! `O(m d_out d_in)` passes over the weights that forming `Y` and its inner
//! products takes (at 4096 x 16384, 14 of some 65 seconds).
//!
//! The proof is the same as the formed certificate's: for every `s'` in the
//! box `[0, 1]^m`, `<Y, A + sum_i s'_i R_i>` lies between `<Y, A> + sum` of
//! the negative `g_i` and `<Y, A> + sum` of the positive ones; a gap from
//! 0 divided by `||Y||_F ||A||_F` bounds every flip set's relative residual
//! from below (Cauchy-Schwarz).
//!
//! Its rounding (Higham 2002, ch. 3, through `rounding`) is bounded
//! entrywise with Cauchy-Schwarz, `|v_i|.|v_j| <= ||v_i|| ||v_j||`:
//! - each Gram entry, two dot products of lengths `d_out` and `d_in` in any
//!   blocked order with a scaling per block (at most `3 d + 4` roundings
//!   each, generously), their product (1), the rounded square of the flip
//!   constant (1) and its low part (`(1 + 2^-52)^2`, 4):
//!   `|G^_ij - G_ij| <= gamma(3 (d_out + d_in) + 16) r_i r_j`, with
//!   `r_i = |c| ||v_i|| ||u_i|| = ||R_i||_F`;
//! - each `h_i`, as the formed certificate's inner products:
//!   `gamma(d_out + d_in + 7) r_i ||A||_F`;
//! - the matrix-vector product `G^ s`, `m` terms: `gamma(m + 2)` times
//!   `|h_i| + sum_j |G^_ij| |s_j|`, again bounded by `r_i sum_j r_j |s_j|`;
//! - underflow: `TINY` per operation, scaled by the largest factor it can
//!   meet.
//!
//! The bound is only as tight as `gamma(3 d + m)` times `(sum r_i)^2 |s|`
//! allows: ample for trained weights, where it agrees with the formed
//! certificate to about 1e-9; when it does not confirm the distance the
//! caller forms `Y` instead.

use crate::absorption::block::Block;
use crate::absorption::certificates::{box_sums, confirmed_distance, interval_bound, record_bound};
use crate::absorption::certificates::{column_norms_upper, IntervalBound};
use crate::absorption::relaxation::lower_matvec;
use crate::absorption::{Evidence, Finding, Outcome, Step};
use crate::rigor::rounding::{down, gamma, norm_upper, up, TINY, UNIT};

/// What the Gram matrix proves about `Y(s)`, and `||Y||_F / ||A||_F` as
/// float64 evaluates it (the distance the bound is compared with).
#[derive(Debug, Clone, Copy)]
pub struct GramCertificate {
    pub bound: IntervalBound,
    pub distance: f64,
}

/// The inner products `g_i = <Y(s), R_i> = h_i - (G s)_i` of the unformed
/// residual, from the Gram matrix, each with a rigorous bound `e_i` on its
/// error (see the module docs), and the quantities the bounds are built
/// from.
pub(crate) struct GramInner {
    /// `g^_i`, as float64 computes `h_i - (G^ s)_i`.
    pub g: Vec<f64>,
    /// `e_i >= |g^_i - <Y(s), R_i>|`.
    pub e: Vec<f64>,
    /// The error bound of each `h_i`.
    eh: Vec<f64>,
    /// `rho >= sum_i r_i |s_i|`.
    pub rho: f64,
    /// `||A||_F`, rounded up.
    pub a_up: f64,
}

/// [`GramInner`] of `s` (`gram` and `h` as [`gram_certificate`] takes
/// them); `None` when something is not finite or the weights are so large
/// that the underflow allowances could be.
pub(crate) fn gram_inner_products(
    block: &Block,
    gram: &[f64],
    h: &[f64],
    s: &[f64],
) -> Option<GramInner> {
    let m = block.width();
    let (d_out, d_in) = block.skip.shape();
    if m == 0 || gram.len() != m * m || h.len() != m || s.len() != m {
        return None;
    }
    if !(h.iter().chain(s).all(|x| x.is_finite())) {
        return None;
    }
    let c = block.flip_constant.abs();
    let nv = column_norms_upper(&block.w_down);
    let nu: Vec<f64> = (0..m).map(|i| norm_upper(block.w_up.row(i))).collect();
    let big = |x: &[f64]| x.iter().fold(0.0f64, |a, v| a.max(*v));
    let (nv_max, nu_max) = (big(&nv), big(&nu));
    // Far from overflow, so every allowance below stays finite and the
    // underflow terms (TINY times the largest factor) stay negligible.
    if !(c * nv_max * nv_max * c < 1e150 && nu_max * nu_max < 1e150) {
        return None;
    }
    // r_i >= ||R_i||_F = |c_true| ||v_i|| ||u_i|| (the low part of the
    // flip constant adds at most a relative 2^-53).
    let r: Vec<f64> = (0..m).map(|i| up(c * nv[i] * nu[i], 6)).collect();
    let rho = up(
        r.iter().zip(s).map(|(a, b)| a * b.abs()).sum::<f64>(),
        m + 2,
    );
    let s_mass = up(s.iter().map(|x| x.abs()).sum::<f64>(), m + 1);
    let a_up = norm_upper(block.skip.data());

    // |G^_ij - G_ij| <= gamma_g r_i r_j + tau (underflow of either dot
    // product, times the other's largest value, and of their product).
    let gamma_g = gamma(3 * (d_out + d_in) + 16);
    // Each dot product's underflow (TINY per rounding, far above 2^-1075,
    // the first scaled by c^2), times the other factor's largest value.
    let tau = up(
        (3 * (d_out + d_in) + 16) as f64
            * TINY
            * (1.0 + 2.0 * c * c * nv_max * nv_max + 2.0 * (1.0 + c * c) * nu_max * nu_max),
        4,
    );
    let gamma_h = gamma(d_out + d_in + 7);
    let gamma_mv = gamma(m + 2);

    let gs = lower_matvec(gram, m, s);
    let g: Vec<f64> = h.iter().zip(&gs).map(|(a, b)| a - b).collect();
    if g.iter().any(|x| !x.is_finite()) {
        return None;
    }
    // e_i >= |g^_i - g_i|: h_i's own error, the Gram entries' errors, and
    // the rounding of h_i - sum_j G^_ij s_j (with sum_j |G^_ij||s_j| <=
    // (1 + gamma_g) r_i rho + tau ||s||_1).
    let eh: Vec<f64> = r
        .iter()
        .map(|&ri| up(gamma_h * ri * a_up, 3) + (d_out + d_in + 7) as f64 * TINY)
        .collect();
    let e: Vec<f64> = (0..m)
        .map(|i| {
            let gram_part = gamma_g * r[i] * rho + tau * s_mass;
            let sum_part = gamma_mv * (h[i].abs() + (1.0 + gamma_g) * r[i] * rho + tau * s_mass);
            up(eh[i] + gram_part + sum_part, 6) + (m + 2) as f64 * TINY
        })
        .collect();
    Some(GramInner {
        g,
        e,
        eh,
        rho,
        a_up,
    })
}

/// The interval bound of the unformed residual `Y(s)` (see the module
/// docs). `gram` is [`crate::absorption::relaxation::gram_lower`] of this
/// very `block` and `h` its [`crate::absorption::relaxation::rhs`]; they
/// are trusted to be what those functions computed, nothing else is.
/// `None` when something is not finite, the weights are so large that
/// the underflow allowances could be, or `||Y||^2` cannot be told from 0.
pub fn gram_certificate(
    block: &Block,
    gram: &[f64],
    h: &[f64],
    s: &[f64],
) -> Option<GramCertificate> {
    let m = block.width();
    let (d_out, d_in) = block.skip.shape();
    let GramInner { g, e, eh, a_up, .. } = gram_inner_products(block, gram, h, s)?;
    let abs_s: Vec<f64> = s.iter().map(|x| x.abs()).collect();
    // Excluded neurons (see `exclusion`) are in no flip set the bound covers.
    let e_sum = up(
        e.iter()
            .enumerate()
            .filter(|(i, _)| !block.is_excluded(*i))
            .map(|(_, x)| x)
            .sum::<f64>(),
        m + 1,
    );

    // ||A||^2, s^T h and s^T g, each with its error.
    let n = d_out * d_in;
    let aa: f64 = block.skip.data().iter().map(|x| x * x).sum();
    let err_aa = up(gamma(n + 1) * aa, 2) + n as f64 * TINY;
    let sh: f64 = s.iter().zip(h).map(|(a, b)| a * b).sum();
    let sh_mass: f64 = s.iter().zip(h).map(|(a, b)| (a * b).abs()).sum();
    let eh_s: f64 = abs_s.iter().zip(&eh).map(|(a, b)| a * b).sum();
    let err_sh = up(gamma(m + 1) * sh_mass + eh_s, m + 3) + m as f64 * TINY;
    let sg: f64 = s.iter().zip(&g).map(|(a, b)| a * b).sum();
    let sg_mass: f64 = s.iter().zip(&g).map(|(a, b)| (a * b).abs()).sum();
    let es_s: f64 = abs_s.iter().zip(&e).map(|(a, b)| a * b).sum();
    let err_sg = up(gamma(m + 1) * sg_mass + es_s, m + 3) + m as f64 * TINY;

    // <Y, A> = s^T h - ||A||^2 (one more rounding).
    let a_dot = sh - aa;
    let err_a = up(err_aa + err_sh + 2.0 * UNIT * (aa + sh.abs()), 4);
    // ||Y||^2 = ||A||^2 - s^T h - s^T g (two more roundings).
    let y2 = aa - sh - sg;
    let err_y2 = up(
        err_aa + err_sh + err_sg + gamma(3) * (aa + sh.abs() + sg.abs()),
        4,
    );
    if !(a_dot.is_finite() && y2.is_finite() && err_a.is_finite() && err_y2.is_finite()) {
        return None;
    }
    if y2 - err_y2 <= 0.0 || aa == 0.0 {
        return None;
    }
    let y_up = up((y2 + err_y2).sqrt(), 2);
    let scale = up(y_up * a_up, 1);

    let (neg, pos) = box_sums(block, &g);
    let (lo, hi) = (a_dot + neg, a_dot + pos);
    let err_sum = gamma(m + 2) * (a_dot.abs() + pos - neg);
    let total = up(err_a + e_sum + err_sum, 4);
    if !(total.is_finite() && scale.is_finite() && scale > 0.0) {
        return None;
    }
    let margin = lo.max(-hi);
    let gap = (lo - total).max(-(hi + total));
    let bound = IntervalBound {
        bound: if gap > 0.0 {
            down(gap / scale, 2).min(block.exclusion_bound())
        } else {
            0.0
        },
        rounding: total / scale,
        estimate: (margin / scale).max(0.0),
        exact: false,
    };
    Some(GramCertificate {
        bound,
        distance: y2.sqrt() / aa.sqrt(),
    })
}

/// Stage 5 without forming `Y` (see [`gram_certificate`]): the finding when
/// the residual at `s`, bounded from `gram`, proves a bound above `tol` and
/// confirms its own distance; recorded in `out`. `None` leaves `out` as it
/// was, and the caller forms `Y`.
pub(crate) fn gram_certified(
    block: &Block,
    gram: &[f64],
    rhs: &[f64],
    minus_h: &[f64],
    s: &[f64],
    tol: f64,
    out: &mut Outcome,
) -> Option<Finding> {
    let proved = gram_certificate(block, gram, rhs, s)?;
    // Its allowance is larger than the formed certificate's: it must
    // confirm the distance to 1e-6 of itself (not only to the tolerance,
    // which near -A is far coarser), else Y is formed.
    let close = 2.0 * proved.bound.rounding <= 1e-6 * proved.distance; // false for NaN
    if !close {
        return None;
    }
    let distance = confirmed_distance(proved.distance, &proved.bound, tol)?;
    if proved.bound.bound <= tol {
        return None;
    }
    out.method.push(Step::GramCertificate);
    out.relaxation_distance = Some(distance);
    let skip_cert = interval_bound(block, &block.skip, Some(minus_h));
    if skip_cert.bound > proved.bound.bound {
        record_bound(out, &skip_cert);
        out.certificate = Some(block.skip.clone().into_owned());
    } else {
        record_bound(out, &proved.bound);
    }
    Some(Finding::NoSubset(Evidence::Certificate))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::absorption::block::testing::{least_squares, random_block};
    use crate::absorption::certificates::{certificate, interval_bound};
    use crate::linalg::matrix::Matrix;

    #[test]
    fn agrees_with_the_formed_certificate() {
        for (d, m, seed) in [(12, 40, 1), (16, 200, 2), (32, 300, 3)] {
            let block = random_block(m, d, seed);
            let (gram, h, s) = least_squares(&block);
            let got = gram_certificate(&block, &gram, &h, &s).expect("finite");
            let formed = certificate(&block, &s);
            let proved = interval_bound(&block, &formed.y, None);
            assert!((got.distance - formed.distance).abs() <= 1e-10 * formed.distance);
            assert!(got.bound.bound > 0.0, "{got:?}");
            assert!(
                (got.bound.bound - proved.bound).abs() <= 1e-8 * proved.bound,
                "{got:?} {proved:?}"
            );
            // The distance is what the bound confirms.
            assert!(got.bound.bound <= got.distance * (1.0 + 1e-12));
            assert!(got.bound.bound >= got.distance * (1.0 - 1e-8));
        }
    }

    #[test]
    fn any_s_gets_a_bound_below_every_flip_set() {
        // Away from the least-squares point the bound is weaker, but it must
        // still lie below every flip set's residual: checked by brute force.
        // m = 8 < d^2 = 9, so the relaxation does not reach -A.
        let block = random_block(8, 3, 7);
        let (gram, h, s) = least_squares(&block);
        let a = block.skip.frobenius_norm();
        let mut least = f64::INFINITY;
        for mask in 0u32..1 << 8 {
            let x: Vec<f64> = (0..8).map(|i| f64::from((mask >> i) & 1)).collect();
            least = least.min(block.residual(&x).frobenius_norm() / a);
        }
        for shift in [0.0, 0.01, 0.3] {
            let t: Vec<f64> = s
                .iter()
                .enumerate()
                .map(|(i, x)| x + shift * ((i % 3) as f64 - 1.0))
                .collect();
            let got = gram_certificate(&block, &gram, &h, &t).expect("finite");
            let formed = interval_bound(&block, &certificate(&block, &t).y, None);
            assert!(
                (got.bound.bound - formed.bound).abs() <= 1e-9 + 1e-9 * formed.bound,
                "{got:?} {formed:?}"
            );
            assert!(got.bound.bound <= least, "{} > {least}", got.bound.bound);
        }
    }

    #[test]
    fn a_planted_flip_set_proves_nothing() {
        // Neurons 0..4 flip to -I exactly: the relaxation reaches -A and
        // ||Y||^2 is rounding, so no bound above the tolerance may come out.
        let (d, m) = (4, 9);
        let base = random_block(m, d, 9);
        let mut u = base.w_up.clone().into_owned();
        let mut v = base.w_down.clone().into_owned();
        for i in 0..d {
            for q in 0..d {
                u.data_mut()[i * d + q] = if q == i { 2.0 } else { 0.0 };
                v.data_mut()[q * m + i] = if q == i { -0.5 } else { 0.0 };
            }
        }
        let planted = Block::new(u, v, None, Matrix::identity(d), 1.0).unwrap();
        let (gram, h, s) = least_squares(&planted);
        if let Some(got) = gram_certificate(&planted, &gram, &h, &s) {
            assert!(got.bound.bound <= 1e-6, "{got:?}");
        }
        // And at the flip set itself, exactly.
        let x: Vec<f64> = (0..m).map(|i| f64::from(u8::from(i < d))).collect();
        if let Some(got) = gram_certificate(&planted, &gram, &h, &x) {
            assert_eq!(got.bound.bound, 0.0, "{got:?}");
        }
    }
}
