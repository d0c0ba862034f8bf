//! How far from absorbable: a proven bracket on the least relative residual
//! over all flip sets, and the best flip set found.
//!
//! For a flip-linear activation the skip-free block built from a flip set
//! `S` misses `A x + f(x)` by exactly `E_S x`, with
//! `E_S = A + c W_down[:, S] W_up[S, :]`. With `s` the 0/1 indicator of `S`,
//!
//! ```text
//! f(s) = ||E_S||_F^2 = ||A||_F^2 + 2 h.s + s.G s,
//! G_ij = c^2 (v_i.v_j)(u_i.u_j),   h_i = c v_i^T A u_i,
//! ```
//!
//! a convex quadratic (`G` is a Gram matrix). This stage brackets
//! `min over s in {0,1}^m of f(s)`:
//!
//! - **Lower bound: the box relaxation.** Over the box `[0,1]^m` the
//!   quadratic is solved by projected coordinate descent, which keeps the
//!   gradient `g = h + G s` (a coordinate step costs `O(m)`). Any point `t`
//!   of the box proves, by convexity, `f(s) >= f(t) + 2 g.(s - t)` for every
//!   `s` in the box, so `min f >= f(t) + sum_i (min(0, 2 g_i) - 2 g_i t_i)`
//!   (the Frank-Wolfe bound). It needs no optimality of `t`: a rough
//!   solution gives a weaker bound, never a wrong one.
//! - **Upper bound: local search.** From the empty set, the decision's flip
//!   set and the box solution rounded at three thresholds, best-improvement
//!   moves flip one neuron (the value changes by `2 d g_i + G_ii` with
//!   `d = 1 - 2 s_i`) or, when no single flip helps, two.
//! - **Branch and bound** on blocks of up to [`EXACT_MAX_NEURONS`] neurons:
//!   depth first, the box relaxation at each node with the node's neurons
//!   fixed, pruned when its bound cannot beat the best flip set by more than
//!   a tolerance `tau` (twice the rounding allowance plus `1e-9` of the
//!   incumbent's value).
//!   When it completes, the bracket encloses the optimum to that width.
//! - **Choice and claim.** The flip set reported is chosen on rigorous
//!   brackets of each candidate's own residual evaluated on the weights (the
//!   search's incumbent, the decision's flip set, the empty set), never on
//!   the Gram form's values alone; the decision's flip set, with its
//!   verified residual as an upper end, is kept unless another candidate's
//!   upper end is below its lower end. "Optimal" is claimed only when the
//!   branch and bound completed and the bracket is narrow ([`is_narrow`]):
//!   a completed search whose allowance swamps every value proves nothing.
//!
//! Rigour. Every value above is float64, so each bound carries one a-priori
//! allowance `delta` on the rounding of `G`, `h`, `||A||^2` and of the
//! evaluation of `f`, its gradient and the Frank-Wolfe bound at any point of
//! the box. With `n_i = |c| ||v_i|| ||u_i||`, Cauchy-Schwarz bounds every
//! magnitude the errors scale with: `|G_ij| <= n_i n_j` and
//! `|h_i| <= n_i ||A||_F`, so with `M = (||A||_F + sum_i n_i)^2`,
//! `delta = 16 gamma(d_out + d_in + 2m + 32) M + gamma(n + 2) ||A||^2`
//! (Higham 2002, ch. 3; `gamma` as in `rounding`) covers them with room to
//! spare. Lower bounds subtract `delta`, upper bounds add it. `delta`
//! grows with the square of the neurons' norms, so terms far larger than
//! `A` that cancel make it exceed every value: then only the direct
//! brackets of `certified` (`verification`: the a-priori bound on the
//! weights, and every entry summed exactly when that is wide) say anything
//! about a flip set, and the tighter bound is kept.
//!
//! The bracket, the box bound and the search are this project's additions;
//! Mijoski & Karbevski (2026, arXiv:2604.23705) answer only whether the
//! residual can be zero.

use crate::absorption::block::Block;
use crate::absorption::relaxation::{self, gram_lower, mirror_lower};
use crate::absorption::verification::residual_bounds;
use crate::error::Error;
use crate::limits::{Budget, Limits, Stop};
use crate::rigor::rounding::{down, gamma, norm_lower, norm_upper, up, TINY};
use std::sync::atomic::AtomicBool;

/// Widest block the branch and bound runs on (a node costs `O(m^2)` per
/// sweep of the box relaxation).
pub const EXACT_MAX_NEURONS: usize = 64;

/// Work (multiply-adds) the pair moves of the local search may spend:
/// about 7 pair scans at `m = 1536`, unlimited in practice below 150.
const PAIR_WORK: usize = 1 << 24;

/// Largest `|S| d_out d_in` for which the best flip set's residual is also
/// bracketed directly on the weights (the Gram form's allowance is coarser).
const DIRECT_WORK: usize = 1 << 26;

/// Sweeps of coordinate descent for the root's box relaxation: from this
/// many to twenty times as many on narrow blocks, within about `ROOT_WORK`
/// multiply-adds.
const ROOT_SWEEPS: usize = 400;
const ROOT_WORK: usize = 1 << 27;
/// Sweeps per node of the branch and bound.
const NODE_SWEEPS: usize = 60;

