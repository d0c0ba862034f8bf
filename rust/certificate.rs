//! Stage 2: the certificate of impossibility.
//!
//! At the relaxed solution `s*`, `Y = T - sum_i s*_i R_i` is orthogonal to
//! every `R_i` and satisfies `<Y, T> = ||Y||^2`, so no real `s`, and so no
//! flip set, gets closer to the target than `||Y||_F` (THEORY section 5.2,
//! after Mijoski & Karbevski 2026).
//!
//! Any `Y` proves something, and [`interval_bound`] checks what, trusting
//! nothing about how `Y` was found: for `s` in `{0,1}^m` (indeed in the box
//! `[0,1]^m`) the value `<Y, A + sum_i s_i R_i>` lies in
//! `[<Y,A> + sum of the negative <Y,R_i>, <Y,A> + sum of the positive ones]`.
//! If 0 is outside, its distance to 0 divided by `||Y||_F` bounds
//! `||E_S||_F` from below for every flip set `S`. This is sharper than
//! `<Y,-A> - sum_i |<Y,R_i>|`.
//!
//! The bound is accepted only above a rigorous bound on the rounding of its
//! own evaluation (Higham 2002, ch. 3; see `rounding`): the a-priori bound
//! first, at no extra cost; when that swallows the margin, the inner
//! products are summed exactly with float64 expansions, for blocks small
//! enough to afford it.

use rayon::prelude::*;

use crate::block::{ldexp, Block};
use crate::matrix::{dot, Matrix};
use crate::rounding::{down, gamma, norm_upper, up, Expansion, TINY};
use crate::verification::flip_residual;

/// The largest `m * d_out * d_in` for which the certificate check falls
/// back to exact sums (about a second of work).
const EXACT_TERMS: usize = 1 << 27;

pub struct Certificate {
    /// `Y`, shape `(d_out, d_in)`.
    pub y: Matrix,
    /// `||Y||_F / ||A||_F`, the relaxation distance.
    pub distance: f64,
}

/// The residual of the relaxation at `s_star`.
pub fn certificate(block: &Block, s_star: &[f64]) -> Certificate {
    let mut y = flip_residual(block, s_star);
    for x in y.data_mut() {
        *x = -*x;
    }
    let a_norm = block.skip.frobenius_norm();
    let norm = y.frobenius_norm();
    Certificate {
        distance: if a_norm == 0.0 { norm } else { norm / a_norm },
        y,
    }
}

/// `<Y, R_i> = c v_i^T Y u_i` for every neuron `i`: the gradient of the
/// relaxation at the point whose residual is `y`.
pub fn inner_products(block: &Block, y: &Matrix) -> Vec<f64> {
    let c = block.flip_constant;
    (0..block.width())
        .into_par_iter()
        .map(|i| {
            let ui = block.w_up.row(i);
            let mut acc = 0.0;
            for p in 0..y.rows() {
                let v = block.w_down.get(p, i);
                if v != 0.0 {
                    acc += v * dot(y.row(p), ui);
                }
            }
            c * acc
        })
        .collect()
}

/// What a candidate certificate proves, relative to `||A||_F`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntervalBound {
    /// Proven: every flip set has `||E_S||_F / ||A||_F >= bound` (0 when
    /// nothing is proved).
    pub bound: f64,
    /// The rounding allowance subtracted from the margin, in the same units.
    pub rounding: f64,
    /// The margin as float64 evaluates it, without the allowance.
    pub estimate: f64,
    /// Whether the inner products were summed exactly.
    pub exact: bool,
}

impl IntervalBound {
    const NOTHING: IntervalBound = IntervalBound {
        bound: 0.0,
        rounding: 0.0,
        estimate: 0.0,
        exact: false,
    };
}

