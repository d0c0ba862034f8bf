//! Exact 0/1 solutions of `A x = b` by enumeration in a reduced lattice.
//!
//! # Design note
//!
//! With integer `A` (k x n), `b` and column multiplicities `c` (a column
//! that appears `c_j` times is one variable `x_j` in `0..=c_j`; plain 0/1
//! has `c = 1`), the vectors `v_j = (2 e_j, 0, N A[:, j])` and
//! `v_n = (c, 1, N b)` span a lattice in which every solution gives the
//! short vector `sum_j x_j v_j - v_n = (2x - c, -1, 0)`: entry `j` lies in
//! `{-c_j, -c_j + 2, ..., c_j}` and the `N`-weighted part is zero (Aardal,
//! Hurkens & Lenstra 2000; Wassermann's solvediophant embeds the same way).
//! Lattice reduction (fpylll in the Python layer, or `reduction.rs` without
//! it) with a large `N`
//! puts a basis of the sublattice with zero `N`-part first; this module
//! receives that kernel basis and the bounds `(c, 1)` and enumerates
//! *every* lattice vector of squared norm at most `|c|^2 + 1`
//! (Schnorr-Euchner order, Fincke-Pohst bound on the Gram-Schmidt
//! projections), keeping those whose entries `y_j` satisfy `|y_j| <= c_j`
//! with the parity of `c_j`. The enumeration is complete, so an empty
//! result proves infeasibility.
//!
//! Besides the radius, every node passes Wassermann's infinity-norm test,
//! weighted by the bounds: the projection `p` of any completion `v` onto
//! the Gram-Schmidt vectors from the node's level up satisfies
//! `|p|_2^2 = <v, p> <= sum_j c_j |p_j|` when `|v_j| <= c_j`, so a node
//! with `|p|_2^2 > sum_j c_j |p_j|` has no solution below it. Keeping `p`
//! costs one axpy of length `n + 1` per node; on the market split instances
//! it removes 95% of the nodes. The same projection gives the entries that
//! are final at the node's level (those of the basis vectors above it
//! only, see [`final_entries`]): a node where one of them cannot be
//! admissible is cut, as solvediophant's "prune only zeros" does.
//!
//! With a budget of `lds_nodes`, limited-discrepancy passes come first
//! (Harvey & Ginsberg 1995; solvediophant runs them beside its depth-first
//! search): the value at position `p` of a level's search order spends `p`
//! discrepancies, pass `k` tests exactly the leaves that spend `k`, and a
//! pass that passes over no value for want of budget has tested every leaf,
//! so it is a complete search by itself. Each pass uses the same parallel
//! prefixes as the depth-first search (a prefix's own positions count
//! against the pass), so it too gives the same answer at any thread count.
//! Optionally the top levels spend no discrepancy, as long as the tree
//! holds few nodes at their depth (`lds_free_width`): there the
//! Gram-Schmidt vectors are shortest, the centre says least about a
//! solution's coefficient, and on market splits a solution leaves the
//! search order at most of those levels, so each pass runs below every
//! one of their few nodes instead of spending its budget on them.
//! [`estimate_nodes`] gives Knuth's (1975) estimate of the depth-first
//! tree, from random dives, for the Python layer to choose a strategy.
//!
//! Only one of `y` and `-y` is visited: the first nonzero coefficient from
//! the top is positive. The tree is split at its top levels into at least
//! 2048 prefixes, in search order, listed level by level; workers take them from a shared counter
//! (so a large prefix never waits behind a queue fixed in advance), each
//! prefix is searched in a fixed order, and the solution reported is the
//! first one of the earliest prefix that has one, so the answer does not
//! depend on the thread count.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use rayon::prelude::*;

use crate::error::Error;
use crate::limits::{Limits, Stop};
#[cfg(target_arch = "x86_64")]
use crate::linalg::kernels::{Avx2, Avx512};
use crate::linalg::kernels::{AxpyL1, AxpyL1Kernel, Portable, LANES};
use crate::rng::{Stream, XorShift64};

/// The enumeration tree is cut into at least this many parallel subtrees:
/// enough that the last one to finish is short (1.89x on two threads for a
/// 29 M-node ms_07 tree, 1.93x for 300 M nodes of ms_08), few enough that
/// setting them up costs little. With the top coefficient fixed the cut
/// lies deeper than it used to, and 8192 prefixes cost small trees (MS(5),
/// 40 columns) 40% of their time. The cut must not depend on the thread
/// count: limited discrepancy counts the prefix's positions.
const PREFIXES: usize = 2048;

/// A limited-discrepancy pass that follows one of fewer nodes than this
/// starts on the calling thread alone, and goes on to the whole pool once
/// it has spent `SERIAL_NODES` (see [`run_jobs`]): the first passes on
/// small trees are a few hundred nodes each, less than waking the workers
/// costs.
const SERIAL_AFTER: u64 = 1 << 12;
const SERIAL_NODES: u64 = 1 << 14;

/// Most prefixes listed at one depth (a few MiB of jobs at 100 levels).
const MAX_JOBS: usize = 1 << 16;

/// The order of the values tried at one level: Schnorr-Euchner zig-zag,
/// nearest the centre first on alternating sides; at a free level (every
/// coefficient above is zero) 1, 2, ... and 0 last, since only one sign of
/// each vector is searched and solutions sit where the top is nonzero.
/// At the top level, `allowed` (from [`top_values`]) lists the values a
/// solution's top coefficient can take; the others are skipped.
#[derive(Clone, Copy, Default)]
struct Order {
    c: i64,
    dx: i64,
    ddx: i64,
    free: bool,
    /// Every value of the level has been tried.
    done: bool,
}

impl Order {
    #[inline(always)]
    fn new(center: f64, free: bool) -> Self {
        let c = if free { 1 } else { center.round() as i64 };
        let dx = if center >= c as f64 { 1 } else { -1 };
        Order {
            c,
            dx,
            ddx: dx,
            free,
            done: false,
        }
    }

    /// The current value is outside the radius: `true` if the level goes on
    /// (a free level jumps to its last value, 0), `false` if it is done.
    #[inline(always)]
    fn out_of_range(&mut self) -> bool {
        if self.free && self.c > 0 {
            self.c = 0;
            true
        } else {
            self.done = true;
            false
        }
    }

    /// The current value if it lies within `radius` and is allowed (moving
    /// a free level that leaves either to its last value, 0), with its
    /// offset from `center` and the squared norm it brings the projection
    /// to; `None` when the level is done.
    #[inline(always)]
    fn within(
        &mut self,
        center: f64,
        partial: f64,
        norm: f64,
        radius: f64,
        allowed: Option<&[bool]>,
    ) -> Option<(i64, f64, f64)> {
        while !self.done {
            let diff = self.c as f64 - center;
            let next = partial + diff * diff * norm;
            let admitted = allowed.map(|a| usize::try_from(self.c).ok().and_then(|c| a.get(c)));
            match admitted {
                _ if next > radius => self.out_of_range(),
                // Beyond the largest allowed value: so are all the next ones.
                Some(None) => self.out_of_range(),
                Some(Some(false)) => self.step(),
                _ => return Some((self.c, diff, next)),
            };
        }
        None
    }

    /// Move to the next value; `false` (and done) when the level is done.
    #[inline(always)]
    fn step(&mut self) -> bool {
        if self.free {
            if self.c == 0 {
                self.done = true;
                return false;
            }
            self.c += 1;
        } else {
            self.c += self.dx;
            self.ddx = -self.ddx;
            self.dx = self.ddx - self.dx;
        }
        true
    }
}

/// Largest top coefficient listed by [`top_values`]; beyond it the top
/// level is left unrestricted.
const TOP_VALUES_MAX: i64 = 1 << 20;

/// The values `x >= 0` that the top basis vector's coefficient can take in
/// a solution, as a table indexed by `x` (only one sign of each vector is
/// searched, and the top coefficient of the one searched is `>= 0`). A
/// coordinate `j` where every other basis vector is zero gives `y_j = x
/// basis[d-1][j]`, which must lie in `{-c_j, -c_j + 2, ..., c_j}`: exact
/// integer conditions, so the table never leaves out a solution. `None`
/// when no coordinate restricts the top coefficient. With the
/// homogenising coordinate carried by the top vector alone (as the Python
/// layer arranges, like solvediophant's scaled last line), the table is
/// `[false, true]`: the search becomes the closest-vector search around
/// that vector, and the kernel vectors with a zero homogenising coordinate,
/// which are never solutions, are not visited.
fn top_values(basis: &[Vec<i64>], bounds: &[i64]) -> Option<Vec<bool>> {
    let (top, rest) = basis.split_last()?;
    let mut max = TOP_VALUES_MAX;
    let mut restricting = Vec::new();
    for (j, (&v, &bound)) in top.iter().zip(bounds).enumerate() {
        if v != 0 && rest.iter().all(|b| b[j] == 0) {
            max = max.min(bound / v.abs());
            restricting.push((v, bound));
        }
    }
    if restricting.is_empty() || max >= TOP_VALUES_MAX {
        return None;
    }
    Some(
        (0..=max)
            .map(|x| {
                restricting
                    .iter()
                    .all(|&(v, bound)| admissible(x * v, bound))
            })
            .collect(),
    )
}

/// A subtree of the enumeration: coefficients `level..d` fixed.
#[derive(Clone)]
pub(super) struct Job {
    /// The fixed coefficients, top level first: `prefix[i]` is the
    /// coefficient of level `d - 1 - i`, for the `d - level` levels fixed.
    /// (Only the prefix is kept: a tree is cut into thousands of jobs.)
    pub(super) prefix: Vec<i64>,
    level: usize,
    partial: f64,
    free: bool,
    /// Discrepancies spent on the prefix: the sum over its levels of the
    /// value's position in the level's search order (0 for the first).
    discrepancy: u32,
}

