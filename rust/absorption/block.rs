//! The residual block under test, checked once at the boundary of the core.

use faer::{Accum, MatMut};
use rayon::prelude::*;

use crate::absorption::exclusion::Exclusion;
use crate::error::Error;
use crate::limits::{Budget, Stop};
use crate::linalg::matrix::{gemm_polled, par, Matrix};

/// Neurons per step in the products below: temporaries stay at
/// `NEURON_BLOCK x d`, never `m x d`. 2048 keeps the GEMMs' inner
/// dimension long enough for their tiles to run near the kernel's rate
/// (at d = 4096 on AVX2: 30 G multiply-adds per second on two cores,
/// against 20 with 512).
const NEURON_BLOCK: usize = 2048;

/// Neurons, and coordinates, per tile of the identity skip's inner products
/// (512 by 32: a 128 KiB tile, within L2).
const TILE: usize = 64;
const TILE_COORDS: usize = 64;

/// An ungated residual block `x -> A x + W_down act(W_up x + b_up) + b_down`
/// reduced to what the flip condition needs. `b_down` never enters the
/// condition, so the core does not carry it.
#[derive(Debug, Clone)]
pub struct Block<'a> {
    /// `W_up`, shape `(m, d_in)`; row `i` is the input row `u_i` of neuron `i`.
    pub w_up: Matrix<'a>,
    /// `W_down`, shape `(d_out, m)`; column `i` is the output column `v_i`.
    pub w_down: Matrix<'a>,
    /// `b_up`, length `m`, if the block has one (used by the genericity check).
    pub b_up: Option<Vec<f64>>,
    /// The skip matrix `A`, shape `(d_out, d_in)`.
    pub skip: Matrix<'a>,
    /// The flip constant `c` of the activation: `act(z) - act(-z) = c z`,
    /// rounded to float64.
    pub flip_constant: f64,
    /// Its rounding error: the exact constant is `flip_constant +
    /// flip_constant_lo` (LeakyReLU's `1 + slope` is rarely a float64).
    /// The rigorous bounds count `flip_constant` as one more rounding; the
    /// exact sums use both parts.
    pub flip_constant_lo: f64,
    /// Neurons no flip set within the tolerance can contain, by the norm
    /// bound of [`crate::absorption::exclusion`]: the certificates bound the
    /// flip sets that avoid them and take the least with its bound.
    pub exclusion: Option<Exclusion>,
}

fn shape(rows: usize, cols: usize) -> String {
    format!("({rows}, {cols})")
}

impl<'a> Block<'a> {
    pub fn new(
        w_up: Matrix<'a>,
        w_down: Matrix<'a>,
        b_up: Option<Vec<f64>>,
        skip: Matrix<'a>,
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
            exclusion: None,
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

    /// Whether neuron `i` is kept out of every flip set (see
    /// [`Block::exclusion`]).
    #[inline]
    pub fn is_excluded(&self, i: usize) -> bool {
        self.exclusion.as_ref().is_some_and(|e| e.excluded[i])
    }

    /// The least relative residual of a flip set that meets the excluded
    /// neurons (infinite when none is excluded).
    pub fn exclusion_bound(&self) -> f64 {
        self.exclusion.as_ref().map_or(f64::INFINITY, |e| e.bound)
    }

    /// Hidden width `m`.
    pub fn width(&self) -> usize {
        self.w_up.rows()
    }

    /// `E(s) = A + c W_down diag(s) W_up`, shape `(d_out, d_in)`, by GEMM
    /// over blocks of neurons (`O(m d_out d_in)`). Its rounding is not
    /// bounded here: it serves as a certificate `Y`, which any matrix may be.
    pub fn residual(&self, s: &[f64]) -> Matrix<'static> {
        self.residual_within(s, &Budget::unlimited())
            .expect("an unlimited budget never stops")
    }

