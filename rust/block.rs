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
    /// The flip constant `c` of the activation: `act(z) - act(-z) = c z`.
    pub flip_constant: f64,
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
        })
    }

    /// Hidden width `m`.
    pub fn width(&self) -> usize {
        self.w_up.rows()
    }
}