impl Job {
    /// The subtree below `prefix` (top level first, at most `d` values),
    /// its squared projection and symmetry flag accumulated level by level
    /// as [`children`] does; `None` when the prefix is longer than the
    /// tree is deep.
    pub(super) fn from_prefix(gso: &Gso, prefix: &[i64]) -> Option<Job> {
        let d = gso.norms.len();
        let level = d.checked_sub(prefix.len())?;
        let mut job = Job {
            prefix: Vec::with_capacity(prefix.len()),
            level: d,
            partial: 0.0,
            free: true,
            discrepancy: 0,
        };
        for &c in prefix {
            let t = job.level - 1;
            let diff = c as f64 - job.center(gso, t);
            job.partial += diff * diff * gso.norms[t];
            job.free &= c == 0;
            job.prefix.push(c);
            job.level = t;
        }
        debug_assert_eq!(job.level, level);
        Some(job)
    }

    /// The coefficient of level `t` (`t >= level`) in a tree of depth `d`.
    fn coeff(&self, d: usize, t: usize) -> i64 {
        self.prefix[d - 1 - t]
    }

    /// The centre of level `t = level - 1`: `-sum_{j > t} mu[j][t] c_j`.
    fn center(&self, gso: &Gso, t: usize) -> f64 {
        let d = gso.norms.len();
        -(t + 1..d)
            .map(|j| gso.mu[j][t] * self.coeff(d, j) as f64)
            .sum::<f64>()
    }
}

/// Append to `out`, in search order, the children of `job` (whose
/// projection, as the walk's `proj` at its level, is `proj`) that pass
/// the radius, Hoelder's and the final entries' tests, as the walk tests them, so that a
/// prefix's discrepancy counts the positions the walk would (or `job`
/// itself when it is a leaf); each with its value's offset from the
/// centre, from which [`Tree::new`] builds its projection should it be
/// listed further (`scratch`, of `proj`'s length, holds it meanwhile).
/// `false`, with the listing cut short, once `out` holds more than
/// [`MAX_JOBS`] or the level has offered more than that many values (a
/// huge radius gives a level more values than could be tried here, with
/// no limit checked).
fn children(
    shared: &Shared,
    job: &Job,
    proj: &[f64],
    scratch: &mut [f64],
    out: &mut Vec<(Job, f64)>,
) -> bool {
    if job.level == 0 {
        out.push((job.clone(), 0.0));
        return out.len() <= MAX_JOBS;
    }
    let lattice = shared.lattice;
    let gso = &lattice.gso;
    let t = job.level - 1;
    let center = job.center(gso, t);
    let mut order = Order::new(center, job.free);
    let mut position = 0;
    let mut tried = 0;
    while let Some((c, diff, next)) = order.within(
        center,
        job.partial,
        gso.norms[t],
        lattice.radius_sq,
        lattice.allowed(t),
    ) {
        tried += 1;
        if tried > MAX_JOBS {
            return false;
        }
        let l1 = lattice
            .axpy_l1
            .run(scratch, proj, &gso.star[t], &lattice.weights, diff);
        if t == 0 || (hoelder(next, l1) && lattice.finals_plausible(t, scratch)) {
            let mut prefix = Vec::with_capacity(job.prefix.len() + 1);
            prefix.extend_from_slice(&job.prefix);
            prefix.push(c);
            let child = Job {
                prefix,
                level: t,
                partial: next,
                free: job.free && c == 0,
                discrepancy: job.discrepancy + lattice.spent(t, position),
            };
            out.push((child, diff));
            if out.len() > MAX_JOBS {
                return false;
            }
            position += 1;
        }
        order.step();
    }
    true
}

/// What the enumeration found.
#[derive(Debug, Clone, PartialEq)]
pub struct Enumeration {
    /// Lattice vectors within the bounds, at most `max_solutions`, in
    /// search order (lowest prefix first).
    pub solutions: Vec<Vec<i64>>,
    /// `None` when the whole tree was searched.
    pub stopped: Option<Stop>,
    pub nodes: u64,
    pub seconds: f64,
}

pub(super) struct Gso {
    mu: Vec<Vec<f64>>,
    /// `mu_t[t][j] = mu[j][t]`: the centre updates read along `j`.
    mu_t: Vec<Vec<f64>>,
    norms: Vec<f64>,
    /// The Gram-Schmidt vectors `b*_t`, for the projections in the
    /// infinity-norm test, padded with zeros to [`padded_len`].
    star: Vec<Vec<f64>>,
}

/// Length of the projections and of the Gram-Schmidt vectors in memory:
/// `dim` rounded up to whole SIMD lanes (the padding stays zero).
fn padded_len(dim: usize) -> usize {
    dim.div_ceil(LANES) * LANES
}

fn gram_schmidt(basis: &[Vec<i64>]) -> Result<Gso, Error> {
    let d = basis.len();
    let f: Vec<Vec<f64>> = basis
        .iter()
        .map(|b| b.iter().map(|&x| x as f64).collect())
        .collect();
    let mut star: Vec<Vec<f64>> = Vec::with_capacity(d);
    let mut mu = vec![vec![0.0; d]; d];
    let mut norms = vec![0.0; d];
    for i in 0..d {
        let mut v = f[i].clone();
        for j in 0..i {
            let m = crate::linalg::matrix::dot(&f[i], &star[j]) / norms[j];
            mu[i][j] = m;
            crate::linalg::matrix::axpy(&mut v, -m, &star[j]);
        }
        norms[i] = crate::linalg::matrix::dot(&v, &v);
        if norms[i].is_nan() || norms[i] <= 1e-9 {
            return Err(Error::InvalidOption {
                option: "basis",
                message: format!("the basis vectors are linearly dependent (vector {i})"),
            });
        }
        star.push(v);
    }
    let mu_t = (0..d).map(|t| (0..d).map(|j| mu[j][t]).collect()).collect();
    let padded = padded_len(basis[0].len());
    for v in &mut star {
        v.resize(padded, 0.0);
    }
    Ok(Gso {
        mu,
        mu_t,
        norms,
        star,
    })
}

/// A reduced kernel basis prepared for enumeration: its Gram-Schmidt data,
/// the bounds, and the values its top coefficient can take.
pub(super) struct Lattice {
    pub(super) gso: Gso,
    basis: Vec<Vec<i64>>,
    /// `c_j`: entry `j` of a solution lies in `{-c_j, -c_j + 2, ..., c_j}`.
    bounds: Vec<i64>,
    /// The bounds as floats, padded with zeros to [`padded_len`].
    weights: Vec<f64>,
    /// The projections' SIMD kernel on this CPU.
    axpy_l1: AxpyL1,
    /// The caller's squared radius, at most `sum_j c_j^2`, plus half a
    /// unit: integer vectors have integer squared norms, so the slack keeps
    /// vectors exactly on the sphere despite rounding in the Gram-Schmidt
    /// data.
    radius_sq: f64,
    /// The values the top coefficient can take ([`top_values`]).
    top: Option<Vec<bool>>,
    /// `finals[t]`: the entries that become final at level `t` (see
    /// [`final_entries`]).
    finals: Vec<Vec<usize>>,
    /// Levels `t >= free_from` spend no discrepancy (see
    /// [`Tree::with_free_width`]); the basis length when none is free.
    free_from: usize,
}

impl Lattice {
    /// Checks the shapes and that the basis is independent; `basis` must
    /// not be empty.
    pub(super) fn new(basis: &[Vec<i64>], bounds: &[i64], radius_sq: f64) -> Result<Self, Error> {
        check_shapes(basis, bounds)?;
        Ok(Lattice {
            gso: gram_schmidt(basis)?,
            basis: basis.to_vec(),
            bounds: bounds.to_vec(),
            weights: bounds
                .iter()
                .map(|&c| c as f64)
                .chain(std::iter::repeat(0.0))
                .take(padded_len(bounds.len()))
                .collect(),
            axpy_l1: AxpyL1::detect(),
            // No admissible vector is longer than the bounds allow: a
            // larger radius only widens the levels (a radius of 1e300 made
            // a 3-vector search run for minutes without a limit).
            radius_sq: radius_sq
                .min(bounds.iter().map(|&c| (c as f64) * (c as f64)).sum())
                .floor()
                + 0.5,
            top: top_values(basis, bounds),
            finals: final_entries(basis),
            free_from: basis.len(),
        })
    }

    /// Whether the entries of `proj`, the projection at level `t`, that
    /// are final there could be admissible (`plausible`, as the leaves
    /// screen them).
    #[inline(always)]
    fn finals_plausible(&self, t: usize, proj: &[f64]) -> bool {
        self.finals[t]
            .iter()
            .all(|&j| plausible(proj[j], self.bounds[j]))
    }

    /// The discrepancies that the value at `position` of level `t`'s
    /// search order spends: none on the free top levels.
    #[inline(always)]
    fn spent(&self, t: usize, position: u32) -> u32 {
        if t >= self.free_from {
            0
        } else {
            position
        }
    }

    /// The values level `t` may take, when it is the top level and they
    /// are restricted.
    fn allowed(&self, t: usize) -> Option<&[bool]> {
        self.top.as_deref().filter(|_| t + 1 == self.basis.len())
    }
}

/// For each level `t >= 1`, the entries `j` whose first nonzero basis
/// vector is `t` (`basis[i][j] == 0` for all `i < t`): once the
/// coefficients from `t` up are fixed, entry `j` of every completion is
/// final, and equals entry `j` of the projection at level `t` (the vectors
/// below `t`, and their Gram-Schmidt vectors, are zero there). So a node
/// whose final entries cannot be admissible has no solution below it: the
/// test solvediophant calls "prune only zeros". Level 0 is the leaf, which
/// tests every entry; an all-zero column is never final before it.
fn final_entries(basis: &[Vec<i64>]) -> Vec<Vec<usize>> {
    let mut finals = vec![Vec::new(); basis.len()];
    for j in 0..basis.first().map_or(0, Vec::len) {
        if let Some(t) = basis.iter().position(|b| b[j] != 0) {
            if t > 0 {
                finals[t].push(j);
            }
        }
    }
    finals
}