/// The bracket of one block.
#[derive(Debug, Clone, PartialEq)]
pub struct Bracket {
    /// The best flip set found, sorted.
    pub best_subset: Vec<usize>,
    /// Proven: every flip set's relative residual `||E_S||_F / ||A||_F` is at
    /// least this.
    pub lower: f64,
    /// Proven: `best_subset`'s relative residual is at most this (exactly 1
    /// for the empty set; at most the start's stated bound when the start
    /// is reported).
    pub upper: f64,
    /// Whether the branch and bound completed and the bracket is narrow
    /// ([`is_narrow`]), so that no flip set beats `best_subset` by more
    /// than `1e-3 upper + 1e-12`.
    pub optimal: bool,
    /// Branch-and-bound nodes.
    pub nodes: u64,
}

/// `f(s) = a0 + 2 h.s + s.G s` as computed, with the allowance `delta` on
/// its rounding over the box.
struct Quadratic {
    m: usize,
    /// Row-major `m x m`, symmetric.
    g: Vec<f64>,
    /// `G_ii`, contiguous: the local search reads all of them each move,
    /// and read from `g` they are `m + 1` apart (a cache miss each; at
    /// m = 16384 that made the local search 5 of the bracket's 8 s).
    diag: Vec<f64>,
    h: Vec<f64>,
    a0: f64,
    delta: f64,
}

impl Quadratic {
    fn row(&self, i: usize) -> &[f64] {
        &self.g[i * self.m..(i + 1) * self.m]
    }

    /// `h + G s`.
    fn gradient(&self, s: &[f64]) -> Vec<f64> {
        let mut grad = self.h.clone();
        for (i, &si) in s.iter().enumerate() {
            if si != 0.0 {
                axpy(&mut grad, si, self.row(i));
            }
        }
        grad
    }

    /// `f(s) = a0 + sum_i s_i (h_i + grad_i)` with `grad = h + G s`.
    fn value(&self, s: &[f64], grad: &[f64]) -> f64 {
        self.a0
            + s.iter()
                .zip(&self.h)
                .zip(grad)
                .map(|((si, hi), gi)| si * (hi + gi))
                .sum::<f64>()
    }

    /// The Frank-Wolfe bound at `s` over the neurons marked free (the others
    /// stay fixed at their values in `s`), before the allowance.
    fn box_bound(&self, s: &[f64], grad: &[f64], free: &[usize]) -> f64 {
        self.value(s, grad) + free.iter().map(|&i| fw_term(s[i], grad[i])).sum::<f64>()
    }
}

/// `min(0, 2 g) - 2 g t`: what coordinate `i` can still gain over the box.
fn fw_term(t: f64, g: f64) -> f64 {
    2.0 * (g.min(0.0) - g * t)
}

#[inline]
fn axpy(y: &mut [f64], a: f64, x: &[f64]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += a * xi;
    }
}