    /// [`Block::residual`], stopping within one GEMM tile when `budget` says so.
    pub fn residual_within(&self, s: &[f64], budget: &Budget) -> Result<Matrix<'static>, Stop> {
        let mut e = self.skip.clone().into_owned();
        self.add_combination_within(&mut e, s, budget)?;
        Ok(e)
    }

    /// `e += c W_down diag(s) W_up`, over blocks of neurons.
    pub fn add_combination(&self, e: &mut Matrix, s: &[f64]) {
        self.add_combination_within(e, s, &Budget::unlimited())
            .expect("an unlimited budget never stops")
    }

    /// [`Block::add_combination`], with `budget` checked between tiles of
    /// each GEMM (see [`gemm_polled`]); the same bits when it does not stop.
    /// On a stop `e` is partly updated.
    pub fn add_combination_within(
        &self,
        e: &mut Matrix,
        s: &[f64],
        budget: &Budget,
    ) -> Result<(), Stop> {
        let (m, d_in) = self.w_up.shape();
        let c = self.flip_constant;
        let mut scaled = vec![0.0; NEURON_BLOCK.min(m) * d_in];
        let wd = self.w_down.view();
        for i0 in (0..m).step_by(NEURON_BLOCK) {
            let n = NEURON_BLOCK.min(m - i0);
            let mut any = false;
            for (r, i) in (i0..i0 + n).enumerate() {
                let k = c * s[i];
                any |= k != 0.0;
                for (x, &u) in scaled[r * d_in..(r + 1) * d_in]
                    .iter_mut()
                    .zip(self.w_up.row(i))
                {
                    *x = k * u;
                }
            }
            if !any {
                continue;
            }
            let rhs = faer::MatRef::from_row_major_slice(&scaled[..n * d_in], n, d_in);
            gemm_polled(
                e.view_mut(),
                Accum::Add,
                wd.subcols(i0, n),
                rhs,
                1.0,
                par(),
                budget,
            )?;
        }
        Ok(())
    }

    /// `|v_i|^2` for every neuron (the squared columns of `W_down`), summed
    /// over the rows in order.
    pub fn down_squares(&self) -> Vec<f64> {
        crate::linalg::matrix::column_fold(&self.w_down, 0.0, |a, _, v| a + v * v)
    }

    /// The diagonal of the Gram matrix, `c^2 |v_i|^2 |u_i|^2` (`O(m d)`).
    pub fn gram_diagonal(&self) -> Vec<f64> {
        let m = self.width();
        let down = self.down_squares();
        let c2 = self.flip_constant * self.flip_constant;
        (0..m)
            .into_par_iter()
            .map(|i| {
                let u = self.w_up.row(i);
                c2 * down[i] * crate::linalg::matrix::dot(u, u)
            })
            .collect()
    }

    /// `<Y, R_i> = c v_i^T Y u_i` for every neuron `i` (`O(m d_out d_in)`,
    /// by GEMM over blocks of neurons; `O(m d)` when `Y` is the identity).
    /// Each value is a sum of `d_in` products, then of `d_out`, then one
    /// multiplication by `c`: whatever the GEMM's order, its error is at most
    /// `gamma(d_in + d_out + 1) |c| |v_i|^T |Y| |u_i|` (Higham 2002, ch. 3).
    pub fn inner_products(&self, y: &Matrix) -> Vec<f64> {
        self.inner_products_within(y, &Budget::unlimited())
            .expect("an unlimited budget never stops")
    }

    /// [`Block::inner_products`], with `budget` checked between tiles of
    /// each GEMM (see [`gemm_polled`]); the same bits when it does not stop.
    pub fn inner_products_within(&self, y: &Matrix, budget: &Budget) -> Result<Vec<f64>, Stop> {
        let m = self.w_up.rows();
        let d_out = self.w_down.rows();
        let c = self.flip_constant;
        let mut g = vec![0.0; m];
        if is_identity(y) {
            // v_i . u_i, in tiles of TILE neurons by TILE_COORDS coordinates:
            // the tile of W_up is copied transposed, so both reads stream
            // along rows (a column walk of W_up strides d_in * 8 bytes, which
            // aliases in the L1 cache at every power-of-two width).
            g.par_chunks_mut(TILE).enumerate().for_each(|(b, out)| {
                let i0 = b * TILE;
                let n = out.len();
                let mut acc = vec![0.0; n];
                let mut tile = vec![0.0; TILE * TILE_COORDS];
                for p0 in (0..d_out).step_by(TILE_COORDS) {
                    let k = TILE_COORDS.min(d_out - p0);
                    for r in 0..n {
                        let src = &self.w_up.row(i0 + r)[p0..p0 + k];
                        for (q, &x) in src.iter().enumerate() {
                            tile[q * TILE + r] = x;
                        }
                    }
                    for q in 0..k {
                        let row = &self.w_down.row(p0 + q)[i0..i0 + n];
                        let col = &tile[q * TILE..q * TILE + n];
                        for ((a, &v), &u) in acc.iter_mut().zip(row).zip(col) {
                            *a += v * u;
                        }
                    }
                }
                for (gi, a) in out.iter_mut().zip(acc) {
                    *gi = c * a;
                }
            });
            return Ok(g);
        }
        let mut z = vec![0.0; d_out * NEURON_BLOCK.min(m)];
        for i0 in (0..m).step_by(NEURON_BLOCK) {
            let n = NEURON_BLOCK.min(m - i0);
            // Z = Y U_blk^T, d_out x n, row-major.
            let dst = MatMut::from_row_major_slice_mut(&mut z[..d_out * n], d_out, n);
            gemm_polled(
                dst,
                Accum::Replace,
                y.view(),
                self.w_up.view().subrows(i0, n).transpose(),
                1.0,
                par(),
                budget,
            )?;
            let mut acc = vec![0.0; n];
            for p in 0..d_out {
                let zp = &z[p * n..(p + 1) * n];
                let vp = &self.w_down.row(p)[i0..i0 + n];
                for ((a, &x), &v) in acc.iter_mut().zip(zp).zip(vp) {
                    *a += x * v;
                }
            }
            for (gi, a) in g[i0..i0 + n].iter_mut().zip(acc) {
                *gi = c * a;
            }
        }
        Ok(g)
    }

    /// The same problem rescaled by powers of two, the exponent `k` with
    /// `A_balanced = 2^k A`, and whether the rescaling was exact (it always
    /// is: each exponent is kept within the range that leaves every entry
    /// of its matrix exact, see [`exact_range`]). The flip constant `c` (and
    /// its rounding error) is scaled to near 1 and `W_down` inversely, so
    /// that `c W_down` is unchanged; `W_up` and `b_up` are scaled so their
    /// largest entry is near 1, `W_down` inversely, then `W_down` and `A`
    /// together so the skip's largest entry is near 1, as far as exactness
    /// allows: a matrix whose entries span nearly float64's whole exponent
    /// range (a subnormal next to a large entry) is scaled less, or not at
    /// all. Powers of two are exact, so every relative residual and every
    /// genericity test is unchanged, while weights and flip constants of
    /// any magnitude stay clear of under- and overflow in the Gram matrix:
    /// the decision is the same for the block times any power of two, in
    /// any of its factors. Blocks whose exponents are all moderate (within
    /// `2^64` of 1) are returned as they are, without a copy.
    pub fn balanced(&self) -> (Block<'a>, i32, bool) {
        let (k_c, k_up, k_down, k_skip) = self.balancing_exponents();
        let mut out = self.clone();
        let mut exact = true;
        let mut scale = |m: &mut Matrix<'a>, k: i32| {
            if k != 0 {
                for x in m.data_mut().iter_mut() {
                    let y = ldexp(*x, k);
                    exact &= ldexp(y, -k) == *x;
                    *x = y;
                }
            }
        };
        scale(&mut out.w_up, k_up);
        scale(&mut out.w_down, k_down);
        scale(&mut out.skip, k_skip);
        if let Some(b) = out.b_up.as_mut() {
            for x in b.iter_mut() {
                let y = ldexp(*x, k_up);
                exact &= ldexp(y, -k_up) == *x;
                *x = y;
            }
        }
        if k_c != 0 {
            for x in [&mut out.flip_constant, &mut out.flip_constant_lo] {
                let y = ldexp(*x, k_c);
                exact &= ldexp(y, -k_c) == *x;
                *x = y;
            }
        }
        (out, k_skip, exact)
    }

    /// [`Block::balanced`], and then, when the neurons' own scales spread
    /// over more than `2^128` (a row of `2^275` beside one of `2^-231`, each
    /// with a column of the inverse size), each neuron balanced by itself:
    /// `u_i 2^-a_i` and `v_i 2^a_i` (with `b_i 2^-a_i`), which leaves every
    /// term `c v_i u_i^T`, and so every residual, exactly as it was, with
    /// `a_i` splitting the two exponents evenly within their exact ranges;
    /// then balanced again. Returns the block, the skip's exponent in all,
    /// whether both steps were exact, and whether the neurons were moved
    /// (their rows are then not the caller's up to one common power of two,
    /// so the genericity check must look at [`Block::balanced`]'s block).
    ///
    /// A dead neuron (a zero row or a zero column) adds the term 0 whatever
    /// its other side holds, so that side is cleared first: a `2^659`
    /// column beside a zero row would otherwise set `W_down`'s scale and
    /// overflow the Gram matrix (`inf * 0`), making a power-of-two
    /// rescaling of a dead neuron change the verdict.
    pub fn balanced_per_neuron(&self) -> (Block<'a>, i32, bool, bool) {
        let cleared = self.dead_sides_cleared();
        let block = cleared.as_ref().unwrap_or(self);
        let (balanced, k_skip, exact) = block.balanced();
        let Some(moved) = balanced.neurons_balanced() else {
            return (balanced, k_skip, exact, cleared.is_some());
        };
        let (again, k2, exact2) = moved.balanced();
        (again, k_skip + k2, exact && exact2, true)
    }

    /// The block with the nonzero side of every dead neuron (a zero row of
    /// `W_up` beside a nonzero column of `W_down`, or the reverse) set to
    /// zero, `b_up` with it; None when no neuron is so. Every term `c v_i
    /// u_i^T` is unchanged (it was 0), and the neuron stays dead.
    fn dead_sides_cleared(&self) -> Option<Block<'a>> {
        let m = self.width();
        let up_zero: Vec<bool> = (0..m)
            .map(|i| self.w_up.row(i).iter().all(|&x| x == 0.0))
            .collect();
        let down_max =
            crate::linalg::matrix::column_fold(&self.w_down, 0.0, |a, _, v| a.max(v.abs()));
        let half: Vec<usize> = (0..m)
            .filter(|&i| up_zero[i] != (down_max[i] == 0.0))
            .collect();
        if half.is_empty() {
            return None;
        }
        let (d_out, d_in) = self.skip.shape();
        let mut out = self.clone();
        for &i in &half {
            if up_zero[i] {
                let data = out.w_down.data_mut();
                for p in 0..d_out {
                    data[p * m + i] = 0.0;
                }
            } else {
                out.w_up.data_mut()[i * d_in..(i + 1) * d_in].fill(0.0);
                if let Some(b) = out.b_up.as_mut() {
                    b[i] = 0.0;
                }
            }
        }
        Some(out)
    }

    /// Each neuron's row and column balanced against each other (see
    /// [`Block::balanced_per_neuron`]); `None` when their exponents spread
    /// over at most `2^128` in `W_up` and in `W_down` alike.
    fn neurons_balanced(&self) -> Option<Block<'a>> {
        let m = self.width();
        let exponent = |x: f64| {
            if x > 0.0 && x.is_finite() {
                x.log2().round() as i32
            } else {
                0
            }
        };
        let up_max: Vec<f64> = (0..m)
            .map(|i| self.w_up.row(i).iter().fold(0.0f64, |a, x| a.max(x.abs())))
            .collect();
        let down_max =
            crate::linalg::matrix::column_fold(&self.w_down, 0.0, |a, _, v| a.max(v.abs()));
        let live: Vec<usize> = (0..m)
            .filter(|&i| up_max[i] > 0.0 && down_max[i] > 0.0)
            .collect();
        let spread = |x: &[f64]| {
            let e = live.iter().map(|&i| exponent(x[i]));
            e.clone().max().unwrap_or(0) - e.min().unwrap_or(0)
        };
        if spread(&up_max) <= 2 * MODERATE && spread(&down_max) <= 2 * MODERATE {
            return None;
        }
        let (d_out, d_in) = self.skip.shape();
        let mut out = self.clone();
        for &i in &live {
            let want = (exponent(up_max[i]) - exponent(down_max[i])) / 2;
            let row = self.w_up.row(i);
            let bias = self.b_up.as_ref().map(|b| b[i]);
            let r_u = exact_range(&row.iter().copied().chain(bias).collect::<Vec<_>>());
            let column: Vec<f64> = (0..d_out).map(|p| self.w_down.get(p, i)).collect();
            let r_v = exact_range(&column);
            // u_i 2^-a exact: -a in r_u; v_i 2^a exact: a in r_v (both hold 0).
            let a = want.clamp((-r_u.1).max(r_v.0), (-r_u.0).min(r_v.1));
            if a == 0 {
                continue;
            }
            for x in &mut out.w_up.data_mut()[i * d_in..(i + 1) * d_in] {
                *x = ldexp(*x, -a);
            }
            if let Some(b) = out.b_up.as_mut() {
                b[i] = ldexp(b[i], -a);
            }
            let data = out.w_down.data_mut();
            for p in 0..d_out {
                data[p * m + i] = ldexp(data[p * m + i], a);
            }
        }
        Some(out)
    }

    /// The exponents of [`Block::balanced`]: `(k_c, k_up, k_down, k_skip)`
    /// for the flip constant, `W_up` (and `b_up`), `W_down` and the skip,
    /// with `k_down = k_skip - k_up - k_c`, each within its exact range.
    fn balancing_exponents(&self) -> (i32, i32, i32, i32) {
        let exponent = |x: f64| {
            if x > 0.0 && x.is_finite() {
                x.log2().round() as i32
            } else {
                0
            }
        };
        // In parallel (the order of a maximum does not matter).
        let max_abs = |v: &[f64]| {
            v.par_chunks(1 << 16)
                .map(|c| c.iter().fold(0.0f64, |a, x| a.max(x.abs())))
                .reduce(|| 0.0, f64::max)
        };
        let bias_max = self.b_up.as_deref().map_or(0.0, max_abs);
        let (c, c_lo) = (self.flip_constant, self.flip_constant_lo);
        let mut k_c = -exponent(c.abs());
        let mut k_up = -exponent(max_abs(self.w_up.data()).max(bias_max));
        let mut k_skip = -exponent(max_abs(self.skip.data()));
        // W_down's own exponent, with c's folded in: c W_down is what meets
        // the skip (its largest entry near 2^(k_skip - k_up) once balanced).
        let k_cdown = -exponent(max_abs(self.w_down.data())) + k_c;
        if [
            k_c,
            k_up,
            k_skip,
            k_cdown,
            k_skip - k_up,
            k_skip - k_up - k_cdown,
        ]
        .iter()
        .all(|k| k.abs() <= MODERATE)
        {
            // Products of a few such entries stay far from under- and
            // overflow: keep the weights as they are (no copy).
            k_c = 0;
            k_up = 0;
            k_skip = 0;
        }
        if k_up != 0 || k_skip != 0 || k_c != 0 {
            // Exact ranges, each containing 0. c and W_down meet the rest
            // only as their product: c W_down scales exactly by any t =
            // k_c + k_down with k_c in R_c and k_down in R_down, so k_up in
            // R_up and k_skip in R_skip are chosen with t = k_skip - k_up in
            // R_c + R_down, and t is then split to bring c nearest 1.
            let r_up = intersect(
                exact_range(self.w_up.data()),
                exact_range(self.b_up.as_deref().unwrap_or(&[])),
            );
            let r_down = exact_range(self.w_down.data());
            let r_c = exact_range(&[c, c_lo]);
            let r_cd = (r_c.0 + r_down.0, r_c.1 + r_down.1);
            let r_skip = exact_range(self.skip.data());
            // k_up such that some k_skip fits both R_skip and k_up + R_cd.
            let feasible = (r_skip.0 - r_cd.1, r_skip.1 - r_cd.0);
            let r_up = intersect(r_up, feasible);
            k_up = k_up.clamp(r_up.0, r_up.1);
            let r_skip = intersect(r_skip, (k_up + r_cd.0, k_up + r_cd.1));
            k_skip = k_skip.clamp(r_skip.0, r_skip.1);
            let t = k_skip - k_up;
            // Not empty: t lies in R_c + R_down.
            k_c = k_c.clamp(r_c.0.max(t - r_down.1), r_c.1.min(t - r_down.0));
        }
        (k_c, k_up, k_skip - k_up - k_c, k_skip)
    }
}