/// One search's state over a [`Lattice`]: its limits and counters.
pub(super) struct Shared<'a> {
    lattice: &'a Lattice,
    max_solutions: usize,
    deadline: Option<Instant>,
    node_limit: Option<u64>,
    pub(super) nodes: AtomicU64,
    cancel: &'a AtomicBool,
    /// Lowest prefix index known to hold enough solutions; later prefixes stop.
    done_below: AtomicUsize,
    /// A job cut by a limit hands back the part of its subtree it did not
    /// search ([`Walker::frontier`]), for [`super::subtrees`].
    pub(super) hand_back: bool,
}

impl<'a> Shared<'a> {
    /// A search that wants `max_solutions` (at least one) within `limits`,
    /// its clock started at `start`.
    pub(super) fn new(
        lattice: &'a Lattice,
        max_solutions: usize,
        limits: Limits,
        start: Instant,
        cancel: &'a AtomicBool,
    ) -> Self {
        Shared {
            lattice,
            max_solutions: max_solutions.max(1),
            deadline: limits.time_limit.and_then(|t| start.checked_add(t)),
            node_limit: limits.node_limit,
            nodes: AtomicU64::new(0),
            cancel,
            done_below: AtomicUsize::new(usize::MAX),
            hand_back: false,
        }
    }

    /// Why the search must stop, given `total` nodes counted so far.
    fn stop(&self, total: u64) -> Option<Stop> {
        if self.cancel.load(Ordering::Relaxed) {
            Some(Stop::Interrupted)
        } else if self.node_limit.is_some_and(|l| total >= l) {
            Some(Stop::NodeLimit)
        } else if self.deadline.is_some_and(|d| Instant::now() >= d) {
            Some(Stop::TimeLimit)
        } else {
            None
        }
    }
}

/// One level of a walk in progress.
#[derive(Clone, Copy, Default)]
struct Level {
    order: Order,
    center: f64,
    /// Squared norm of the projection from the levels above.
    partial: f64,
    /// Limited discrepancy: what the levels above left to spend.
    budget: Option<u32>,
    /// Values taken so far (those that passed the radius and Hoelder).
    position: u32,
}

/// Nodes a walker counts before it adds them to the shared total and
/// checks the limits.
const FLUSH: u64 = 1024;

struct Walker<'a, 'b> {
    shared: &'b Shared<'a>,
    index: usize,
    coeffs: Vec<i64>,
    /// `sig[t][j] = sum_{i >= j} c_i mu[i][t]`, valid for `j > begin[t]`.
    sig: Vec<Vec<f64>>,
    /// Highest `j` whose `sig[t][j]` is stale (lazy update, as in fplll).
    begin: Vec<usize>,
    /// `proj[t]`: the projection of every completion of the coefficients
    /// from `t` up onto `span(b*_t, ..., b*_{d-1})`, i.e.
    /// `sum_{j >= t} (c_j - centre_j) b*_j` (padded to [`padded_len`]).
    /// `proj[0]` is the lattice vector itself, up to rounding.
    proj: Vec<Vec<f64>>,
    /// The state of each level of the walk in progress.
    levels: Vec<Level>,
    found: Vec<Vec<i64>>,
    local_nodes: u64,
    stopped: Option<Stop>,
    /// Limited discrepancy: a value was passed over for want of budget.
    cut: bool,
    /// The level whose value a limit stopped the walk at (the value is
    /// the current one of its order, not yet searched).
    stop_level: usize,
}

impl<'a, 'b> Walker<'a, 'b> {
    fn new(shared: &'b Shared<'a>, index: usize) -> Self {
        let d = shared.lattice.basis.len();
        Walker {
            shared,
            index,
            coeffs: vec![0; d],
            sig: vec![vec![0.0; d + 1]; d],
            begin: vec![d - 1; d],
            proj: vec![vec![0.0; shared.lattice.weights.len()]; d + 1],
            levels: vec![Level::default(); d],
            found: Vec::new(),
            local_nodes: 0,
            stopped: None,
            cut: false,
            stop_level: 0,
        }
    }

    /// Make a used walker ready for job `index` without reallocating: every
    /// partial sum is marked stale, and the job's prefix rewrites the levels
    /// above it.
    fn reset(&mut self, index: usize) {
        let d = self.coeffs.len();
        self.index = index;
        self.coeffs.fill(0);
        self.begin.fill(d - 1);
        self.found.clear();
        self.local_nodes = 0;
        self.stopped = None;
        self.cut = false;
    }

    /// Search job `index` (its prefix set up top down, each projection
    /// building on the one above it), depth first or with `budget`
    /// discrepancies left; `true` when its whole subtree was searched.
    fn search_job(&mut self, job: &Job, index: usize, budget: Option<u32>) -> bool {
        let shared = self.shared;
        let (gso, d) = (&shared.lattice.gso, shared.lattice.basis.len());
        self.reset(index);
        for t in (job.level..d).rev() {
            let c = job.coeff(d, t);
            self.set(t, c);
            self.project(t, c as f64 - job.center(gso, t), 0.0);
        }
        if job.level > 0 {
            return self.walk(job.level - 1, job.partial, job.free, budget);
        }
        if !job.free && budget.is_none_or(|k| k == 0) {
            if let Some(y) = self.exact_vector() {
                if y.iter()
                    .zip(&shared.lattice.bounds)
                    .all(|(&v, &c)| admissible(v, c))
                {
                    self.found.push(y);
                }
            }
        }
        true
    }

    /// After a limit cut the depth-first walk of `job`: the prefixes of
    /// the part of its subtree not searched, in search order. Along the
    /// path the walk was on, from the deepest level up, each level's
    /// values after its current one (at the level where it stopped, the
    /// current value too: it was not searched) that pass the radius,
    /// Hoelder's and the final entries' tests, as [`children`] lists
    /// them; a subtree the walk finished is never listed again, and every
    /// one it did not finish is. `None` when the list would pass
    /// [`MAX_JOBS`] (the job is then searched again whole). Also the
    /// values listed (passing the tests or not): the nodes the walk would
    /// have counted for them, which searching the prefixes does not.
    fn frontier(&self, job: &Job) -> Option<(Vec<Vec<i64>>, u64)> {
        let lattice = self.shared.lattice;
        let gso = &lattice.gso;
        let top = job.level.checked_sub(1)?;
        let mut scratch = vec![0.0; lattice.weights.len()];
        let (mut out, mut listed) = (Vec::new(), 0);
        for u in self.stop_level..=top {
            let level = self.levels[u];
            let mut order = level.order;
            if u > self.stop_level && !order.step() {
                continue;
            }
            let path = || {
                let mut prefix = job.prefix.clone();
                prefix.extend((u + 1..=top).rev().map(|v| self.coeffs[v]));
                prefix
            };
            let mut tried = 0;
            while let Some((c, diff, next)) = order.within(
                level.center,
                level.partial,
                gso.norms[u],
                lattice.radius_sq,
                lattice.allowed(u),
            ) {
                tried += 1;
                if tried > MAX_JOBS || out.len() > MAX_JOBS {
                    return None;
                }
                // The value the walk stopped at was counted already.
                listed += u64::from(u > self.stop_level || tried > 1);
                let passes = u == 0 || {
                    let l1 = lattice.axpy_l1.run(
                        &mut scratch,
                        &self.proj[u + 1],
                        &gso.star[u],
                        &lattice.weights,
                        diff,
                    );
                    hoelder(next, l1) && lattice.finals_plausible(u, &scratch)
                };
                if passes {
                    let mut prefix = path();
                    prefix.push(c);
                    out.push(prefix);
                }
                order.step();
            }
        }
        Some((out, listed))
    }

    #[inline(always)]
    fn tick(&mut self) -> bool {
        self.local_nodes += 1;
        if self.local_nodes.is_multiple_of(FLUSH) {
            let total = self.shared.nodes.fetch_add(FLUSH, Ordering::Relaxed) + FLUSH;
            self.stopped = self.shared.stop(total);
            if self.shared.done_below.load(Ordering::Relaxed) < self.index {
                // An earlier prefix already has the answer.
                return false;
            }
        }
        self.stopped.is_none()
    }

    /// Set coefficient `t` to `c` and mark the centres below stale.
    #[inline(always)]
    fn set(&mut self, t: usize, c: i64) {
        self.coeffs[t] = c;
        if t > 0 && self.begin[t - 1] < t {
            self.begin[t - 1] = t;
        }
    }

    /// Set `proj[t] = proj[t + 1] + diff b*_t` and test it (Wassermann's
    /// infinity-norm pruning). Every completion `v` of the coefficients from
    /// `t` up projects to `p = proj[t]`, so
    /// `|p|_2^2 = <v, p> <= sum_j |v_j| |p_j| <= sum_j c_j |p_j|`: if
    /// `|p|_2^2 = partial` exceeds that, no solution lies below this node.
    /// Nor does one when an entry final at `t` cannot be admissible
    /// ([`final_entries`]).
    fn project(&mut self, t: usize, diff: f64, partial: f64) -> bool {
        let (lower, upper) = self.proj.split_at_mut(t + 1);
        let lattice = self.shared.lattice;
        let l1 = lattice.axpy_l1.run(
            &mut lower[t],
            &upper[0],
            &lattice.gso.star[t],
            &lattice.weights,
            diff,
        );
        hoelder(partial, l1) && lattice.finals_plausible(t, &lower[t])
    }