/// Projected coordinate descent on the free neurons, keeping `grad` (fresh
/// on return), until the Frank-Wolfe gap falls to `gap_target` times the
/// value (at least `1e-12 ||A||^2`) or no coordinate moves.
fn coordinate_descent(
    q: &Quadratic,
    s: &mut [f64],
    grad: &mut Vec<f64>,
    free: &[usize],
    sweeps: usize,
    gap_target: f64,
    budget: &Budget,
) -> Result<(), Stop> {
    for sweep in 0..sweeps {
        budget.check()?;
        let mut moved = false;
        for &i in free {
            let gii = q.diag[i];
            if gii <= 0.0 || !gii.is_finite() {
                continue;
            }
            let new = (s[i] - grad[i] / gii).clamp(0.0, 1.0);
            let d = new - s[i];
            if d != 0.0 && new.is_finite() {
                s[i] = new;
                axpy(grad, d, q.row(i));
                moved = true;
            }
        }
        if !moved || sweep % 8 == 7 || sweep + 1 == sweeps {
            // Refresh the gradient (the updates drift) and test the gap.
            *grad = q.gradient(s);
            let gap: f64 = free.iter().map(|&i| -fw_term(s[i], grad[i])).sum();
            if !moved || gap <= gap_target * q.value(s, grad).max(1e-12 * q.a0) {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// Best-improvement local search over the free neurons from the 0/1 point
/// `s`: single flips, then (while `pair_work` lasts) the best pair of flips
/// when no single one helps. `grad` is fresh on return.
fn local_search(
    q: &Quadratic,
    s: &mut [f64],
    grad: &mut Vec<f64>,
    free: &[usize],
    pair_work: &mut usize,
) {
    let mut change = vec![0.0; free.len()];
    for _ in 0..20 * free.len() + 20 {
        let mut best = (0.0, usize::MAX);
        for (k, &i) in free.iter().enumerate() {
            let d = 1.0 - 2.0 * s[i];
            let gii = q.diag[i];
            change[k] = 2.0 * d * grad[i] + gii;
            // Below the rounding of the change itself, a move could cycle.
            let noise = 1e-12 * (grad[i].abs() + gii) + 1e-300;
            if change[k] < -noise && change[k] < best.0 {
                best = (change[k], k);
            }
        }
        if best.1 != usize::MAX {
            let i = free[best.1];
            let d = 1.0 - 2.0 * s[i];
            s[i] += d;
            axpy(grad, d, q.row(i));
            continue;
        }
        let f = free.len();
        if f < 2 || *pair_work < f * f {
            break;
        }
        *pair_work -= f * f;
        let mut best = (0.0, 0, 0);
        for a in 0..f {
            let i = free[a];
            let di = 1.0 - 2.0 * s[i];
            let row = q.row(i);
            let noise_i = 1e-12 * (grad[i].abs() + q.diag[i]);
            for b in a + 1..f {
                let j = free[b];
                let dj = 1.0 - 2.0 * s[j];
                let pair = change[a] + change[b] + 2.0 * di * dj * row[j];
                let noise = noise_i + 1e-12 * (grad[j].abs() + q.diag[j]) + 1e-300;
                if pair < -noise && pair < best.0 {
                    best = (pair, i, j);
                }
            }
        }
        if best.0 >= 0.0 {
            break;
        }
        for i in [best.1, best.2] {
            let d = 1.0 - 2.0 * s[i];
            s[i] += d;
            axpy(grad, d, q.row(i));
        }
    }
    *grad = q.gradient(s);
}

/// The allowance `delta` (module notes): a rigorous bound on every rounding
/// error a computed value, gradient or Frank-Wolfe bound carries.
fn allowance(block: &Block, gram_diagonal: &[f64], a_up: f64) -> f64 {
    let (d_out, d_in) = block.skip.shape();
    let m = block.width();
    // n_i = sqrt(G_ii), with G_ii's own rounding (and underflow) covered.
    let k = d_out + d_in + 8;
    let sum_n: f64 = gram_diagonal
        .iter()
        .map(|&x| (up(x.max(0.0), k) + (k as f64) * TINY).sqrt())
        .sum();
    let big = up(a_up + up(up(sum_n, m + 2), 2), 2);
    let mag = up(big * big, 2);
    let n = d_out * d_in;
    16.0 * gamma(d_out + d_in + 2 * m + 32) * mag
        + gamma(n + 2) * a_up * a_up
        + ((m + 2) * (m + 2) * (d_out + d_in + 8) + n) as f64 * TINY
}

/// Depth-first branch and bound on the box relaxation.
struct Search<'q, 'b> {
    q: &'q Quadratic,
    /// The incumbent and a rigorous upper bound on its `f`.
    best: Vec<f64>,
    best_upper: f64,
    /// The least proven bound over the closed nodes.
    closed: f64,
    pair_work: usize,
    budget: Budget<'b>,
}

impl Search<'_, '_> {
    /// How much better than the incumbent a node must promise to be kept:
    /// twice the allowance (so a leaf always closes) and 1e-9 relative.
    fn tau(&self) -> f64 {
        2.0 * self.q.delta + 1e-9 * self.best_upper
    }

    fn offer(&mut self, s: &[f64], grad: &[f64]) {
        let upper = self.q.value(s, grad) + self.q.delta;
        if upper < self.best_upper {
            self.best_upper = upper;
            self.best = s.to_vec();
        }
    }

    fn node(&mut self, mut s: Vec<f64>, mut grad: Vec<f64>, free: Vec<usize>) -> Result<(), Stop> {
        self.budget.tick()?;
        let q = self.q;
        let target = 0.25 * self.tau() / self.best_upper.max(f64::MIN_POSITIVE);
        coordinate_descent(
            q,
            &mut s,
            &mut grad,
            &free,
            NODE_SWEEPS,
            target,
            &self.budget,
        )?;
        let bound = q.box_bound(&s, &grad, &free) - q.delta;
        if bound >= self.best_upper - self.tau() {
            self.closed = self.closed.min(bound);
            return Ok(());
        }
        // A flip set from this node: its box point rounded, improved.
        let mut t: Vec<f64> = s.iter().map(|&x| if x > 0.5 { 1.0 } else { 0.0 }).collect();
        let mut tg = q.gradient(&t);
        local_search(q, &mut t, &mut tg, &free, &mut self.pair_work);
        self.offer(&t, &tg);
        if bound >= self.best_upper - self.tau() || free.is_empty() {
            self.closed = self.closed.min(bound);
            return Ok(());
        }
        // Branch on the most fractional neuron, else on the one with the
        // largest Frank-Wolfe gap.
        let (mut pick, mut score) = (0, -1.0);
        for (k, &i) in free.iter().enumerate() {
            let frac = s[i].min(1.0 - s[i]);
            let sc = if frac > 1e-9 {
                1.0 + frac
            } else {
                -fw_term(s[i], grad[i]) / (1.0 + q.a0)
            };
            if sc > score {
                (pick, score) = (k, sc);
            }
        }
        let i = free[pick];
        let rest: Vec<usize> = free.iter().copied().filter(|&j| j != i).collect();
        let first = if s[i] > 0.5 { 1.0 } else { 0.0 };
        for value in [first, 1.0 - first] {
            let mut cs = s.clone();
            let mut cg = grad.clone();
            let d = value - cs[i];
            cs[i] = value;
            axpy(&mut cg, d, q.row(i));
            self.node(cs, cg, rest.clone())?;
        }
        Ok(())
    }
}

fn subset_of(s: &[f64]) -> Vec<usize> {
    (0..s.len()).filter(|&i| s[i] > 0.5).collect()
}

/// What a caller asks of the bracket of a block as it gave it.
pub struct Request {
    /// A proven lower bound on every flip set's relative residual (0 when
    /// none is known).
    pub known_lower: f64,
    /// A flip set to start from (the decision's), any order, duplicates
    /// allowed.
    pub start: Vec<usize>,
    /// A verified upper bound on `start`'s relative residual, if known.
    pub start_residual: Option<f64>,
    /// The branch and bound's own limits.
    pub search: Limits,
}

/// The bracket of `block` as the caller gave it: the block balanced by
/// exact powers of two ([`Block::balanced`]), the decision's Gram matrix
/// (`gram`: its lower triangle and the fingerprint of the block it was built
/// from) used when it is this block's, memory reserved for the rest; then
/// [`flip_set_bracket`]. When the bracket cannot run (no room, or a rescaling
/// that is not exact, or a limit) the result is the trivial bracket, or the
/// caller's verified flip set. A start neuron out of range is an error.
pub fn bracket_of_block(
    block: &Block,
    request: Request,
    gram: Option<(Vec<f64>, u64)>,
    limits: Limits,
    cancel: &AtomicBool,
) -> Result<Bracket, Error> {
    let m = block.width();
    let mut start = request.start;
    if let Some(&i) = start.iter().find(|&&i| i >= m) {
        return Err(Error::InvalidOption {
            option: "start",
            message: format!(
                "start holds neuron {i}, but the block has {m} neurons (W_up has {m} rows)"
            ),
        });
    }
    start.sort_unstable();
    start.dedup();
    let trivial = match request.start_residual.filter(|r| *r < 1.0) {
        Some(r) => (start.clone(), request.known_lower.min(r), r),
        None => (Vec::new(), request.known_lower.min(1.0), 1.0),
    };
    let (balanced, _, exact, _) = block.balanced_per_neuron();
    // A decision's Gram matrix serves only the block it was built from.
    let gram = gram
        .filter(|(_, fingerprint)| *fingerprint == relaxation::gram_fingerprint(&balanced))
        .map(|(lower, _)| lower);
    let gram_bytes = if gram.is_some() {
        0
    } else {
        8 * (m as u128).pow(2)
    };
    // The Gram matrix (8 m^2 bytes, unless the decision's is reused)
    // besides the block's arrays. Without room for them, or when the
    // rescaling under- or overflowed, the bracket stays trivial.
    let room = crate::limits::reserve_for(
        rayon::current_num_threads(),
        crate::absorption::working_bytes(block, false) + gram_bytes,
        crate::absorption::dense_products(block),
    );
    let bracket = if room.is_ok() && exact {
        flip_set_bracket(
            &balanced,
            request.known_lower,
            &start,
            request.start_residual,
            limits,
            request.search,
            gram,
            cancel,
        )
        .ok()
    } else {
        None
    };
    Ok(bracket.unwrap_or_else(|| {
        let (best_subset, lower, upper) = trivial;
        Bracket {
            best_subset,
            lower,
            upper,
            optimal: false,
            nodes: 0,
        }
    }))
}

/// Bracket the least relative residual over all flip sets of `block`.
///
/// `known_lower` is a lower bound already proven (the decision's
/// certificate); `start` a flip set to start the local search from (the
/// decision's; sorted, without repeats, every index below the width), and
/// `start_upper` a proven upper bound on its relative residual (the
/// decision's verified residual), if known. `limits` bound the whole stage
/// and `search` the branch and bound as well: when either stops it, the
/// bracket keeps what was proved so far (at worst `(known_lower, 1)` with
/// the empty set) and `optimal` is false. Ctrl-C (`cancel`) stops everything
/// with [`Stop::Interrupted`].
///
/// The reported flip set is chosen on rigorous bounds of the residual of
/// each candidate (the search's incumbent, `start`, the empty set), each
/// evaluated on the weights (`certified`), never on the Gram form's
/// float64 values alone; `start` is kept unless another candidate's upper
/// bound is below `start`'s lower bound, so it is never replaced by a worse
/// flip set. `optimal` needs the branch and bound to have completed and the
/// bracket to be narrow ([`is_narrow`]).
// Many parameters on purpose: the weights, the flip constant, the known bound, the starting set and the limits, as the binding receives them.
#[allow(clippy::too_many_arguments)]
// Long on purpose: input checks, then the bracket's three stages in order; each is a function of its own below.
#[allow(clippy::too_many_lines)]
pub fn flip_set_bracket(
    block: &Block,
    known_lower: f64,
    start: &[usize],
    start_upper: Option<f64>,
    limits: Limits,
    search: Limits,
    gram: Option<Vec<f64>>,
    cancel: &AtomicBool,
) -> Result<Bracket, Stop> {
    let a_up = norm_upper(block.skip.data());
    let a_low = norm_lower(block.skip.data());
    let mut found = Found {
        best: Vec::new(),
        best_upper: f64::INFINITY,
        lower_sq: 0.0,
        optimal: false,
        nodes: 0,
    };
    let mut budget = Budget::new(limits, cancel);
    if a_low > 0.0 && a_up.is_finite() {
        match run(block, a_up, start, search, gram, &mut budget, &mut found) {
            Ok(()) | Err(Stop::TimeLimit | Stop::NodeLimit | Stop::MemoryLimit) => {}
            Err(Stop::Interrupted) => return Err(Stop::Interrupted),
        }
    }
    // The empty set: E = A exactly.
    let empty = Candidate {
        subset: Vec::new(),
        lower: 1.0,
        upper: 1.0,
    };
    let mut best = empty.clone();
    if a_low > 0.0 && a_up.is_finite() {
        let searched = subset_of(&found.best);
        // The Gram form's rigorous (if coarse) bound on the incumbent.
        let gram_upper = if found.best_upper.is_finite() {
            up(found.best_upper.max(0.0).sqrt() / a_low, 2)
        } else {
            f64::INFINITY
        };
        let searched = if searched.is_empty() {
            empty.clone()
        } else {
            let (lower, upper) = certified(block, &searched, &budget);
            Candidate {
                subset: searched,
                lower,
                upper: upper.min(gram_upper),
            }
        };
        if searched.upper < best.upper {
            best = searched.clone();
        }
        if !start.is_empty() {
            let (lower, mut upper) = certified(block, start, &budget);
            if let Some(u) = start_upper.filter(|u| *u >= 0.0) {
                upper = upper.min(u);
            }
            if start == searched.subset.as_slice() {
                upper = upper.min(searched.upper);
            }
            let start = Candidate {
                subset: start.to_vec(),
                lower,
                upper,
            };
            if start.upper.is_finite() {
                // A start with a proven residual is kept unless another
                // candidate is proven strictly better.
                if best.upper >= start.lower {
                    best = start;
                }
            }
        }
    } else if let Some(u) = start_upper.filter(|u| (0.0..1.0).contains(u) && !start.is_empty()) {
        // The norms of A left the float64 range: only the stated bound.
        best = Candidate {
            subset: start.to_vec(),
            lower: 0.0,
            upper: u,
        };
    }
    let upper = best.upper;
    let mut lower = down(found.lower_sq.max(0.0).sqrt() / a_up, 2);
    if !lower.is_finite() {
        lower = 0.0;
    }
    if known_lower <= upper {
        // Proven bounds cannot contradict each other: one that does was
        // not proven, and is not used.
        lower = lower.max(known_lower);
    }
    let lower = lower.min(upper);
    Ok(Bracket {
        best_subset: best.subset,
        lower,
        upper,
        optimal: found.optimal && is_narrow(lower, upper),
        nodes: found.nodes,
    })
}

/// Relative width up to which a completed bracket is called optimal.
pub const OPTIMAL_RELATIVE_WIDTH: f64 = 1e-3;
/// Absolute width (in units of `||A||_F`) always allowed on top of it.
pub const OPTIMAL_ABSOLUTE_WIDTH: f64 = 1e-12;

/// Whether `(lower, upper)` is narrow enough to call the best flip set
/// optimal: `upper - lower <= 1e-3 upper + 1e-12`, so that its residual is
/// within 0.1% (plus `1e-12 ||A||_F`) of the least one.
pub fn is_narrow(lower: f64, upper: f64) -> bool {
    upper - lower <= OPTIMAL_RELATIVE_WIDTH * upper + OPTIMAL_ABSOLUTE_WIDTH
}

/// A flip set with a rigorous bracket on its own relative residual.
#[derive(Debug, Clone)]
struct Candidate {
    subset: Vec<usize>,
    lower: f64,
    upper: f64,
}

/// Largest `|S| d_out d_in` for which a flip set's residual is summed
/// exactly when the a-priori bracket is wide (about 0.1 s on 2 cores).
const EXACT_WORK: usize = 1 << 20;

/// A rigorous bracket `(lower, upper)` on the relative residual of the
/// non-empty flip set `subset`, on the weights: the a-priori bracket of
/// [`residual_bounds`], then, when that is wider than `1e-9` of its upper
/// end and the work is small enough, every entry summed exactly (which is
/// where large cancelling terms leave the a-priori bound far too coarse),
/// if `budget` has time left. `(0, inf)` when the flip set is too large to
/// evaluate.
fn certified(block: &Block, subset: &[usize], budget: &Budget) -> (f64, f64) {
    let (d_out, d_in) = block.skip.shape();
    let work = subset.len().saturating_mul(d_out.saturating_mul(d_in));
    if work > DIRECT_WORK {
        return (0.0, f64::INFINITY);
    }
    let apriori = residual_bounds(block, subset, f64::INFINITY);
    let (mut lower, mut upper) = (apriori.lower, apriori.upper);
    if !upper.is_finite() {
        upper = f64::INFINITY;
    }
    if !(lower.is_finite() && lower >= 0.0) {
        lower = 0.0;
    }
    if upper - lower > 1e-9 * upper && work <= EXACT_WORK && budget.check().is_ok() {
        // A tolerance inside the a-priori bracket makes it sum exactly.
        let exact = residual_bounds(block, subset, lower);
        if exact.exact {
            if exact.upper.is_finite() {
                upper = upper.min(exact.upper);
            }
            if exact.lower.is_finite() {
                lower = lower.max(exact.lower);
            }
        }
    }
    (lower.min(upper), upper)
}

/// What the stage has proved so far: the incumbent with a rigorous upper
/// bound on its `f`, and a lower bound on `min f`.
struct Found {
    best: Vec<f64>,
    best_upper: f64,
    lower_sq: f64,
    optimal: bool,
    nodes: u64,
}

// Long on purpose: the bracket's stages share the box solution and the incumbent; splitting would pass them all around.
#[allow(clippy::too_many_lines)]
fn run(
    block: &Block,
    a_up: f64,
    start: &[usize],
    search: Limits,
    gram: Option<Vec<f64>>,
    budget: &mut Budget,
    found: &mut Found,
) -> Result<(), Stop> {
    let m = block.width();
    // The decision's Gram matrix of this block when it kept one (the
    // caller checked that it is this block's), else built here.
    let mut gram = match gram {
        Some(g) if g.len() == m * m => g,
        _ => gram_lower(block, budget)?,
    };
    if gram.iter().any(|x| !x.is_finite()) {
        return Ok(());
    }
    mirror_lower(&mut gram, m);
    budget.check()?;
    let h = block.inner_products(&block.skip);
    let a0: f64 = block.skip.data().iter().map(|x| x * x).sum();
    let diag: Vec<f64> = (0..m).map(|i| gram[i * m + i]).collect();
    let delta = allowance(block, &diag, a_up);
    let q = Quadratic {
        m,
        g: gram,
        diag,
        h,
        a0,
        delta,
    };
    if !q.delta.is_finite() || !q.a0.is_finite() || q.h.iter().any(|x| !x.is_finite()) {
        return Ok(());
    }
    found.best = vec![0.0; m];
    found.best_upper = q.a0 + q.delta;

    // The box relaxation at the root.
    let all: Vec<usize> = (0..m).collect();
    let mut s = vec![0.0; m];
    let mut grad = q.h.clone();
    let sweeps = (ROOT_WORK / (m * m).max(1)).clamp(ROOT_SWEEPS, 20 * ROOT_SWEEPS);
    coordinate_descent(&q, &mut s, &mut grad, &all, sweeps, 1e-3, budget)?;
    found.lower_sq = q.box_bound(&s, &grad, &all) - q.delta;

    // Local search from several starts; pairs from the best of them.
    let mut starts: Vec<Vec<f64>> = vec![vec![0.0; m]];
    if !start.is_empty() {
        let mut t = vec![0.0; m];
        start.iter().filter(|&&i| i < m).for_each(|&i| t[i] = 1.0);
        starts.push(t);
    }
    for threshold in [0.3, 0.5, 0.7] {
        starts.push(
            s.iter()
                .map(|&x| if x > threshold { 1.0 } else { 0.0 })
                .collect(),
        );
    }
    let mut no_pairs = 0;
    let keep = |found: &mut Found, t: &[f64], tg: &[f64]| {
        let upper = q.value(t, tg) + q.delta;
        if upper < found.best_upper {
            found.best_upper = upper;
            found.best = t.to_vec();
        }
    };
    for mut t in starts {
        budget.check()?;
        let mut tg = q.gradient(&t);
        local_search(&q, &mut t, &mut tg, &all, &mut no_pairs);
        keep(found, &t, &tg);
    }
    budget.check()?;
    let mut t = found.best.clone();
    let mut tg = q.gradient(&t);
    let mut pair_work = PAIR_WORK;
    local_search(&q, &mut t, &mut tg, &all, &mut pair_work);
    keep(found, &t, &tg);

    if m > EXACT_MAX_NEURONS {
        return Ok(());
    }
    // The branch and bound, within what is left of both limits.
    let left = budget.remaining();
    let limits = Limits {
        time_limit: tighter(left.time_limit, search.time_limit),
        node_limit: tighter(left.node_limit, search.node_limit),
    };
    let mut tree = Search {
        q: &q,
        best: found.best.clone(),
        best_upper: found.best_upper,
        closed: f64::INFINITY,
        pair_work: PAIR_WORK,
        budget: Budget::new(limits, budget.cancel_flag()),
    };
    let outcome = tree.node(vec![0.0; m], q.h.clone(), all);
    found.nodes = tree.budget.nodes();
    found.best = tree.best;
    found.best_upper = tree.best_upper;
    match outcome {
        Ok(()) => {
            found.optimal = true;
            found.lower_sq = tree.closed.min(tree.best_upper);
            Ok(())
        }
        Err(Stop::Interrupted) => Err(Stop::Interrupted),
        Err(_) => Ok(()),
    }
}

/// The tighter of two optional limits.
fn tighter<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::matrix::Matrix;

    /// The bracket without limits, from `start` (with its verified upper end).
    fn unlimited(
        block: &Block,
        start: &[usize],
        start_upper: Option<f64>,
        cancel: &AtomicBool,
    ) -> Bracket {
        flip_set_bracket(
            block,
            0.0,
            start,
            start_upper,
            Limits::default(),
            Limits::default(),
            None,
            cancel,
        )
        .unwrap()
    }

    /// The bracket from the empty set, its branch and bound under `search`.
    fn searched(block: &Block, search: Limits, cancel: &AtomicBool) -> Bracket {
        flip_set_bracket(
            block,
            0.0,
            &[],
            None,
            Limits::default(),
            search,
            None,
            cancel,
        )
        .unwrap()
    }

    use crate::rng::Stream;

    /// The crate's generator, centred on 0.
    struct Rng(crate::rng::SplitMix64);
    impl Rng {
        fn new(seed: u64) -> Self {
            Rng(crate::rng::SplitMix64::new(seed))
        }
        fn next(&mut self) -> f64 {
            self.0.centered()
        }
    }

    /// A planted block (`A = -W_down[:, S] W_up[S, :]`) with noise added to `A`.
    fn planted(m: usize, d: usize, noise: f64, seed: u64) -> Block<'static> {
        let mut rng = Rng::new(seed);
        let u: Vec<f64> = (0..m * d).map(|_| rng.next()).collect();
        let v: Vec<f64> = (0..d * m).map(|_| rng.next()).collect();
        let mut a = vec![0.0; d * d];
        for i in 0..m {
            if rng.next() > 0.0 {
                for p in 0..d {
                    for q in 0..d {
                        a[p * d + q] -= v[p * m + i] * u[i * d + q];
                    }
                }
            }
        }
        a.iter_mut().for_each(|x| *x += noise * rng.next());
        Block::new(
            Matrix::from_vec("W_up", m, d, u).unwrap(),
            Matrix::from_vec("W_down", d, m, v).unwrap(),
            None,
            Matrix::from_vec("skip", d, d, a).unwrap(),
            1.0,
        )
        .unwrap()
    }

    fn brute_force(block: &Block) -> f64 {
        let m = block.width();
        let a = block.skip.frobenius_norm();
        (0..1u64 << m)
            .map(|code| {
                let s: Vec<f64> = (0..m).map(|i| ((code >> i) & 1) as f64).collect();
                block.residual(&s).frobenius_norm() / a
            })
            .fold(f64::INFINITY, f64::min)
    }

    #[test]
    fn the_bracket_encloses_the_optimum_and_proves_it_on_small_blocks() {
        let cancel = AtomicBool::new(false);
        for seed in 1..40 {
            let m = 4 + (seed as usize % 11);
            let d = 2 + (seed as usize % 4);
            let block = planted(m, d, 0.3 * (seed % 5) as f64, seed);
            let opt = brute_force(&block);
            let b = unlimited(&block, &[], None, &cancel);
            assert!(b.optimal, "seed {seed}: {b:?}");
            // The brute force rounds in float64 (about 1e-16 of these
            // weights); the bracket's ends are proven on the exact values.
            let slack = 1e-14;
            assert!(
                b.lower <= opt + slack && opt <= b.upper + slack,
                "seed {seed}: {opt} {b:?}"
            );
            assert!(
                b.upper - b.lower <= 1e-6 * (1.0 + opt),
                "seed {seed}: {b:?}"
            );
            let s: Vec<f64> = (0..m)
                .map(|i| b.best_subset.contains(&i) as u8 as f64)
                .collect();
            let got = block.residual(&s).frobenius_norm() / block.skip.frobenius_norm();
            assert!(
                got <= b.upper + slack && got + slack >= b.lower,
                "seed {seed}: {got} {b:?}"
            );
        }
    }

    #[test]
    fn forty_neurons_are_proved_optimal() {
        let cancel = AtomicBool::new(false);
        for seed in [3, 8] {
            let block = planted(40, 8, 0.5, seed);
            let limits = Limits {
                time_limit: Some(std::time::Duration::from_secs(10)),
                node_limit: None,
            };
            let b = searched(&block, limits, &cancel);
            assert!(b.optimal, "seed {seed}: {b:?}");
            assert!(b.upper - b.lower <= 1e-6, "seed {seed}: {b:?}");
        }
    }

    #[test]
    fn a_stopped_search_keeps_a_valid_bracket() {
        let cancel = AtomicBool::new(false);
        let block = planted(12, 3, 0.4, 5);
        let opt = brute_force(&block);
        let limits = Limits {
            time_limit: None,
            node_limit: Some(1),
        };
        let b = searched(&block, limits, &cancel);
        assert!(!b.optimal);
        assert!(b.lower <= opt && opt <= b.upper, "{opt} {b:?}");
    }

    /// A 2x2 integer matrix with determinant 1 and entries near `2^k`, and
    /// its integer inverse (extended Euclid on two coprime entries).
    fn unimodular(rng: &mut Rng, k: u32) -> ([[i64; 2]; 2], [[i64; 2]; 2]) {
        fn egcd(p: i64, q: i64) -> (i64, i64, i64) {
            if q == 0 {
                (p, 1, 0)
            } else {
                let (g, s, t) = egcd(q, p % q);
                (g, t, s - (p / q) * t)
            }
        }
        loop {
            let lo = 1i64 << (k - 1);
            let a = lo + ((rng.next() + 0.5) * lo as f64) as i64;
            let b = lo + ((rng.next() + 0.5) * lo as f64) as i64;
            let (g, x, y) = egcd(a, b);
            if g == 1 {
                return ([[a, b], [-y, x]], [[x, -b], [y, a]]);
            }
        }
    }

    /// `A = I` (2x2); neurons 0 and 1 are `P` and `-P^{-1}` (entries near
    /// `2^k`, their terms sum to `-I` exactly), the others integers of the
    /// same size that help nothing.
    fn large_integer_block(k: u32, seed: u64) -> Block<'static> {
        let mut rng = Rng::new(seed);
        let (p, q) = unimodular(&mut rng, k);
        let m = 6;
        let mut u = vec![0.0; m * 2];
        let mut v = vec![0.0; 2 * m];
        for r in 0..2 {
            u[r * 2] = p[r][0] as f64;
            u[r * 2 + 1] = p[r][1] as f64;
            v[r] = -q[0][r] as f64;
            v[m + r] = -q[1][r] as f64;
        }
        for i in 2..m {
            for j in 0..2 {
                u[i * 2 + j] = (rng.next() * (1u64 << k) as f64).round();
                v[j * m + i] = (rng.next() * 16.0).round();
            }
        }
        Block::new(
            Matrix::from_vec("W_up", m, 2, u).unwrap(),
            Matrix::from_vec("W_down", 2, m, v).unwrap(),
            None,
            Matrix::identity(2),
            1.0,
        )
        .unwrap()
    }

    #[test]
    fn only_a_narrow_bracket_is_narrow() {
        assert!(!is_narrow(0.0, 1.0));
        assert!(!is_narrow(0.5, 1.0));
        assert!(!is_narrow(0.998, 1.0));
        assert!(is_narrow(0.9995, 1.0));
        assert!(is_narrow(0.0, 0.0) && is_narrow(1.0, 1.0));
        assert!(is_narrow(0.0, 1e-13) && !is_narrow(0.0, 1e-9));
    }

    #[test]
    fn large_cancelling_terms_keep_the_exact_start_and_claim_nothing_without_it() {
        let cancel = AtomicBool::new(false);
        for (k, seed) in [(20, 1), (30, 2), (44, 3), (52, 4)] {
            let block = large_integer_block(k, seed);
            // The Gram form's allowance swamps every value here: alone, the
            // search proves nothing narrow, so it must not say optimal.
            let alone = unlimited(&block, &[], None, &cancel);
            assert_eq!(alone.lower, 0.0, "k {k}: {alone:?}");
            assert_eq!(alone.optimal, is_narrow(alone.lower, alone.upper), "k {k}");
            if alone.best_subset != [0, 1] {
                assert!(!alone.optimal, "k {k}: {alone:?}");
            }
            // With the decision's flip set, its residual is summed exactly: 0.
            let b = unlimited(&block, &[0, 1], None, &cancel);
            assert_eq!(b.best_subset, vec![0, 1], "k {k}: {b:?}");
            assert_eq!((b.lower, b.upper), (0.0, 0.0), "k {k}: {b:?}");
            assert!(b.optimal, "k {k}: {b:?}");
        }
    }

    #[test]
    fn the_start_is_kept_unless_another_set_is_proven_better() {
        // Two exact decompositions of -I (3x3): neurons 0..3 are -e_i e_i^T,
        // neurons 3..6 a unimodular P and -P^{-1}. Whichever the search
        // prefers, the start is kept with its exact residual 0.
        let p = [[1.0, 1.0, 0.0], [0.0, 1.0, 1.0], [0.0, 0.0, 1.0]];
        let q = [[1.0, -1.0, 1.0], [0.0, 1.0, -1.0], [0.0, 0.0, 1.0]];
        let m = 7;
        let mut u = vec![0.0; m * 3];
        let mut v = vec![0.0; 3 * m];
        for i in 0..3 {
            u[i * 3 + i] = 1.0;
            v[i * m + i] = -1.0;
            for j in 0..3 {
                u[(3 + i) * 3 + j] = p[i][j];
                v[j * m + 3 + i] = -q[j][i];
            }
        }
        u[6 * 3..].copy_from_slice(&[0.5, -0.25, 2.0]);
        v.iter_mut().skip(6).step_by(m).for_each(|x| *x = 0.75);
        let block = Block::new(
            Matrix::from_vec("W_up", m, 3, u).unwrap(),
            Matrix::from_vec("W_down", 3, m, v).unwrap(),
            None,
            Matrix::identity(3),
            1.0,
        )
        .unwrap();
        let cancel = AtomicBool::new(false);
        for start in [vec![0, 1, 2], vec![3, 4, 5]] {
            for start_upper in [None, Some(0.0), Some(1e-9)] {
                let b = unlimited(&block, &start, start_upper, &cancel);
                assert_eq!(b.best_subset, start, "{b:?}");
                assert_eq!((b.lower, b.upper, b.optimal), (0.0, 0.0, true), "{b:?}");
            }
        }
    }
}