/// The exponents `k` for which `x 2^k` is exact for every entry of `x`: no
/// entry's lowest set bit falls below `2^-1074` and none reaches `2^1024`.
/// Always contains 0 (every finite float64 is exact at `k = 0`); wide when
/// `x` has no non-zero entry.
pub fn exact_range(x: &[f64]) -> (i32, i32) {
    let (mut low, mut high) = (i32::MAX, i32::MIN);
    for &v in x {
        if v == 0.0 || !v.is_finite() {
            continue;
        }
        let bits = v.to_bits();
        let field = ((bits >> 52) & 0x7ff) as i32;
        let mantissa = bits & ((1u64 << 52) - 1);
        // v = significand * 2^(e - 52) with e the exponent of the leading
        // bit (subnormals: the leading bit of the mantissa).
        let (significand, lead) = if field == 0 {
            (mantissa, -1074 + 63 - mantissa.leading_zeros() as i32)
        } else {
            (mantissa | (1u64 << 52), field - 1023)
        };
        let unit = if field == 0 { -1074 } else { field - 1075 };
        low = low.min(unit + significand.trailing_zeros() as i32);
        high = high.max(lead);
    }
    if low == i32::MAX {
        return (-4096, 4096);
    }
    (-1074 - low, 1023 - high)
}