    /// [`Walker::project`] with kernel `K`, inlined into the walk.
    ///
    /// # Safety
    /// The CPU must have `K`'s instruction set.
    #[inline(always)]
    unsafe fn project_with<K: AxpyL1Kernel>(&mut self, t: usize, diff: f64, partial: f64) -> bool {
        let (lower, upper) = self.proj.split_at_mut(t + 1);
        let lattice = self.shared.lattice;
        let (out, above) = (&mut lower[t], &upper[0]);
        let (star, weights) = (&lattice.gso.star[t], &lattice.weights);
        // The lengths `AxpyL1::run` checks hold by construction: every
        // projection, Gram-Schmidt vector and the weights are padded alike.
        debug_assert!(out.len() == above.len() && out.len() == star.len());
        debug_assert!(out.len() == weights.len() && out.len() % LANES == 0);
        hoelder(partial, K::axpy_l1(out, above, star, weights, diff))
            && lattice.finals_plausible(t, out)
    }

    /// Leaf value `c` at level 0 (offset `diff` from its centre): keep the
    /// lattice vector if it is a solution; `false` when enough solutions
    /// are in hand. The float vector `proj[1] + diff b*_0` screens it entry
    /// by entry (almost every leaf fails on its first few entries), and
    /// only an entry far from every admissible integer rejects it; what
    /// passes is rebuilt from the coefficients in exact integers and
    /// tested again.
    fn leaf(&mut self, c: i64, diff: f64, free: bool) -> bool {
        self.coeffs[0] = c;
        if free && c == 0 {
            return true;
        }
        let star = &self.shared.lattice.gso.star[0];
        let screened = self.proj[1]
            .iter()
            .zip(star)
            .zip(&self.shared.lattice.bounds)
            .all(|((&p, &s), &bound)| plausible(p + diff * s, bound));
        if !screened {
            return true;
        }
        let Some(y) = self.exact_vector() else {
            return true;
        };
        if y.iter()
            .zip(&self.shared.lattice.bounds)
            .all(|(&v, &c)| admissible(v, c))
        {
            self.found.push(y);
            if self.found.len() >= self.shared.max_solutions {
                return false;
            }
        }
        true
    }

    /// `sum_t coeffs[t] basis[t]` in exact integer arithmetic; `None` if
    /// an entry leaves `i64` (no solution has such an entry).
    fn exact_vector(&self) -> Option<Vec<i64>> {
        let dim = self.shared.lattice.bounds.len();
        (0..dim)
            .map(|j| {
                let sum: i128 = self
                    .coeffs
                    .iter()
                    .zip(&self.shared.lattice.basis)
                    .map(|(&c, b)| i128::from(c) * i128::from(b[j]))
                    .sum();
                i64::try_from(sum).ok()
            })
            .collect()
    }

    /// The centre of level `t` given the coefficients above it, refreshing
    /// the stale part of `sig[t]` from the top down.
    #[inline(always)]
    fn center(&mut self, t: usize) -> f64 {
        let (sig, mu_t) = (&mut self.sig[t], &self.shared.lattice.gso.mu_t[t]);
        for j in (t + 1..=self.begin[t]).rev() {
            sig[j] = sig[j + 1] + self.coeffs[j] as f64 * mu_t[j];
        }
        if t > 0 && self.begin[t - 1] < self.begin[t] {
            self.begin[t - 1] = self.begin[t];
        }
        self.begin[t] = t;
        -self.sig[t][t + 1]
    }

    /// Enumerate levels `t, t-1, ..., 0` given the coefficients above `t`;
    /// `partial` is the squared norm of the projection so far and `free`
    /// says all coefficients above are zero (symmetry: first nonzero > 0).
    /// With `budget: None` the walk is depth first. `false` when it stopped
    /// early (a limit, enough solutions, or an earlier prefix with the
    /// answer), `true` when it searched the whole subtree.
    ///
    /// With `Some(budget)`, a limited-discrepancy search (Harvey & Ginsberg 1995, as
    /// solvediophant runs it): the same tree and tests, but the
    /// value at position `p` of a level's search order, counting only the
    /// values that pass the radius, infinity-norm and final-entry tests, spends `p` of
    /// `budget`, and a leaf is tested only when it spends the budget
    /// exactly (those that spend less were tested in an earlier pass).
    /// `cut` records a value passed over for want of budget: a pass with
    /// no cut has reached every leaf.
    ///
    /// The walk is compiled once per SIMD kernel, with that instruction set
    /// enabled throughout, so the projections inline into it.
    fn walk(&mut self, t: usize, partial: f64, free: bool, budget: Option<u32>) -> bool {
        match self.shared.lattice.axpy_l1 {
            // SAFETY: `AxpyL1::detect` chose these only where the CPU has
            // the instruction set.
            #[cfg(target_arch = "x86_64")]
            AxpyL1::Avx512 => unsafe { self.walk_avx512(t, partial, free, budget) },
            #[cfg(target_arch = "x86_64")]
            AxpyL1::Avx2 => unsafe { self.walk_avx2(t, partial, free, budget) },
            // SAFETY: the portable kernel runs anywhere.
            AxpyL1::Portable => unsafe { self.walk_levels::<Portable>(t, partial, free, budget) },
        }
    }

    /// # Safety
    /// The CPU must have AVX-512F.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn walk_avx512(
        &mut self,
        t: usize,
        partial: f64,
        free: bool,
        budget: Option<u32>,
    ) -> bool {
        self.walk_levels::<Avx512>(t, partial, free, budget)
    }

    /// # Safety
    /// The CPU must have AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn walk_avx2(
        &mut self,
        t: usize,
        partial: f64,
        free: bool,
        budget: Option<u32>,
    ) -> bool {
        self.walk_levels::<Avx2>(t, partial, free, budget)
    }

    /// [`Walker::walk`] with kernel `K`, one level at a time (no recursion,
    /// so that it inlines whole into the kernel's entry point).
    ///
    /// # Safety
    /// The CPU must have `K`'s instruction set.
    #[inline(always)]
    unsafe fn walk_levels<K: AxpyL1Kernel>(
        &mut self,
        top: usize,
        partial: f64,
        free: bool,
        budget: Option<u32>,
    ) -> bool {
        let lattice = self.shared.lattice;
        let radius = lattice.radius_sq;
        let mut t = top;
        self.enter(t, partial, free, budget);
        loop {
            let level = &mut self.levels[t];
            let norm = lattice.gso.norms[t];
            let value = level.order.within(
                level.center,
                level.partial,
                norm,
                radius,
                lattice.allowed(t),
            );
            let Some((c, diff, next)) = value else {
                // The level is done: back to the one above.
                self.set(t, 0);
                if t == top {
                    return true;
                }
                t += 1;
                self.levels[t].order.step();
                continue;
            };
            if !self.tick() {
                self.stop_level = t;
                return false;
            }
            if t > 0 && !self.project_with::<K>(t, diff, next) {
                // Hoelder: no bounded completion has this projection.
                self.levels[t].order.step();
                continue;
            }
            let level = &mut self.levels[t];
            let spent = lattice.spent(t, level.position);
            let rest = match level.budget {
                Some(budget) if spent > budget => {
                    self.cut = true;
                    level.order.done = true;
                    continue;
                }
                Some(budget) => Some(budget - spent),
                None => None,
            };
            level.position += 1;
            let free = level.order.free;
            if t == 0 {
                if rest.is_none_or(|r| r == 0) && !self.leaf(c, diff, free) {
                    self.coeffs[0] = 0;
                    return false;
                }
                self.coeffs[0] = c;
                self.levels[0].order.step();
                continue;
            }
            self.set(t, c);
            t -= 1;
            self.enter(t, next, free && c == 0, rest);
        }
    }

    /// Start level `t`: its centre and the first value of its order.
    #[inline(always)]
    fn enter(&mut self, t: usize, partial: f64, free: bool, budget: Option<u32>) {
        let center = self.center(t);
        self.levels[t] = Level {
            order: Order::new(center, free),
            center,
            partial,
            budget,
            position: 0,
        };
    }

    /// One random dive of Knuth's estimator (1975): from the root, the
    /// values of each level that pass the radius, infinity-norm and final-entry tests
    /// are listed, one is taken at random (`rng`), and the
    /// product of the list lengths so far is added up over the levels. Its
    /// mean over many dives is an unbiased estimate of the tree's node count.
    fn dive(&mut self, rng: &mut XorShift64) -> f64 {
        let d = self.coeffs.len();
        self.coeffs.fill(0);
        self.begin.fill(d - 1);
        let gso = &self.shared.lattice.gso;
        let radius = self.shared.lattice.radius_sq;
        let (mut t, mut partial, mut free) = (d - 1, 0.0, true);
        let (mut weight, mut total) = (1.0, 1.0);
        let mut children: Vec<(i64, f64, f64)> = Vec::new();
        loop {
            let center = self.center(t);
            let norm = gso.norms[t];
            children.clear();
            let allowed = self.shared.lattice.allowed(t);
            let mut order = Order::new(center, free);
            while let Some((c, diff, next)) = order.within(center, partial, norm, radius, allowed) {
                if t == 0 || self.project(t, diff, next) {
                    children.push((c, diff, next));
                }
                if !order.step() {
                    break;
                }
            }
            if children.is_empty() {
                break;
            }
            weight *= children.len() as f64;
            total += weight;
            if t == 0 {
                break;
            }
            let (c, diff, next) = children[(rng.next_u64() % children.len() as u64) as usize];
            self.project(t, diff, next);
            self.set(t, c);
            partial = next;
            free = free && c == 0;
            t -= 1;
        }
        self.coeffs.fill(0);
        total
    }
}

/// Hoelder's test on a projection of squared norm `partial` and weighted
/// 1-norm `l1`: `false` when no bounded completion has it.
#[inline(always)]
fn hoelder(partial: f64, l1: f64) -> bool {
    partial <= l1 * (1.0 + 1e-9) + 1e-6
}

/// Entry `y` of a solution: `|y| <= bound` with the parity of `bound`.
fn admissible(y: i64, bound: i64) -> bool {
    y.abs() <= bound && (y - bound).rem_euclid(2) == 0
}

