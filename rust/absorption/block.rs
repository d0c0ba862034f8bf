//! The residual block under test, checked once at the boundary of the core.

use crate::error::Error;
use crate::matrix::Matrix;

/// An ungated residual block `x -> A x + W_down act(W_up x + b_up) + b_down`
/// reduced to what the flip condition needs. `b_down` never enters the
/// condition, so the core does not carry it.
#[derive(Debug, Clone)]
pub struct Block {
    /// `W_up`, shape `(m, d_in)`; row `i` is the input row `u_i` of neuron `i`.
    pub w_up: Matrix,
    /// `W_down`, shape `(d_out, m)`; column `i` is the output column `v_i`.
    pub w_down: Matrix,
    /// `b_up`, length `m`, if the block has one (used by the genericity check).
    pub b_up: Option<Vec<f64>>,
    /// The skip matrix `A`, shape `(d_out, d_in)`.
    pub skip: Matrix,
    /// The flip constant `c` of the activation: `act(z) - act(-z) = c z`,
    /// rounded to float64.
    pub flip_constant: f64,
    /// Its rounding error: the exact constant is `flip_constant +
    /// flip_constant_lo` (LeakyReLU's `1 + slope` is rarely a float64).
    /// The rigorous bounds count `flip_constant` as one more rounding; the
    /// exact sums use both parts.
    pub flip_constant_lo: f64,
}

fn shape(rows: usize, cols: usize) -> String {
    format!("({rows}, {cols})")
}

impl Block {
    pub fn new(
        w_up: Matrix,
        w_down: Matrix,
        b_up: Option<Vec<f64>>,
        skip: Matrix,
        flip_constant: f64,
    ) -> Result<Self, Error> {
        let (m, d_in) = w_up.shape();
        let d_out = w_down.rows();
        if w_down.cols() != m {
            return Err(Error::Shape {
                argument: "W_down",
                expected: format!("(d_out, {m}) to match W_up {}", shape(m, d_in)),
                got: shape(w_down.rows(), w_down.cols()),
            });
        }
        if skip.shape() != (d_out, d_in) {
            return Err(Error::Shape {
                argument: "skip",
                expected: shape(d_out, d_in),
                got: shape(skip.rows(), skip.cols()),
            });
        }
        if let Some(b) = &b_up {
            if b.len() != m {
                return Err(Error::Shape {
                    argument: "b_up",
                    expected: format!("({m},)"),
                    got: format!("({},)", b.len()),
                });
            }
            if b.iter().any(|x| !x.is_finite()) {
                return Err(Error::NonFinite { argument: "b_up" });
            }
        }
        if !flip_constant.is_finite() || flip_constant == 0.0 {
            return Err(Error::InvalidOption {
                option: "flip_constant",
                message: format!("must be finite and non-zero, got {flip_constant}"),
            });
        }
        Ok(Block {
            w_up,
            w_down,
            b_up,
            skip,
            flip_constant,
            flip_constant_lo: 0.0,
        })
    }

    /// Set the rounding error of the flip constant (see the field); it must
    /// be below one unit in the last place of the constant.
    pub fn with_flip_constant_lo(mut self, lo: f64) -> Result<Self, Error> {
        if !(lo.is_finite() && lo.abs() <= self.flip_constant.abs() * f64::EPSILON) {
            return Err(Error::InvalidOption {
                option: "flip_constant_lo",
                message: format!(
                    "must be the rounding error of the flip constant {} (at most one ulp), got {lo}",
                    self.flip_constant
                ),
            });
        }
        self.flip_constant_lo = lo;
        Ok(self)
    }

    /// Hidden width `m`.
    pub fn width(&self) -> usize {
        self.w_up.rows()
    }

    /// The same problem rescaled by powers of two, the exponent `k` with
    /// `A_balanced = 2^k A`, and whether the rescaling was exact (it is not
    /// only when a matrix spans more than float64's exponent range, so that
    /// an entry under- or overflows). `W_up` and `b_up` are scaled so their
    /// largest entry is near 1, `W_down` inversely, then `W_down` and `A`
    /// together so the skip's largest entry is near 1. Powers of two are
    /// exact, so every relative residual and every genericity test is
    /// unchanged, while weights of any magnitude stay clear of under- and
    /// overflow in the Gram matrix.
    pub fn balanced(&self) -> (Block, i32, bool) {
        let exponent = |x: f64| {
            if x > 0.0 && x.is_finite() {
                x.log2().round() as i32
            } else {
                0
            }
        };
        let max_abs = |v: &[f64]| v.iter().fold(0.0f64, |a, x| a.max(x.abs()));
        let bias_max = self.b_up.as_deref().map_or(0.0, max_abs);
        let k_up = -exponent(max_abs(self.w_up.data()).max(bias_max));
        let k_skip = -exponent(max_abs(self.skip.data()));
        let k_down = k_skip - k_up;
        let mut out = self.clone();
        let mut exact = true;
        let mut scale = |v: &mut [f64], k: i32| {
            for x in v.iter_mut() {
                let y = ldexp(*x, k);
                exact &= ldexp(y, -k) == *x;
                *x = y;
            }
        };
        scale(out.w_up.data_mut(), k_up);
        if let Some(b) = out.b_up.as_mut() {
            scale(b, k_up);
        }
        scale(out.w_down.data_mut(), k_down);
        scale(out.skip.data_mut(), k_skip);
        (out, k_skip, exact)
    }
}

/// `x * 2^k`, exact unless the result under- or overflows.
pub fn ldexp(mut x: f64, mut k: i32) -> f64 {
    while k > 1000 {
        x *= 2f64.powi(1000);
        k -= 1000;
    }
    while k < -1000 {
        x *= 2f64.powi(-1000);
        k += 1000;
    }
    x * 2f64.powi(k)
}