fn intersect(a: (i32, i32), b: (i32, i32)) -> (i32, i32) {
    (a.0.max(b.0), a.1.min(b.1))
}

/// Whether `y` is exactly the identity matrix.
pub fn is_identity(y: &Matrix) -> bool {
    let (r, c) = y.shape();
    r == c
        && y.data()
            .iter()
            .enumerate()
            .all(|(k, &x)| x == if k / c == k % c { 1.0 } else { 0.0 })
}

/// Exponents up to this size are left unbalanced: a Gram entry multiplies
/// four weights, `2^(4 * 64)` is far inside float64's range.
const MODERATE: i32 = 64;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::matrix::gemm;

    use crate::linalg::matrix::testing::noise;

    #[test]
    fn polled_products_give_the_bits_of_whole_gemms() {
        // d_out = 1024, d_in = 1100: each GEMM of 512 neurons is split
        // into two tiles of rows by the polling. The reference is one GEMM
        // per block of neurons over the whole output.
        let (d_out, d_in, m) = (1024, 1100, 600);
        let block = Block::new(
            noise(m, d_in, 1),
            noise(d_out, m, 2),
            None,
            noise(d_out, d_in, 3),
            1.5,
        )
        .unwrap();
        let s: Vec<f64> = (0..m).map(|i| (i % 7) as f64 / 7.0).collect();
        let y = noise(d_out, d_in, 4);
        let whole = || {
            let mut e = block.skip.clone().into_owned();
            for i0 in (0..m).step_by(NEURON_BLOCK) {
                let n = NEURON_BLOCK.min(m - i0);
                let mut scaled = Matrix::zeros(n, d_in);
                for r in 0..n {
                    let k = block.flip_constant * s[i0 + r];
                    for (x, &u) in scaled.data_mut()[r * d_in..(r + 1) * d_in]
                        .iter_mut()
                        .zip(block.w_up.row(i0 + r))
                    {
                        *x = k * u;
                    }
                }
                let wd = block.w_down.view();
                gemm(
                    e.view_mut(),
                    Accum::Add,
                    wd.subcols(i0, n),
                    scaled.view(),
                    1.0,
                    par(),
                );
            }
            let mut g = vec![0.0; m];
            for i0 in (0..m).step_by(NEURON_BLOCK) {
                let n = NEURON_BLOCK.min(m - i0);
                let mut z = Matrix::zeros(d_out, n);
                let wu = block.w_up.view().subrows(i0, n).transpose();
                gemm(z.view_mut(), Accum::Replace, y.view(), wu, 1.0, par());
                for (r, gi) in g[i0..i0 + n].iter_mut().enumerate() {
                    let mut a = 0.0;
                    for p in 0..d_out {
                        a += z.get(p, r) * block.w_down.get(p, i0 + r);
                    }
                    *gi = block.flip_constant * a;
                }
            }
            (e, g)
        };
        let want = crate::limits::on_threads(1, whole);
        for threads in [1, 3] {
            let got = crate::limits::on_threads(threads, || {
                (block.residual(&s), block.inner_products(&y))
            });
            assert!(want == got, "threads = {threads}");
        }
    }

    #[test]
    fn balancing_stays_exact_next_to_a_subnormal_entry() {
        // Balancing the skip to 1 would flush 2^-1022 to 0: the exponent is
        // kept within the skip's exact range instead.
        let big = 2f64.powi(500);
        let block = Block::new(
            Matrix::from_vec("W_up", 1, 2, vec![0.0, big]).unwrap(),
            Matrix::from_vec("W_down", 1, 1, vec![1.0]).unwrap(),
            None,
            Matrix::from_vec("A", 1, 2, vec![f64::MIN_POSITIVE, -big]).unwrap(),
            1.0,
        )
        .unwrap();
        let (b, k, exact) = block.balanced();
        assert!(exact);
        assert_eq!(k, -52);
        assert_eq!(b.skip.data(), &[2f64.powi(-1074), -(2f64.powi(448))]);
        assert_eq!(b.w_up.data(), &[0.0, 1.0]);
        assert_eq!(b.w_down.data(), &[2f64.powi(448)]);
        assert_eq!(exact_range(&[f64::MIN_POSITIVE, -big]), (-52, 523));
        assert_eq!(exact_range(&[2f64.powi(-1074)]), (0, 2097));
        assert_eq!(exact_range(&[0.0]), (-4096, 4096));
    }

    #[test]
    fn balancing_brings_the_flip_constant_to_one() {
        // c = 2^-540 (a scaled activation) with W_down at 2^540: c W_down is
        // of order 1, but W_down's squares overflow and c^2 underflows.
        // Balanced, c is near 1 and W_down inversely, c W_down unchanged.
        for (k, lo) in [(-540, 0.0), (600, 2f64.powi(600 - 60)), (-1000, 0.0)] {
            let c = 2f64.powi(k) * 1.5;
            let block = Block::new(
                Matrix::from_vec("W_up", 2, 1, vec![1.0, -3.0]).unwrap(),
                Matrix::from_vec("W_down", 1, 2, vec![ldexp(0.25, -k), ldexp(-1.0, -k)]).unwrap(),
                None,
                Matrix::from_vec("A", 1, 1, vec![5.0]).unwrap(),
                c,
            )
            .unwrap()
            .with_flip_constant_lo(lo)
            .unwrap();
            let (b, k_skip, exact) = block.balanced();
            assert!(exact, "k = {k}");
            assert_eq!(k_skip, -2);
            // c = 1.5 2^k is nearest 2^(k + 1).
            assert_eq!(b.flip_constant, 0.75, "k = {k}");
            assert_eq!(b.flip_constant_lo, ldexp(lo, -k - 1));
            assert_eq!(b.skip.data(), &[1.25]);
            assert_eq!(b.w_up.data(), &[0.25, -0.75]);
            // c' W_down' W_up' = 2^k_skip c W_down W_up, entry by entry.
            for i in 0..2 {
                let before = c * block.w_down.get(0, i) * block.w_up.get(i, 0);
                let after = b.flip_constant * b.w_down.get(0, i) * b.w_up.get(i, 0);
                assert_eq!(after, ldexp(before, k_skip));
            }
        }
    }

    #[test]
    fn a_cancelled_product_stops_with_interrupted() {
        let block = Block::new(
            noise(700, 600, 5),
            noise(500, 700, 6),
            None,
            noise(500, 600, 7),
            1.0,
        )
        .unwrap();
        let cancel = std::sync::atomic::AtomicBool::new(true);
        let budget = Budget::new(crate::limits::Limits::default(), &cancel);
        let s = vec![1.0; 700];
        assert_eq!(
            block.residual_within(&s, &budget).err(),
            Some(Stop::Interrupted)
        );
        assert_eq!(
            block.inner_products_within(&block.skip, &budget).err(),
            Some(Stop::Interrupted)
        );
    }
}