/// Whether the float value `v` of an integer entry could be admissible:
/// `false` only when `v` is more than half a unit beyond the bound, or
/// within a quarter of an integer that is not admissible. Rounding in the
/// projections is many orders of magnitude below these margins, so a
/// solution is never screened out; the exact test follows.
fn plausible(v: f64, bound: i64) -> bool {
    if v.abs() > bound as f64 + 0.5 {
        return false;
    }
    let r = v.round();
    (v - r).abs() > 0.25 || admissible(r as i64, bound)
}

/// Knuth's estimate of the node count of the depth-first tree that
/// [`enumerate_bounded`] searches (radius, infinity-norm and final-entry tests; the
/// mean of `dives` random dives from a fixed seed, so repeatable). Used to
/// choose between a plain depth-first search and the restarts; it proves
/// nothing.
pub fn estimate_nodes(
    basis: &[Vec<i64>],
    bounds: &[i64],
    radius_sq: f64,
    dives: usize,
) -> Result<f64, Error> {
    if basis.is_empty() {
        return Ok(0.0);
    }
    let lattice = Lattice::new(basis, bounds, radius_sq)?;
    let cancel = AtomicBool::new(false);
    let shared = Shared::new(&lattice, 1, Limits::default(), Instant::now(), &cancel);
    let mut walker = Walker::new(&shared, 0);
    let mut rng = XorShift64::new(0x9E37_79B9_7F4A_7C15);
    let sum: f64 = (0..dives.max(1)).map(|_| walker.dive(&mut rng)).sum();
    Ok(sum / dives.max(1) as f64)
}

fn check_shapes(basis: &[Vec<i64>], bounds: &[i64]) -> Result<(), Error> {
    let dim = basis[0].len();
    if basis.iter().any(|b| b.len() != dim) {
        return Err(Error::InvalidOption {
            option: "basis",
            message: "all basis vectors must have the same length".into(),
        });
    }
    if bounds.len() != dim || bounds.iter().any(|&c| c < 1) {
        return Err(Error::InvalidOption {
            option: "bounds",
            message: format!("need {dim} positive bounds, one per basis coordinate"),
        });
    }
    Ok(())
}

/// Every vector `y` of the lattice spanned by `basis` (rows) with squared
/// norm at most `radius_sq` and each entry `y_j` in
/// `{-bounds[j], -bounds[j] + 2, ..., bounds[j]}`, up to sign and up to
/// `max_solutions` of them: limited-discrepancy passes while they have
/// spent fewer than `lds_nodes` nodes (see [`Tree::limited_discrepancy`];
/// their top levels free as [`Tree::with_free_width`] says for
/// `lds_free_width`), then the depth-first search. Runs on the current
/// rayon pool.
#[allow(clippy::too_many_arguments)] // the search's whole input, one parameter each
pub fn enumerate_bounded(
    basis: &[Vec<i64>],
    bounds: &[i64],
    radius_sq: f64,
    max_solutions: usize,
    lds_nodes: u64,
    lds_free_width: usize,
    limits: Limits,
    cancel: &AtomicBool,
) -> Result<Enumeration, Error> {
    let start = Instant::now();
    let mut tree = Tree::with_free_width(basis, bounds, radius_sq, lds_free_width)?;
    let wanted = max_solutions.max(1);
    let mut lds = Enumeration {
        solutions: Vec::new(),
        stopped: None,
        nodes: 0,
        seconds: 0.0,
    };
    if lds_nodes > 0 {
        let (out, complete) = tree.limited_discrepancy(wanted, lds_nodes, limits, cancel);
        let stopped_by_user = out.stopped.is_some_and(|s| s != Stop::NodeLimit)
            || limits.node_limit.is_some_and(|l| out.nodes >= l);
        if out.solutions.len() >= wanted || complete || stopped_by_user {
            return Ok(out);
        }
        lds = out;
    }
    // Fewer solutions than wanted: the depth-first search finds them
    // again, in its own order, with what is left of the limits.
    let limits = Limits {
        time_limit: limits.time_limit.map(|t| t.saturating_sub(start.elapsed())),
        node_limit: limits.node_limit.map(|l| l.saturating_sub(lds.nodes)),
    };
    let mut out = tree.depth_first(wanted, limits, cancel);
    if out.stopped.is_some() {
        // Cut by a limit: keep what the passes found besides.
        let mut seen: HashSet<Vec<i64>> = out.solutions.iter().cloned().collect();
        for y in lds.solutions {
            if out.solutions.len() < wanted && seen.insert(y.clone()) {
                out.solutions.push(y);
            }
        }
    }
    out.nodes += lds.nodes;
    out.seconds = start.elapsed().as_secs_f64();
    Ok(out)
}

/// The enumeration tree of one reduced kernel basis, cut at its top levels
/// into prefixes (the parallel jobs). Its depth-first search can run in
/// pieces: each call of [`Tree::depth_first`] goes on with the prefixes
/// not searched to their end yet, so a budgeted search interleaved with
/// other work loses only the prefixes it was cut in.
///
/// The cut depends only on the lattice: the first depth with at least
/// `PREFIXES` nodes, in search order. So a complete search visits the same
/// nodes and reports the same solution at any thread count (a node limit
/// cuts it within FLUSH nodes per thread, so the count of a limited search
/// can differ by that much). A level of very wide branching (a huge
/// radius) would list too many prefixes at once, with no limit checked:
/// the depth before it is used, or the whole tree as one job.
pub struct Tree {
    lattice: Option<Lattice>,
    pub(super) jobs: Vec<Job>,
    /// Depth first: the prefixes searched to their end.
    searched: Vec<bool>,
    /// Depth first: the solutions found so far, with their prefix, in
    /// prefix order.
    found: Vec<(usize, Vec<i64>)>,
    /// Nodes visited while listing the prefixes, reported with the first
    /// search's count (then 0): a tree listed down to its leaves is
    /// searched there, and a search that found its solution that way
    /// still visited them.
    pub(super) listing: AtomicU64,
}

/// The projections of the listing's depth `deeper` (flat, one after
/// another), each built on its parent's (`parents[k]`, an index into
/// `jobs`, the depth above, whose projections are `projs`) with its
/// value's offset `diffs[k]` from the centre, as [`children`] computed it;
/// a leaf listed again keeps its own.
fn next_projections(
    lattice: &Lattice,
    jobs: &[Job],
    projs: &[f64],
    deeper: &[Job],
    parents: &[usize],
    diffs: &[f64],
) -> Vec<f64> {
    let padded = lattice.weights.len();
    let mut next = vec![0.0; deeper.len() * padded];
    for (k, out) in next.chunks_exact_mut(padded).enumerate() {
        let p = parents[k];
        let above = &projs[p * padded..(p + 1) * padded];
        let child = &deeper[k];
        if child.prefix.len() == jobs[p].prefix.len() {
            out.copy_from_slice(above);
        } else {
            lattice.axpy_l1.run(
                out,
                above,
                &lattice.gso.star[child.level],
                &lattice.weights,
                diffs[k],
            );
        }
    }
    next
}

/// The nodes of the tree's top depths, level by level, in search order:
/// each depth is the children of the one above, listed while `expand`
/// holds for the depth in hand, and the depth above is kept when a level is
/// too wide to list. Returns the last depth listed (the root alone when
/// nothing was) and the nodes visited to list it.
fn list_top(lattice: &Lattice, expand: impl Fn(&[Job]) -> bool) -> (Vec<Job>, u64) {
    let d = lattice.gso.norms.len();
    let root = Job {
        prefix: Vec::new(),
        level: d,
        partial: 0.0,
        free: true,
        discrepancy: 0,
    };
    // `projs` holds the projections of the depth being expanded, one after
    // another; the last depth listed needs none (a search sets its
    // projections up from the prefix).
    let padded = lattice.weights.len();
    let mut jobs = vec![root];
    let mut projs = vec![0.0; padded];
    let mut scratch = vec![0.0; padded];
    let mut listing = 0u64;
    let cancel = AtomicBool::new(false);
    let shared = Shared::new(lattice, 1, Limits::default(), Instant::now(), &cancel);
    while expand(&jobs) {
        let mut deeper = Vec::with_capacity(jobs.len() * 2);
        let mut parents = Vec::with_capacity(jobs.len() * 2);
        let listed = jobs.iter().enumerate().all(|(i, job)| {
            let proj = &projs[i * padded..(i + 1) * padded];
            let listed = children(&shared, job, proj, &mut scratch, &mut deeper);
            parents.resize(deeper.len(), i);
            listed
        });
        if !listed {
            // Too wide to list: the depth above is the cut.
            break;
        }
        listing += jobs.iter().filter(|j| j.level > 0).count() as u64;
        let (deeper, diffs): (Vec<Job>, Vec<f64>) = deeper.into_iter().unzip();
        if expand(&deeper) {
            projs = next_projections(lattice, &jobs, &projs, &deeper, &parents, &diffs);
        }
        jobs = deeper;
    }
    (jobs, listing)
}

impl Tree {
    /// Prepare the enumeration of `basis` (rows; may be empty, a lattice
    /// with no nonzero vector): checks the shapes and that the basis is
    /// independent, then lists the prefixes.
    pub fn new(basis: &[Vec<i64>], bounds: &[i64], radius_sq: f64) -> Result<Self, Error> {
        Self::with_free_width(basis, bounds, radius_sq, 0)
    }