/// The rigorous interval bound proved by `y`. `inner` may hold the
/// `<Y, R_i>` already computed (see [`inner_products`]).
pub fn interval_bound(block: &Block, y: &Matrix, inner: Option<&[f64]>) -> IntervalBound {
    let m = block.width();
    let (d_out, d_in) = block.skip.shape();
    let y_max = y.data().iter().fold(0.0f64, |a, x| a.max(x.abs()));
    if y_max == 0.0 || !y_max.is_finite() || !block.skip.data().iter().any(|&x| x != 0.0) {
        return IntervalBound::NOTHING;
    }
    // Scale Y by a power of two (exact) so its largest entry is near 1.
    let k = -(y_max.log2().floor() as i32);
    let mut ys = y.clone();
    ys.data_mut().iter_mut().for_each(|x| *x = ldexp(*x, k));
    let g: Vec<f64> = match inner {
        Some(inner) => inner.iter().map(|&x| ldexp(x, k)).collect(),
        None => inner_products(block, &ys),
    };
    let y_up = norm_upper(ys.data());
    let a_up = norm_upper(block.skip.data());
    let scale = up(y_up * a_up, 1);
    if !(scale.is_finite() && scale > 0.0) || g.iter().any(|x| !x.is_finite()) {
        return IntervalBound::NOTHING;
    }

    // <Y, A> and its a-priori error.
    let n = d_out * d_in;
    let a_dot: f64 = ys
        .data()
        .iter()
        .zip(block.skip.data())
        .map(|(y, a)| y * a)
        .sum();
    let a_mass: f64 = ys
        .data()
        .iter()
        .zip(block.skip.data())
        .map(|(y, a)| (y * a).abs())
        .sum();
    let err_a = up(gamma(n + 1) * a_mass, 2) + n as f64 * TINY;
    // Each <Y, R_i>: |error| <= gamma(d_in + d_out + 5) |c| |v_i|^T |Y| |u_i|
    // (two of the roundings for the flip constant's own),
    // and |v_i|^T |Y| |u_i| <= ||v_i|| ||Y||_F ||u_i|| (Cauchy-Schwarz).
    let gi = gamma(d_in + d_out + 5);
    let c = block.flip_constant.abs();
    let err_g: f64 = (0..m)
        .into_par_iter()
        .map(|i| {
            let v: Vec<f64> = (0..d_out).map(|p| block.w_down.get(p, i)).collect();
            let nu = norm_upper(block.w_up.row(i));
            let nv = norm_upper(&v);
            gi * up(c * nv * y_up * nu, 4) + (d_in + d_out + 3) as f64 * TINY
        })
        .sum::<f64>();
    let neg: f64 = g.iter().filter(|&&x| x < 0.0).sum();
    let pos: f64 = g.iter().filter(|&&x| x > 0.0).sum();
    let (lo, hi) = (a_dot + neg, a_dot + pos);
    let err_sum = gamma(m + 2) * (a_dot.abs() + pos - neg);
    let total = up(err_a + up(err_g, m + 1) + err_sum, 4);
    if !total.is_finite() {
        return IntervalBound::NOTHING;
    }
    let margin = lo.max(-hi);
    let estimate = (margin / scale).max(0.0);
    let gap = (lo - total).max(-(hi + total));
    if gap > 0.0 {
        return IntervalBound {
            bound: down(gap / scale, 2),
            rounding: total / scale,
            estimate,
            exact: false,
        };
    }
    if margin > 0.0 && m * n <= EXACT_TERMS {
        return exact_interval_bound(block, &ys, scale, estimate);
    }
    IntervalBound {
        bound: 0.0,
        rounding: total / scale,
        estimate,
        exact: false,
    }
}

/// [`interval_bound`] with `<Y, A>` and every `<Y, R_i>` summed exactly.
fn exact_interval_bound(block: &Block, ys: &Matrix, scale: f64, estimate: f64) -> IntervalBound {
    let (d_out, d_in) = block.skip.shape();
    let c = block.flip_constant;
    let inner: Vec<Expansion> = (0..block.width())
        .into_par_iter()
        .map(|i| {
            let ui = block.w_up.row(i);
            let mut acc = Expansion::new();
            for p in 0..d_out {
                let v = block.w_down.get(p, i);
                if v == 0.0 {
                    continue;
                }
                for (q, &u) in ui.iter().enumerate().take(d_in) {
                    acc.add_product3(v, ys.get(p, q), u);
                }
            }
            let mut out = if c == 1.0 { acc.clone() } else { acc.scaled(c) };
            if block.flip_constant_lo != 0.0 {
                out.add_expansion(&acc.scaled(block.flip_constant_lo));
            }
            out
        })
        .collect();
    let mut lo = Expansion::new();
    for (y, a) in ys.data().iter().zip(block.skip.data()) {
        lo.add_product(*y, *a);
    }
    let mut hi = lo.clone();
    let mut finite = lo.is_finite();
    for g in &inner {
        finite &= g.is_finite() && g.slack() == 0.0;
        match g.sign() {
            s if s < 0.0 => lo.add_expansion(g),
            s if s > 0.0 => hi.add_expansion(g),
            _ => {}
        }
    }
    let (lo_v, lo_e) = lo.approx();
    let (hi_v, hi_e) = hi.approx();
    let gap = (lo_v - lo_e).max(-(hi_v + hi_e));
    let rounding = (lo_e.max(hi_e)) / scale;
    IntervalBound {
        bound: if finite && gap > 0.0 {
            down(gap / scale, 2)
        } else {
            0.0
        },
        rounding,
        estimate,
        exact: true,
    }
}

/// The rigorous lower bound proved by `y` alone (see [`interval_bound`]).
pub fn lower_bound(block: &Block, y: &Matrix) -> f64 {
    interval_bound(block, y, None).bound
}