/// Seeded blocks shared by the stages' unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::Block;
    use crate::linalg::matrix::Matrix;

    /// `W_up` (`m x d`) then `W_down` (`d x m`) of uniform numbers from one
    /// stream, an identity skip and `c = 1`.
    pub(crate) fn random_block(m: usize, d: usize, seed: u64) -> Block<'static> {
        let mut next = crate::linalg::matrix::testing::uniform(seed);
        let u: Vec<f64> = (0..m * d).map(|_| next()).collect();
        let v: Vec<f64> = (0..d * m).map(|_| next()).collect();
        Block::new(
            Matrix::from_vec("W_up", m, d, u).unwrap(),
            Matrix::from_vec("W_down", d, m, v).unwrap(),
            None,
            Matrix::identity(d),
            1.0,
        )
        .unwrap()
    }

    /// The lower Gram triangle, `h` and the least-squares solution of the
    /// relaxation of `block` (pivoted float64 Cholesky).
    pub(crate) fn least_squares(block: &Block) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        use crate::absorption::relaxation::{gram_lower, rhs};
        use crate::limits::Budget;
        use crate::linalg::cholesky::PivotedCholesky;
        let m = block.width();
        let gram = gram_lower(block, &Budget::unlimited()).unwrap();
        let h = rhs(block);
        let factor = PivotedCholesky::factor(gram.clone(), m, &Budget::unlimited())
            .unwrap()
            .unwrap();
        let s = factor.solve(&h);
        (gram, h, s)
    }
}