    /// [`Tree::new`], with the top levels free in its limited-discrepancy
    /// passes (they spend no discrepancy) down to the deepest depth at
    /// which the tree holds at most `free_width` nodes (none when 0). The
    /// passes stay complete: a leaf still spends a fixed number of
    /// discrepancies, the sum of its positions on the levels below.
    pub fn with_free_width(
        basis: &[Vec<i64>],
        bounds: &[i64],
        radius_sq: f64,
        free_width: usize,
    ) -> Result<Self, Error> {
        let d = basis.len();
        if d == 0 {
            return Ok(Tree {
                lattice: None,
                jobs: Vec::new(),
                searched: Vec::new(),
                found: Vec::new(),
                listing: AtomicU64::new(0),
            });
        }
        let mut lattice = Lattice::new(basis, bounds, radius_sq)?;
        if free_width > 0 {
            let (top, _) = list_top(&lattice, |jobs| {
                jobs.len() <= free_width && jobs.iter().any(|j| j.level > 0)
            });
            // An empty tree (no node at some depth) has no level to free.
            if let Some(first) = top.first() {
                let depth = d - first.level;
                lattice.free_from = d - if top.len() > free_width {
                    depth - 1
                } else {
                    depth
                };
            }
        }
        let (jobs, listing) = list_top(&lattice, |jobs| {
            jobs.len() < PREFIXES && jobs.iter().any(|j| j.level > 0)
        });
        Ok(Tree {
            lattice: Some(lattice),
            searched: vec![false; jobs.len()],
            jobs,
            found: Vec::new(),
            listing: AtomicU64::new(listing),
        })
    }

    /// The first search counts the listing's nodes as its own, against
    /// its node limit too.
    fn count_listing(&self, shared: &Shared) {
        let listed = self.listing.swap(0, Ordering::Relaxed);
        shared.nodes.fetch_add(listed, Ordering::Relaxed);
    }

    /// Length of the lattice vectors (0 for an empty basis).
    pub fn dim(&self) -> usize {
        self.lattice.as_ref().map_or(0, |l| l.bounds.len())
    }

    /// Share of the prefixes the depth-first search has searched to their
    /// end (1.0 once it is complete).
    pub fn searched_fraction(&self) -> f64 {
        if self.jobs.is_empty() {
            return 1.0;
        }
        self.searched.iter().filter(|&&s| s).count() as f64 / self.jobs.len() as f64
    }

    /// Go on with the depth-first search until `max_solutions` solutions
    /// are in hand (the first ones in search order when the search runs
    /// uncut), the tree is exhausted, or a limit of this call stops it
    /// (`stopped`). `nodes` counts this call's nodes. Runs on the current
    /// rayon pool.
    pub fn depth_first(
        &mut self,
        max_solutions: usize,
        limits: Limits,
        cancel: &AtomicBool,
    ) -> Enumeration {
        let start = Instant::now();
        let wanted = max_solutions.max(1);
        let Some(lattice) = &self.lattice else {
            return Enumeration::empty(start);
        };
        let shared = Shared::new(lattice, wanted, limits, start, cancel);
        self.count_listing(&shared);
        let (results, _) = run_jobs(&shared, &self.jobs, None, &self.searched, 0);
        let mut stopped = None;
        // A prefix cut by a limit and searched again finds its solutions
        // again: kept once (a set, not a scan of the list, which grew
        // quadratic in the solutions wanted: 10^5 took 39 s).
        let mut seen: HashSet<(usize, Vec<i64>)> = self.found.iter().cloned().collect();
        for (index, result) in results.into_iter().enumerate() {
            self.searched[index] |= result.searched;
            for y in result.found {
                if seen.insert((index, y.clone())) {
                    self.found.push((index, y));
                }
            }
            stopped = stopped.or(result.stop);
        }
        self.found.sort_by_key(|(i, _)| *i);
        let solutions: Vec<Vec<i64>> = self
            .found
            .iter()
            .take(wanted)
            .map(|(_, y)| y.clone())
            .collect();
        if solutions.len() >= wanted || self.searched.iter().all(|&s| s) {
            stopped = None;
        }
        Enumeration {
            solutions,
            stopped,
            nodes: shared.nodes.load(Ordering::Relaxed),
            seconds: start.elapsed().as_secs_f64(),
        }
    }

    /// Limited-discrepancy passes (Harvey & Ginsberg 1995), discrepancy 0,
    /// 1, 2, ..., each on the whole tree: on feasible market-split
    /// instances a solution usually lies on a path that leaves the search
    /// order at few levels, far from the start of the depth-first order.
    /// Each pass is deterministic; passes stop once `max_solutions` are in
    /// hand, once `lds_nodes` are spent (checked between passes), or at a
    /// limit. Returns what was found and whether the passes were complete:
    /// a pass that passed over nothing has seen every leaf, so an empty
    /// result is then a proof. Independent of the depth-first search.
    pub fn limited_discrepancy(
        &self,
        max_solutions: usize,
        lds_nodes: u64,
        limits: Limits,
        cancel: &AtomicBool,
    ) -> (Enumeration, bool) {
        let start = Instant::now();
        let wanted = max_solutions.max(1);
        let Some(lattice) = &self.lattice else {
            return (Enumeration::empty(start), true);
        };
        let shared = Shared::new(lattice, wanted, limits, start, cancel);
        self.count_listing(&shared);
        let none = vec![false; self.jobs.len()];
        let mut found: Vec<Vec<i64>> = Vec::new();
        let mut discrepancy = 0u32;
        let mut pass_nodes = 0;
        let (stopped, complete) = loop {
            // A pass after a small one starts on this thread alone.
            let serial = if pass_nodes < SERIAL_AFTER {
                SERIAL_NODES
            } else {
                0
            };
            let before = shared.nodes.load(Ordering::Relaxed);
            let (results, cut) = run_jobs(&shared, &self.jobs, Some(discrepancy), &none, serial);
            pass_nodes = shared.nodes.load(Ordering::Relaxed) - before;
            let (more, stopped) = collect(results, wanted - found.len());
            found.extend(more);
            if found.len() >= wanted {
                break (None, false);
            }
            if stopped.is_some() || !cut {
                break (stopped, stopped.is_none());
            }
            if shared.nodes.load(Ordering::Relaxed) >= lds_nodes {
                break (Some(Stop::NodeLimit), false);
            }
            discrepancy += 1;
            shared.done_below.store(usize::MAX, Ordering::Relaxed);
        };
        let out = Enumeration {
            solutions: found,
            stopped,
            nodes: shared.nodes.load(Ordering::Relaxed),
            seconds: start.elapsed().as_secs_f64(),
        };
        (out, complete)
    }
}

impl Enumeration {
    fn empty(start: Instant) -> Self {
        Enumeration {
            solutions: Vec::new(),
            stopped: None,
            nodes: 0,
            seconds: start.elapsed().as_secs_f64(),
        }
    }
}

/// What one job of [`run_jobs`] did.
#[derive(Default)]
pub(super) struct JobResult {
    pub(super) found: Vec<Vec<i64>>,
    pub(super) stop: Option<Stop>,
    /// Searched to its end (not passed over, cut by a limit or left once
    /// an earlier prefix had the answer).
    pub(super) searched: bool,
    /// With [`Shared::hand_back`], for a job a limit cut: the prefixes of
    /// the part of its subtree not searched, `None` when it could not be
    /// listed (the job is then searched again whole).
    pub(super) rest: Option<(Vec<Vec<i64>>, u64)>,
}

/// Run every job not already `searched`, depth first, or as one
/// limited-discrepancy pass with `discrepancy` to spend (jobs whose prefix
/// spends more are passed over), on the current rayon pool. The calling
/// thread takes the jobs alone until it has spent `serial` nodes (checked
/// between jobs), then the whole pool takes the rest: a small pass ends
/// before any worker would have woken. Returns each job's result, in job
/// order, and whether anything was passed over for want of discrepancy.
pub(super) fn run_jobs(
    shared: &Shared,
    jobs: &[Job],
    discrepancy: Option<u32>,
    searched: &[bool],
    serial: u64,
) -> (Vec<JobResult>, bool) {
    let cut = AtomicBool::new(false);
    // Workers take the jobs in search order from a shared counter: the
    // most promising prefixes first, and a solution found in job i only
    // waits for the jobs before it, which started earlier.
    let next = AtomicUsize::new(0);
    let run_job = |w: &mut Walker, index: usize| -> JobResult {
        if searched[index] {
            return JobResult::default();
        }
        // A job that starts after a limit was reached does not run: the
        // overshoot stays below FLUSH nodes per thread.
        if let Some(stop) = shared.stop(shared.nodes.load(Ordering::Relaxed)) {
            return JobResult {
                stop: Some(stop),
                ..JobResult::default()
            };
        }
        let job = &jobs[index];
        let budget = match discrepancy {
            Some(k) if job.discrepancy > k => {
                cut.store(true, Ordering::Relaxed);
                return JobResult::default();
            }
            Some(k) => Some(k - job.discrepancy),
            None => None,
        };
        if shared.done_below.load(Ordering::Relaxed) < index {
            return JobResult::default();
        }
        let complete = w.search_job(job, index, budget);
        if w.cut {
            cut.store(true, Ordering::Relaxed);
        }
        let cut_short = !complete && w.stopped.is_some() && budget.is_none();
        let rest = (shared.hand_back && cut_short)
            .then(|| w.frontier(job))
            .flatten();
        if w.found.len() >= shared.max_solutions {
            shared.done_below.fetch_min(index, Ordering::Relaxed);
        }
        shared
            .nodes
            .fetch_add(w.local_nodes % FLUSH, Ordering::Relaxed);
        JobResult {
            found: std::mem::take(&mut w.found),
            stop: w.stopped,
            searched: complete && w.stopped.is_none(),
            rest,
        }
    };
    // Each worker keeps the results that say something, with their index
    // (most jobs of a pass are passed over: a slot per job cost more).
    let take = |w: &mut Walker, kept: &mut Vec<(usize, JobResult)>, until: Option<u64>| loop {
        if until.is_some_and(|u| shared.nodes.load(Ordering::Relaxed) >= u) {
            break;
        }
        let index = next.fetch_add(1, Ordering::Relaxed);
        if index >= jobs.len() {
            break;
        }
        let result = run_job(w, index);
        if !result.found.is_empty() || result.stop.is_some() || result.searched {
            kept.push((index, result));
        }
    };
    let mut kept = Vec::new();
    if serial > 0 {
        // One walker's buffers are O(d^2).
        let mut w = Walker::new(shared, 0);
        let until = shared.nodes.load(Ordering::Relaxed).saturating_add(serial);
        take(&mut w, &mut kept, Some(until));
    }
    if next.load(Ordering::Relaxed) < jobs.len() {
        let more: Vec<Vec<(usize, JobResult)>> = (0..rayon::current_num_threads())
            .into_par_iter()
            .map(|_| {
                let (mut w, mut kept) = (Walker::new(shared, 0), Vec::new());
                take(&mut w, &mut kept, None);
                kept
            })
            .collect();
        kept.extend(more.into_iter().flatten());
    }
    let mut results: Vec<JobResult> = (0..jobs.len()).map(|_| JobResult::default()).collect();
    for (index, result) in kept {
        results[index] = result;
    }
    (results, cut.load(Ordering::Relaxed))
}

/// The solutions of the jobs in job order, up to `wanted`, and the limit
/// that stopped the first job short of them, if any.
fn collect(results: Vec<JobResult>, wanted: usize) -> (Vec<Vec<i64>>, Option<Stop>) {
    let mut solutions = Vec::new();
    let mut stopped = None;
    for result in results {
        if solutions.len() >= wanted {
            break;
        }
        solutions.extend(result.found);
        if result.stop.is_some() && solutions.len() < wanted {
            stopped = result.stop;
            break;
        }
    }
    solutions.truncate(wanted);
    (solutions, stopped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_pm1_vectors_of_a_small_lattice() {
        // Lattice spanned by (1, 1, 0) and (0, 1, 1): the +-1 vectors up to
        // sign are (1, 1, ... ) combos: a - b = (1, 0, -1) no; a + b = (1, 2, 1) no.
        // Use (1, 1, 1) and (1, -1, 1): both are +-1.
        let basis = vec![vec![1, 1, 1], vec![1, -1, 1]];
        let cancel = AtomicBool::new(false);
        let e = enumerate_bounded(
            &basis,
            &[1, 1, 1],
            3.0,
            10,
            0,
            0,
            Limits::default(),
            &cancel,
        )
        .unwrap();
        let mut got = e.solutions.clone();
        got.sort();
        assert_eq!(got.len(), 2);
        assert!(got.contains(&vec![1, 1, 1]) || got.contains(&vec![-1, -1, -1]));
        assert!(got.contains(&vec![1, -1, 1]) || got.contains(&vec![-1, 1, -1]));
        assert_eq!(e.stopped, None);
    }

    #[test]
    fn bounds_admit_every_entry_of_the_right_parity() {
        // The lattice Z^2 with bounds (2, 1): entries in {-2, 0, 2} x {-1, 1}.
        let basis = vec![vec![1, 0], vec![0, 1]];
        let cancel = AtomicBool::new(false);
        let e =
            enumerate_bounded(&basis, &[2, 1], 5.0, 10, 0, 0, Limits::default(), &cancel).unwrap();
        let mut got: Vec<Vec<i64>> = e
            .solutions
            .iter()
            .map(|y| {
                if y[1] < 0 {
                    y.iter().map(|v| -v).collect()
                } else {
                    y.clone()
                }
            })
            .collect();
        got.sort();
        assert_eq!(got, vec![vec![-2, 1], vec![0, 1], vec![2, 1]]);
        let bad = enumerate_bounded(&basis, &[2], 5.0, 10, 0, 0, Limits::default(), &cancel);
        assert!(bad.is_err());
    }

    /// The lattice of integer vectors with an even coordinate sum, basis
    /// `2 e_0` and `e_j - e_0`: with an even `dim`, every +-1 vector is in it.
    fn ones_lattice(dim: usize) -> Vec<Vec<i64>> {
        let mut basis = vec![vec![0; dim]; dim];
        basis[0][0] = 2;
        for (j, row) in basis.iter_mut().enumerate().skip(1) {
            row[j] = 1;
            row[0] = -1;
        }
        basis
    }

    #[test]
    fn the_top_coefficient_is_restricted_only_by_coordinates_it_alone_carries() {
        // Coordinate 2 is carried by the top vector alone, with entry 1 and
        // bound 1: its coefficient must be 1 (0 and 2 give entries 0 and 2).
        let basis = vec![vec![2, 0, 0], vec![1, 1, 0], vec![1, 1, 1]];
        assert_eq!(top_values(&basis, &[1, 1, 1]), Some(vec![false, true]));
        // Bound 3 and entry -1: 1 and 3 (odd entries up to 3).
        assert_eq!(
            top_values(&basis, &[1, 1, 3]),
            Some(vec![false, true, false, true])
        );
        // Bound 2 and entry 2: 0 or 1 (entries 0 and 2, even).
        let even = vec![vec![2, 0, 0], vec![1, 1, 0], vec![1, 1, 2]];
        assert_eq!(top_values(&even, &[1, 1, 2]), Some(vec![true, true]));
        // Another vector touches every coordinate: no restriction.
        let mixed = vec![vec![1, 1, 1], vec![1, -1, 1]];
        assert_eq!(top_values(&mixed, &[1, 1, 1]), None);
        // The restriction changes no answer: the same solutions as the
        // basis with the homogenising coordinate spread over two vectors.
        let cancel = AtomicBool::new(false);
        let all = |b: &[Vec<i64>]| {
            let mut got =
                enumerate_bounded(b, &[1, 1, 1], 3.0, 100, 0, 0, Limits::default(), &cancel)
                    .unwrap()
                    .solutions;
            for y in got.iter_mut() {
                if y[2] < 0 {
                    y.iter_mut().for_each(|v| *v = -*v);
                }
            }
            got.sort();
            got
        };
        let spread = vec![vec![2, 0, 0], vec![1, 1, 1], vec![1, 1, 2]];
        assert_eq!(top_values(&spread, &[1, 1, 1]), None);
        assert_eq!(all(&basis), all(&spread));
        assert_eq!(
            all(&basis),
            vec![
                vec![-1, -1, 1],
                vec![-1, 1, 1],
                vec![1, -1, 1],
                vec![1, 1, 1]
            ]
        );
    }

    #[test]
    fn a_depth_first_search_in_pieces_finds_what_one_search_finds() {
        // The first row made nonzero everywhere (the same lattice): no entry
        // is final above the leaves, which keeps the tree large enough to
        // be cut into pieces.
        let mut basis = ones_lattice(12);
        fold_into_first_row(&mut basis, || 1);
        let bounds = vec![1; 12];
        let cancel = AtomicBool::new(false);
        let whole = enumerate_bounded(
            &basis,
            &bounds,
            12.0,
            5000,
            0,
            0,
            Limits::default(),
            &cancel,
        )
        .unwrap();
        assert_eq!(whole.solutions.len(), 2048);
        let mut tree = Tree::new(&basis, &bounds, 12.0).unwrap();
        let piece = Limits {
            time_limit: None,
            node_limit: Some(3000),
        };
        let mut pieces = 0;
        let mut nodes = 0;
        let last = loop {
            let out = tree.depth_first(5000, piece, &cancel);
            pieces += 1;
            nodes += out.nodes;
            assert!(out.nodes <= 3000 + FLUSH * rayon::current_num_threads() as u64);
            if out.stopped.is_none() {
                break out;
            }
            assert_eq!(out.stopped, Some(Stop::NodeLimit));
            assert!(tree.searched_fraction() < 1.0);
        };
        assert!(pieces > 3, "{pieces} pieces");
        assert_eq!(tree.searched_fraction(), 1.0);
        // The same vectors in the same (search) order; the pieces redo the
        // prefixes they were cut in, so they count more nodes.
        assert_eq!(last.solutions, whole.solutions);
        assert!(nodes >= whole.nodes);
        // A finished tree answers at once.
        let again = tree.depth_first(5000, Limits::default(), &cancel);
        assert_eq!((again.solutions, again.nodes), (whole.solutions, 0));
    }

    #[test]
    fn an_entry_is_screened_out_only_far_from_every_admissible_integer() {
        assert!(plausible(1.0 + 1e-9, 1) && plausible(-3.0, 3) && plausible(0.0, 2));
        assert!(!plausible(0.0, 1) && !plausible(2.0, 3) && !plausible(1.6, 1));
        // Halfway between integers: left to the exact test.
        assert!(plausible(0.5, 1) && plausible(1.5, 2));
    }

    #[test]
    fn entries_are_final_at_their_first_nonzero_basis_vector() {
        let basis = vec![
            vec![1, 0, 0, 2, 0],
            vec![0, 1, 0, 1, 0],
            vec![1, 1, 0, 0, 3],
        ];
        // Entry 0 and 3 have row 0, final only at the leaf; entry 2 is zero
        // in every row, never final before it.
        let expected: Vec<Vec<usize>> = vec![vec![], vec![1], vec![4]];
        assert_eq!(final_entries(&basis), expected);
        assert!(final_entries(&[]).is_empty());
    }

    /// Add to the first row `multiplier()` times each later row: a basis of
    /// the same lattice (a unimodular change), whose first row is usually
    /// nonzero in every entry, so that no entry is final above the leaves.
    fn fold_into_first_row(basis: &mut [Vec<i64>], mut multiplier: impl FnMut() -> i64) {
        let (first, rest) = basis.split_first_mut().expect("a basis with rows");
        for row in rest.iter() {
            let r = multiplier();
            for (v, &b) in first.iter_mut().zip(row) {
                *v += r * b;
            }
        }
    }

    /// Every solution, up to sign, of a complete search of `basis`.
    fn all_solutions(basis: &[Vec<i64>], bounds: &[i64], radius_sq: f64) -> Vec<Vec<i64>> {
        let cancel = AtomicBool::new(false);
        let e = enumerate_bounded(
            basis,
            bounds,
            radius_sq,
            1 << 20,
            0,
            0,
            Limits::default(),
            &cancel,
        )
        .unwrap();
        assert_eq!(e.stopped, None);
        let mut out: Vec<Vec<i64>> = e
            .solutions
            .into_iter()
            .map(|y| {
                let first = y.iter().find(|&&v| v != 0).copied().unwrap_or(0);
                if first < 0 {
                    y.iter().map(|v| -v).collect()
                } else {
                    y
                }
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn the_final_entries_test_loses_no_solution() {
        // Sparse bases, many of whose entries are final above the leaves,
        // against a basis of the same lattice where none is (its first row
        // is nonzero everywhere, so the test never applies there): the
        // same solutions.
        let mut rng = XorShift64::new(11);
        let (mut compared, mut with_solutions) = (0, 0);
        while compared < 40 {
            let (d, dim) = (6, 9);
            let bounds: Vec<i64> = (0..dim).map(|j| 1 + i64::from(j % 3 == 0)).collect();
            let mut basis: Vec<Vec<i64>> = (0..d)
                .map(|_| {
                    (0..dim)
                        .map(|_| match rng.next_u64() % 4 {
                            0 => 1,
                            1 => -1,
                            _ => 0,
                        })
                        .collect()
                })
                .collect();
            // A planted solution on top, in a sign pattern of its own.
            basis[d - 1] = bounds
                .iter()
                .map(|&c| {
                    let sign = if rng.next_u64().is_multiple_of(2) {
                        1
                    } else {
                        -1
                    };
                    sign * if c == 1 {
                        1
                    } else {
                        2 * (rng.next_u64() % 2) as i64
                    }
                })
                .collect();
            let radius_sq = bounds.iter().map(|c| (c * c) as f64).sum();
            if gram_schmidt(&basis).is_err() || final_entries(&basis).iter().all(Vec::is_empty) {
                continue;
            }
            let mut dense = basis.clone();
            fold_into_first_row(&mut dense, || 1 + (rng.next_u64() % 3) as i64);
            if dense[0].contains(&0) {
                continue;
            }
            assert!(final_entries(&dense).iter().all(Vec::is_empty));
            let solutions = all_solutions(&basis, &bounds, radius_sq);
            assert_eq!(solutions, all_solutions(&dense, &bounds, radius_sq));
            with_solutions += usize::from(!solutions.is_empty());
            compared += 1;
        }
        assert_eq!(with_solutions, 40);
    }

    #[test]
    fn a_final_entry_that_cannot_be_admissible_cuts_the_node() {
        // Entry 1 is final at level 1 (row 0 is zero there), with bound 1:
        // a projection with 0 or 2 there has no solution below it.
        let basis = vec![vec![2, 0, 0], vec![1, 1, 0], vec![1, 1, 1]];
        let lattice = Lattice::new(&basis, &[1, 1, 1], 3.0).unwrap();
        assert_eq!(lattice.finals[1], vec![1]);
        assert!(lattice.finals_plausible(1, &[0.3, 1.0, 0.0]));
        assert!(lattice.finals_plausible(1, &[0.3, -1.0 + 1e-9, 0.0]));
        assert!(!lattice.finals_plausible(1, &[0.3, 0.0, 0.0]));
        assert!(!lattice.finals_plausible(1, &[0.3, 2.0, 0.0]));
    }

    #[test]
    fn limited_discrepancy_finds_what_depth_first_finds() {
        let basis = ones_lattice(8);
        let cancel = AtomicBool::new(false);
        let bounds = vec![1; 8];
        let dfs = enumerate_bounded(&basis, &bounds, 8.0, 1000, 0, 0, Limits::default(), &cancel)
            .unwrap();
        // All 2^7 sign patterns with an even sum of entries (all of them
        // here: 8 entries of +-1 sum to an even number), up to sign.
        assert_eq!(dfs.solutions.len(), 128);
        assert_eq!(dfs.stopped, None);
        // With or without free top levels: every pass still tests each
        // leaf once, so the passes run to their end find them all.
        let cases = [1, 1000, u64::MAX]
            .into_iter()
            .flat_map(|lds| [0, 1, 3, 16, 1 << 20].map(|free| (lds, free)));
        for (lds, free) in cases {
            let out = enumerate_bounded(
                &basis,
                &bounds,
                8.0,
                1000,
                lds,
                free,
                Limits::default(),
                &cancel,
            )
            .unwrap();
            assert_eq!(out.stopped, None);
            let mut a = out.solutions.clone();
            let mut b = dfs.solutions.clone();
            let canon = |v: &mut Vec<Vec<i64>>| {
                for y in v.iter_mut() {
                    if y.iter().find(|&&x| x != 0).is_some_and(|&x| x < 0) {
                        y.iter_mut().for_each(|x| *x = -*x);
                    }
                }
                v.sort();
            };
            canon(&mut a);
            canon(&mut b);
            assert_eq!(a, b, "lds_nodes = {lds}, lds_free_width = {free}");
        }
    }

    #[test]
    fn the_free_levels_are_the_top_depths_with_few_nodes() {
        let basis = ones_lattice(8);
        let bounds = vec![1; 8];
        let free_from = |width| {
            Tree::with_free_width(&basis, &bounds, 8.0, width)
                .unwrap()
                .lattice
                .unwrap()
                .free_from
        };
        assert_eq!(free_from(0), 8, "no level is free without a width");
        // The top level holds one node (its sign is fixed), the next two:
        // a width of 1 frees the top level only, 2 the two top levels.
        assert_eq!(free_from(1), 7);
        assert_eq!(free_from(2), 6);
        // A width beyond the whole tree frees every level.
        assert_eq!(free_from(1 << 20), 0);
    }

    #[test]
    fn limited_discrepancy_finds_every_vector_once_where_centres_fall_on_halves() {
        // A breaker's basis: Gram-Schmidt coefficients 1/2, 1/3, ... put
        // centres on x.5, where sums taken in other orders round apart.
        // Passes that counted a leaf's discrepancy by the walk from the
        // root in some passes and by the listed prefixes in others (a
        // lazy listing, tried and dropped) returned 1153 vectors, one
        // twice, and missed 4 of the 1156.
        let basis: Vec<Vec<i64>> = [
            [1, 0, 1, 0, 0, 0, 0, 0, 0, 0],
            [0, 1, 0, 1, 0, 0, 0, 0, 0, 0],
            [0, 1, 0, 0, 1, 0, 0, 0, 0, 0],
            [0, 1, 0, 0, 0, 1, 0, 0, 0, 0],
            [0, 1, 0, 0, 0, 0, 1, 0, 0, 0],
            [-1, 0, 0, 0, 0, 0, 0, 1, 0, 0],
            [1, 0, 0, 0, 0, 0, 0, 0, 1, 0],
            [0, 1, 1, 0, 0, 0, 0, -1, 0, 0],
            [0, 1, -1, 0, 0, 0, 0, 0, 0, 1],
        ]
        .iter()
        .map(|r| r.to_vec())
        .collect();
        let bounds = [1, 3, 2, 1, 1, 2, 2, 2, 2, 3];
        let cancel = AtomicBool::new(false);
        let dfs = enumerate_bounded(
            &basis,
            &bounds,
            41.0,
            1 << 20,
            0,
            0,
            Limits::default(),
            &cancel,
        )
        .unwrap();
        assert_eq!((dfs.solutions.len(), dfs.stopped), (1156, None));
        let expected: HashSet<Vec<i64>> = dfs.solutions.into_iter().collect();
        for threads in [1, 3] {
            let lds = limited_discrepancy_on_pool(threads, &basis, &bounds, 41.0, 1 << 20);
            assert_eq!(lds.stopped, None);
            let distinct: HashSet<Vec<i64>> = lds.solutions.iter().cloned().collect();
            assert_eq!(distinct.len(), lds.solutions.len(), "a vector came twice");
            assert_eq!(distinct, expected);
        }
    }

    #[test]
    fn limited_discrepancy_alone_proves_an_empty_lattice() {
        // 3 Z^4 has no +-1 vector: a pass that passes over nothing is a proof.
        let basis: Vec<Vec<i64>> = (0..4)
            .map(|i| (0..4).map(|j| if i == j { 3 } else { 0 }).collect())
            .collect();
        let cancel = AtomicBool::new(false);
        let out = enumerate_bounded(
            &basis,
            &[1; 4],
            4.0,
            1,
            u64::MAX,
            0,
            Limits::default(),
            &cancel,
        )
        .unwrap();
        assert!(out.solutions.is_empty());
        assert_eq!(out.stopped, None);
    }

    /// `enumerate_bounded` with unlimited limited-discrepancy passes, on a
    /// pool of `threads` workers.
    fn limited_discrepancy_on_pool(
        threads: usize,
        basis: &[Vec<i64>],
        bounds: &[i64],
        radius_sq: f64,
        max_solutions: usize,
    ) -> Enumeration {
        let cancel = AtomicBool::new(false);
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| {
                enumerate_bounded(
                    basis,
                    bounds,
                    radius_sq,
                    max_solutions,
                    u64::MAX,
                    0,
                    Limits::default(),
                    &cancel,
                )
                .unwrap()
            })
    }

    #[test]
    fn limited_discrepancy_gives_the_same_answer_on_any_pool() {
        let basis = ones_lattice(12);
        let bounds = vec![1; 12];
        let run = |threads: usize| limited_discrepancy_on_pool(threads, &basis, &bounds, 12.0, 3);
        let one = run(1);
        assert_eq!(one.solutions.len(), 3);
        // The solutions and the status; not the node count, since jobs after
        // the one that completes the answer stop wherever they are.
        let three = run(3);
        assert_eq!(
            (&one.solutions, one.stopped),
            (&three.solutions, three.stopped)
        );
    }
}
