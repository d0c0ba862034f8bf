//! The absorption engine: decide whether a residual MLP block `x -> A x + f(x)`
//! can be rewritten as a skip-free MLP of the same width by flipping a set
//! of neurons.
//!
//! # Design note
//!
//! For an activation with `act(z) - act(-z) = c z` (ReLU, GELU, ...),
//! flipping the neurons in `S` absorbs the skip exactly iff
//! `c W_down[:, S] W_up[S, :] = -A` (Mijoski & Karbevski 2026,
//! arXiv:2604.23705). With `R_i = c v_i u_i^T` this is a 0/1 subset sum
//! in `d_out * d_in` dimensions. The pipeline, one file (or folder) per
//! stage:
//!
//! 1. `genericity`: dead neurons and proportional rows, sub-quadratic.
//! 2. `certificates` with `Y = A` (`O(m d)` for an identity skip), then
//!    `certificates::krylov`: a few matrix-free conjugate-gradient steps on
//!    the normal equations (`O(m d^2)` each). When the caller does not need
//!    the exact distance, the first `Y` whose rigorous interval bound
//!    exceeds the tolerance ends the search here.
//! 3. `relaxation`: real least squares through the `m x m` Gram matrix
//!    (`O(m^2 d + m^3)`), never the `(d_out d_in) x m` system, assembled by
//!    faer's GEMM into one column-major buffer.
//! 4. `relaxation::conjugate_gradients`: from 4096 neurons,
//!    Jacobi-preconditioned conjugate gradients on the Gram matrix propose
//!    the relaxed solution first (`O(m^2)` a step); stage 5 certifies it,
//!    and when that does not settle the block the factors below run on the
//!    intact Gram matrix. `linalg::cholesky`: a blocked, pivoted Cholesky in
//!    that buffer gives the rank, the least-squares solution and a reduced
//!    null basis. From 2048 neurons an unpivoted float32 factor of a rounded
//!    copy is tried first (`relaxation::float32_solution`, refined on the
//!    float64 normal equations); it keeps the float64 Gram matrix intact,
//!    for the bracket, and gives way to the float64 factor whenever stage 5
//!    cannot settle the block from its solution.
//! 5. `relaxation::certified` and `certificates`: if `||Y||_F / ||A||_F`
//!    exceeds the tolerance at the relaxed solution, `Y` proves that no flip
//!    set exists. For generic weights this ends the search in polynomial
//!    time. When the caller keeps no certificate, `certificates::gram` first
//!    bounds `Y` from the Gram matrix without forming it (`O(m^2)` instead
//!    of `O(m d^2)`).
//! 6. `search::null_space`: otherwise, the affine solution set splits into
//!    independent components (duplicate or split neurons give tiny ones).
//! 7. `search::windows` and `search::branch_and_bound`: each component is
//!    searched exactly under rigorous windows on the relaxed values; small
//!    blocks are listed whole by the meet in the middle (`search`).
//! 8. `verification`: every subset reported is bracketed rigorously on the
//!    original weights.
//!
//! `decision` runs them in this order, one method per stage, each ending the
//! decision early when it settles the block (a zero skip is settled before
//! stage 1). The mathematics is in `docs/theory.md` §3, §5 and §6.
//!
//! To change one stage, read `decision` (where the stage is called, what it
//! receives and what it hands on) and the stage's own file; the record they
//! fill is [`Outcome`], below. `bracket` is not a stage: it bounds the
//! residual of the best flip set after a "no" (§7).
//!
//! `block` holds the weights (borrowed from the caller, never copied) and
//! the products every stage uses: `E(s) = A + c W_down diag(s) W_up` and the
//! inner products `<Y, R_i>`, both GEMMs over blocks of neurons.
//!
//! Every parallel loop gives each output entry to one thread, which computes
//! it with a fixed operation order (faer's GEMM splits its output, never a
//! reduction; the Cholesky panel runs sequentially), and the search is
//! sequential, so results (including node counts) are bit-identical for
//! every number of threads. Long loops
//! poll a shared cancel flag and the deadline through `limits::Budget`.
//!
//! Which activation may use the condition, and what "no flip set" proves,
//! is decided by the Python layer, which knows the activation registry.

pub mod block;
pub mod bracket;
pub mod certificates;
mod decision;
pub mod exclusion;
pub mod genericity;
pub mod relaxation;
pub mod search;
pub mod verification;

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::absorption::block::Block;
use crate::absorption::genericity::{GenericityCheck, GenericityReport};
use crate::absorption::relaxation::exact_path_bytes;
use crate::error::Error;
use crate::limits::{Budget, Limits, Stop};
use crate::linalg::cholesky::RankDecision;
use crate::linalg::matrix::Matrix;

/// A stage or step of the decision, as the method trace records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// A zero skip, absorbed by the empty flip set.
    ZeroSkip,
    /// The certificate `Y = A` (stage 2, or after an overflow).
    SkipCertificate,
    /// Conjugate-gradient certificates on the normal equations (stage 2).
    ConjugateGradients,
    /// The Gram matrix of the relaxation (stage 3).
    Relaxation,
    /// The relaxation solved by conjugate gradients on the Gram matrix
    /// (stage 4).
    GramConjugateGradients,
    /// The relaxation's certificate bounded from the Gram matrix (stage 5).
    GramCertificate,
    /// The relaxation's certificate, formed (stage 5).
    Certificate,
    /// A refinement of the relaxed solution against the weights (stage 5).
    Refinement,
    /// The null space and its components (stage 6).
    NullSpace,
    /// Rigorous windows on the relaxed values (stage 7).
    RigorousWindows,
    /// The branch and bound per component (stage 7).
    BranchAndBound,
    /// The meet in the middle over the whole block (stage 7).
    MeetInTheMiddle,
    /// Every combination the windows allow, verified (stage 7).
    ExhaustiveVerification,
    /// A flip set's residual bracketed on the weights (stage 8).
    Verification,
}

impl Step {
    /// The name the Python layer reports in `stats.method`.
    pub fn as_str(self) -> &'static str {
        match self {
            Step::ZeroSkip => "zero skip",
            Step::SkipCertificate => "certificate Y = A",
            Step::ConjugateGradients => "conjugate gradients",
            Step::Relaxation => "relaxation",
            Step::GramConjugateGradients => "gram conjugate gradients",
            Step::GramCertificate => "gram certificate",
            Step::Certificate => "certificate",
            Step::Refinement => "refinement",
            Step::NullSpace => "null space",
            Step::RigorousWindows => "rigorous windows",
            Step::BranchAndBound => "branch and bound",
            Step::MeetInTheMiddle => "meet in the middle",
            Step::ExhaustiveVerification => "exhaustive verification",
            Step::Verification => "verification",
        }
    }
}

/// Options of one decision.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Relative Frobenius tolerance on `||E(1_S)||_F / ||A||_F`.
    pub tol: f64,
    /// The genericity test the activation's theorem needs.
    pub check: GenericityCheck,
    pub limits: Limits,
    /// Worker threads; `None` uses one per core.
    pub threads: Option<usize>,
    /// Whether to compute the exact relaxation distance.
    pub distance: Distance,
    /// Bytes the exact path may allocate (`None`: no limit).
    pub memory_limit: Option<u128>,
    /// Narrowest block whose relaxation is solved in float32 first (see
    /// [`relaxation::float32_solution`]); narrower ones factor in float64.
    pub float32_min_width: usize,
    /// Narrowest block whose relaxation is solved by conjugate gradients
    /// on the Gram matrix first (see [`relaxation::conjugate_gradients`]).
    pub cg_min_width: usize,
    /// Hand the float64 Gram matrix back in [`Outcome::gram`] when the
    /// decision ends with it intact (for the bracket, which needs it too).
    pub keep_gram: bool,
    /// With [`Distance::Auto`]: the seconds the exact path may be expected
    /// to take ([`relaxation::exact_path_seconds`]); above it the
    /// certificates come first, as with [`Distance::Bound`]. `None`: no
    /// budget.
    pub exact_seconds: Option<f64>,
    /// Whether a certificate must be handed back as the matrix `Y`. When
    /// false, the exact path first tries to prove its bound from the Gram
    /// matrix alone ([`certificates::gram`]), skipping the two
    /// `O(m d_out d_in)` passes that forming `Y` takes; `Outcome::certificate`
    /// is then `None` unless `Y = A` proves more.
    pub keep_certificate: bool,
}

/// Default of [`Options::float32_min_width`]: below it the float64 factor
/// takes well under a second.
pub const FLOAT32_MIN_WIDTH: usize = 2048;

/// How much of the relaxation to compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distance {
    /// Always the exact least-squares distance (the Gram path); an error when
    /// it does not fit the memory limit.
    Exact,
    /// Stop at the first certificate that proves a bound above the
    /// tolerance (`Y = A`, then conjugate-gradient steps); the exact path
    /// only when they fail.
    Bound,
    /// Exact when the Gram path fits the memory limit, else [`Distance::Bound`].
    Auto,
}

impl Options {
    pub fn new(tol: f64, check: GenericityCheck) -> Self {
        Options {
            tol,
            check,
            limits: Limits::default(),
            threads: None,
            distance: Distance::Auto,
            memory_limit: None,
            float32_min_width: FLOAT32_MIN_WIDTH,
            cg_min_width: relaxation::conjugate_gradients::MIN_WIDTH,
            keep_gram: false,
            exact_seconds: None,
            keep_certificate: true,
        }
    }

    pub fn with_distance(mut self, distance: Distance) -> Self {
        self.distance = distance;
        self
    }

    pub fn with_memory_limit(mut self, bytes: u128) -> Self {
        self.memory_limit = Some(bytes);
        self
    }

    /// Whether the exact path fits the memory limit for width `m`.
    pub fn exact_fits(&self, m: usize) -> bool {
        self.memory_limit
            .is_none_or(|limit| exact_path_bytes(m) <= limit)
    }

    /// A limit too large to represent (or negative or NaN) means no limit.
    pub fn with_time_limit(mut self, seconds: f64) -> Self {
        self.limits.time_limit = Duration::try_from_secs_f64(seconds).ok();
        self
    }

    pub fn with_node_limit(mut self, nodes: u64) -> Self {
        self.limits.node_limit = Some(nodes);
        self
    }

    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads);
        self
    }

    fn validate(&self) -> Result<(), Error> {
        if !(self.tol.is_finite() && self.tol > 0.0 && self.tol < 1.0) {
            return Err(Error::InvalidOption {
                option: "tol",
                message: format!("must lie in (0, 1), got {}", self.tol),
            });
        }
        if self.threads == Some(0) {
            return Err(Error::InvalidOption {
                option: "threads",
                message: "must be at least 1".into(),
            });
        }
        Ok(())
    }
}

/// Why the search says no flip set exists.
#[derive(Debug, Clone, PartialEq)]
pub enum Evidence {
    /// A certificate `Y` whose rigorous interval bound exceeds the
    /// tolerance; `Outcome::certificate` holds `Y`, unless it was bounded
    /// from the Gram matrix without being formed (method
    /// `"gram certificate"`).
    Certificate,
    /// The rigorous window of a neuron that no free neuron moves holds
    /// neither 0 nor 1.
    FixedNeuron { neuron: usize, value: f64 },
    /// The complete search under rigorous windows found no candidate in a
    /// component, or every candidate failed rigorous verification.
    Exhausted { component: usize },
    /// The complete meet in the middle on the flattened condition found no
    /// subset in its window that passes rigorous verification.
    Listed,
}

/// What the flip-set search established.
#[derive(Debug, Clone, PartialEq)]
pub enum Finding {
    /// A verified flip set, sorted.
    Subset(Vec<usize>),
    /// Proof that no flip set exists within the tolerance.
    NoSubset(Evidence),
    /// A limit stopped the search before it could decide.
    Stopped(Stop),
    /// Floating point cannot settle the question either way.
    Inconclusive(Numerics),
}

/// Why floating point could not settle the question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Numerics {
    /// Products of the weights overflow float64.
    Overflow,
    /// The rigorous windows are too wide (or too large to compute) for the
    /// complete search to list the candidates.
    IllConditioned,
    /// A candidate's residual could not be bracketed on either side of the
    /// tolerance, even with exact sums.
    Unresolved,
}

impl Numerics {
    pub fn as_str(self) -> &'static str {
        match self {
            Numerics::Overflow => "overflow",
            Numerics::IllConditioned => "ill_conditioned",
            Numerics::Unresolved => "unresolved",
        }
    }
}

/// The full record of one decision.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub finding: Finding,
    /// Rigorous upper bound on the relative residual of the reported subset.
    pub residual: Option<f64>,
    /// Rigorous lower bound on it, and whether it was summed exactly.
    pub residual_lower: Option<f64>,
    pub residual_exact: bool,
    /// `||Y||_F / ||A||_F` at the least-squares solution, as its own
    /// certificate proves it (see [`certificates::confirmed_distance`]): a lower bound on
    /// every flip set's residual; `None` when float64 cannot resolve it.
    pub relaxation_distance: Option<f64>,
    /// The best rigorous lower bound on every flip set's relative residual
    /// proved by a certificate (0 when none proves anything).
    pub distance_bound: Option<f64>,
    /// The rounding allowance that bound subtracted.
    pub rounding_bound: Option<f64>,
    /// `Y`, when it proves impossibility.
    pub certificate: Option<Matrix<'static>>,
    pub genericity: Option<GenericityReport>,
    /// Numerical rank of the Gram matrix, and how it was decided.
    pub rank: Option<usize>,
    pub rank_decision: Option<RankDecision>,
    /// Sizes of the null-space components searched.
    pub components: Vec<usize>,
    /// Flip sets whose residual was bracketed rigorously.
    pub candidates: u64,
    /// Conjugate-gradient steps taken by the cheap certificates.
    pub krylov_steps: usize,
    /// Conjugate-gradient steps on the Gram matrix that solved the
    /// relaxation (0 when a factor solved it).
    pub gram_cg_steps: usize,
    pub nodes: u64,
    /// The stages run, in order.
    pub method: Vec<Step>,
    /// Seconds since the start at the end of each costly step of the exact
    /// path (`"gram"`, `"factor"`, `"solve"`, each `"refinement"`, ...),
    /// in order, for profiles and cost models.
    pub timings: Vec<(&'static str, f64)>,
    /// The precision the relaxation was solved in (`"float32"` or
    /// `"float64"`); `None` when the exact path did not run. Its
    /// certificate is float64 either way.
    pub relaxation_precision: Option<&'static str>,
    /// With [`Options::keep_gram`]: the lower triangle of the Gram matrix
    /// of the block as decided (after [`Block::balanced`]), column-major,
    /// and the [`relaxation::gram_fingerprint`] of that block.
    pub gram: Option<(Vec<f64>, u64)>,
    /// The exact path's estimated seconds when a budget was given (see
    /// [`Options::exact_seconds`]).
    pub exact_estimate: Option<f64>,
    /// The neurons no flip set within the tolerance can contain, and the
    /// bound that keeps them out (see [`exclusion`]); every certificate's
    /// bound covers the flip sets that avoid them and is capped by it.
    pub exclusion: Option<exclusion::Exclusion>,
    pub seconds: f64,
}

impl Outcome {
    fn lap(&mut self, step: &'static str, budget: &Budget) {
        self.timings.push((step, budget.seconds()));
    }
}

fn value_tolerance(tol: f64) -> f64 {
    (1e3 * tol).clamp(1e-6, 0.25)
}

/// The genericity check alone (dead neurons, proportional or equal rows of
/// `[W_up | b_up]`), on the rows balanced by one power of two as
/// [`decide`] reads them, so that both report the same: a hyper-connection
/// block needs it on its own `W_up` when its mixing already proves that no
/// flip set exists (docs/theory.md section 4.6).
pub fn check_genericity(
    block: &Block,
    check: GenericityCheck,
    tol: f64,
    threads: Option<usize>,
) -> Result<GenericityReport, Error> {
    Options::new(tol, check).validate()?;
    let pool = crate::limits::worker_pool(threads)?;
    let (rows, _, _) = pool.install(|| block.balanced());
    Ok(pool.install(|| genericity::genericity_report(&rows, check, tol)))
}

/// Decide whether some flip set `S` satisfies `c W_down[:, S] W_up[S, :] = -A`.
///
/// Runs on a pool of `options.threads` workers and stops early when `cancel`
/// is set or a limit is reached. Input errors are returned, never panicked.
pub fn decide(block: &Block, options: &Options, cancel: &AtomicBool) -> Result<Outcome, Error> {
    options.validate()?;
    let m = block.width();
    if options.distance == Distance::Exact && !options.exact_fits(m) {
        return Err(Error::MemoryLimit {
            needed: exact_path_bytes(m),
            limit: options.memory_limit.unwrap_or(u128::MAX),
        });
    }
    let pool = crate::limits::worker_pool(options.threads)?;
    crate::limits::reserve_for(
        pool.current_num_threads(),
        working_bytes(
            block,
            options.distance != Distance::Bound && options.exact_fits(m),
        ),
        dense_products(block),
    )?;
    let (mut balanced, k_skip, exact, moved) = pool.install(|| block.balanced_per_neuron());
    balanced.exclusion = pool.install(|| exclusion::dominant_neurons(&balanced, options.tol));
    // Neurons balanced one by one keep every term, not their rows: the
    // genericity check reads the rows balanced by one power of two only.
    let genericity = moved.then(|| {
        let (rows, _, _) = pool.install(|| block.balanced());
        pool.install(|| genericity::genericity_report(&rows, options.check, options.tol))
    });
    let mut outcome = pool.install(|| run(&balanced, genericity, options, cancel));
    if !exact && !matches!(outcome.finding, Finding::Stopped(_)) {
        // The balanced block is not the user's: nothing it proves transfers.
        // (Unreachable: `balanced` keeps every exponent within its exact
        // range; kept so that a rescaling that lost bits can never prove.)
        outcome.finding = Finding::Inconclusive(Numerics::Overflow);
        outcome.certificate = None;
        outcome.residual = None;
        outcome.residual_lower = None;
        outcome.residual_exact = false;
    }
    if !exact {
        outcome.gram = None;
    }
    if let Some(y) = outcome.certificate.as_mut() {
        // Y is in the units of the balanced skip, 2^k_skip A: back to A's,
        // or as close as no entry loses a bit (any positive multiple of Y
        // proves the same bound; a Y of subnormals would prove nothing).
        let shift = exact_shift(y.data(), -k_skip);
        y.data_mut()
            .iter_mut()
            .for_each(|x| *x = crate::absorption::block::ldexp(*x, shift));
    }
    Ok(outcome)
}

/// The power of two nearest `wanted` by which every entry of `data` scales
/// exactly: no nonzero entry leaves the normal range (0 when none is
/// nonzero, or when their spread leaves no such power).
fn exact_shift(data: &[f64], wanted: i32) -> i32 {
    let exponents = data
        .iter()
        .filter(|x| **x != 0.0 && x.is_finite())
        .map(|x| frexp_exponent(*x));
    let (mut low, mut high) = (i32::MAX, i32::MIN);
    for e in exponents {
        low = low.min(e);
        high = high.max(e);
    }
    if low == i32::MAX {
        return wanted;
    }
    // x = f 2^e with f in [1/2, 1): normal iff e >= -1021; finite iff e <= 1024.
    let (most_down, most_up) = (-1021 - low, 1024 - high);
    if most_down > most_up {
        return 0;
    }
    wanted.clamp(most_down, most_up)
}

/// The exponent `e` of `x = f 2^e` with `|f|` in `[1/2, 1)` (`x` nonzero and
/// finite, subnormals included).
fn frexp_exponent(x: f64) -> i32 {
    let bits = x.abs().to_bits();
    let biased = (bits >> 52) as i32;
    if biased == 0 {
        // x = bits 2^-1074, its top bit at 63 - leading_zeros.
        63 - bits.leading_zeros() as i32 - 1073
    } else {
        biased - 1022
    }
}

/// About the bytes a decision's own arrays take at once: a few copies of
/// the block (the balanced one, residuals of the skip's shape, the rows the
/// stages copy), and with `exact` the Gram matrix and the search's working
/// space ([`exact_path_bytes`]).
pub fn working_bytes(block: &Block, exact: bool) -> u128 {
    let (d_out, d_in) = block.skip.shape();
    let m = block.width() as u128;
    let (d_out, d_in) = (d_out as u128, d_in as u128);
    let dense = 8 * (6 * d_out * d_in + 3 * m * (d_in + d_out) + 16 * m);
    dense
        + if exact {
            exact_path_bytes(block.width())
        } else {
            0
        }
}

/// Whether the block's products are large enough for the dense kernels
/// (faer's and the gemm crate's buffers; smaller ones run in registers).
pub fn dense_products(block: &Block) -> bool {
    let (d_out, d_in) = block.skip.shape();
    let m = block.width();
    m.saturating_mul(d_out.max(d_in))
        .saturating_mul(m.max(d_out.max(d_in)))
        > 16 * 16 * 16
}

fn run(
    block: &Block,
    genericity: Option<GenericityReport>,
    options: &Options,
    cancel: &AtomicBool,
) -> Outcome {
    let mut budget = Budget::new(options.limits, cancel);
    let mut out = Outcome {
        finding: Finding::Stopped(Stop::Interrupted),
        residual: None,
        residual_lower: None,
        residual_exact: false,
        relaxation_distance: None,
        distance_bound: None,
        rounding_bound: None,
        certificate: None,
        genericity,
        rank: None,
        rank_decision: None,
        components: Vec::new(),
        candidates: 0,
        krylov_steps: 0,
        gram_cg_steps: 0,
        nodes: 0,
        method: Vec::new(),
        timings: Vec::new(),
        relaxation_precision: None,
        gram: None,
        exact_estimate: None,
        exclusion: block.exclusion.clone(),
        seconds: 0.0,
    };
    let finding = decision::run_stages(block, options, &mut budget, &mut out);
    out.finding = match finding {
        Ok(finding) => finding,
        Err(stop) => Finding::Stopped(stop),
    };
    if !matches!(
        out.finding,
        Finding::Subset(_) | Finding::Inconclusive(Numerics::Unresolved)
    ) {
        // The residual belongs to a reported (or unplaceable) flip set only.
        out.residual = None;
        out.residual_lower = None;
        out.residual_exact = false;
    }
    out.nodes = budget.nodes();
    out.seconds = budget.seconds();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::absorption::certificates::lower_bound;

    #[test]
    fn frexp_exponents_and_exact_shifts() {
        for (x, e) in [
            (1.0, 1),
            (0.5, 0),
            (3.0, 2),
            (f64::MIN_POSITIVE, -1021),
            (f64::MIN_POSITIVE / 2.0, -1022),
            (5e-324, -1073),
            (-6.0, 3),
        ] {
            assert_eq!(frexp_exponent(x), e, "{x}");
        }
        // A shift that would push 2^-1000 below the normal range stops at
        // the last exact one; an all-zero Y takes the shift asked for.
        let data = [2f64.powi(-1000), 1.0, 0.0];
        let s = exact_shift(&data, -100);
        assert_eq!(s, -22);
        let back = |x: f64| block::ldexp(block::ldexp(x, s), -s);
        assert!(data.iter().all(|&x| back(x) == x));
        assert_eq!(exact_shift(&[0.0], -100), -100);
        assert_eq!(exact_shift(&[1.0], -100), -100);
    }
    use crate::absorption::relaxation::gram_lower;
    use crate::absorption::search::listed_search;
    use crate::absorption::verification::residual_bounds;
    use crate::linalg::matrix::dot;
    use crate::rng::Stream;

    /// The crate's generator, with the test data drawn from it.
    struct SplitMix(crate::rng::SplitMix64);

    impl SplitMix {
        fn new(seed: u64) -> Self {
            SplitMix(crate::rng::SplitMix64::new(seed))
        }

        fn next(&mut self) -> f64 {
            self.0.symmetric()
        }

        fn matrix(&mut self, rows: usize, cols: usize) -> Matrix<'static> {
            let data = (0..rows * cols).map(|_| self.next()).collect();
            Matrix::from_vec("M", rows, cols, data).unwrap()
        }
    }

    fn run_default(block: &Block, threads: usize) -> Outcome {
        let options = Options::new(1e-9, GenericityCheck::Proportional).with_threads(threads);
        decide(block, &options, &AtomicBool::new(false)).unwrap()
    }

    /// Plant S = {0, 2, 4, ..} of size d with W_up[S] = D (diagonal) and
    /// W_down[:, S] = -D^-1, the rest random.
    fn planted(d: usize, m: usize, seed: u64) -> (Block<'static>, Vec<usize>) {
        let mut rng = SplitMix::new(seed);
        let mut w_up = rng.matrix(m, d);
        let mut w_down = rng.matrix(d, m);
        let subset: Vec<usize> = (0..d).map(|k| 2 * k).collect();
        for (k, &i) in subset.iter().enumerate() {
            let scale = 1.0 + k as f64;
            for q in 0..d {
                w_up.data_mut()[i * d + q] = if q == k { scale } else { 0.0 };
                w_down.data_mut()[q * m + i] = if q == k { -1.0 / scale } else { 0.0 };
            }
        }
        let block = Block::new(w_up, w_down, None, Matrix::identity(d), 1.0).unwrap();
        (block, subset)
    }

    #[test]
    fn planted_subset_is_recovered_and_verified() {
        let (block, subset) = planted(4, 12, 7);
        let out = run_default(&block, 2);
        assert_eq!(out.finding, Finding::Subset(subset));
        assert!(out.residual.unwrap() < 1e-12);
        assert_eq!(out.rank, Some(12));
    }

    #[test]
    fn generic_block_gets_a_certificate_that_rechecks() {
        let mut rng = SplitMix::new(3);
        let block = Block::new(
            rng.matrix(20, 5),
            rng.matrix(5, 20),
            None,
            Matrix::identity(5),
            1.0,
        )
        .unwrap();
        let out = run_default(&block, 2);
        assert_eq!(out.finding, Finding::NoSubset(Evidence::Certificate));
        let y = out.certificate.as_ref().unwrap();
        let distance = out.relaxation_distance.unwrap();
        assert!(distance > 0.1);
        assert!((lower_bound(&block, y) - distance).abs() < 1e-9);
    }

    #[test]
    fn duplicated_neurons_split_into_small_components() {
        // Split every planted neuron in two halves: the Gram matrix loses
        // rank d, and each pair is its own component.
        let (block, subset) = planted(3, 6, 11);
        let m = block.width();
        let d = 3;
        let mut w_up = Vec::new();
        let mut w_down = vec![0.0; d * (m + d)];
        for i in 0..m {
            w_up.extend_from_slice(block.w_up.row(i));
        }
        for &i in &subset {
            w_up.extend_from_slice(block.w_up.row(i));
        }
        for p in 0..d {
            for i in 0..m {
                let half = if subset.contains(&i) { 0.5 } else { 1.0 };
                w_down[p * (m + d) + i] = half * block.w_down.get(p, i);
            }
            for (k, &i) in subset.iter().enumerate() {
                w_down[p * (m + d) + m + k] = 0.5 * block.w_down.get(p, i);
            }
        }
        let split = Block::new(
            Matrix::from_vec("W_up", m + d, d, w_up).unwrap(),
            Matrix::from_vec("W_down", d, m + d, w_down).unwrap(),
            None,
            Matrix::identity(d),
            1.0,
        )
        .unwrap();
        let out = run_default(&split, 1);
        assert_eq!(out.finding, Finding::Subset(vec![0, 2, 4, 6, 7, 8]));
        assert_eq!(out.rank, Some(m));
        assert_eq!(out.components, vec![2, 2, 2]);
    }

    #[test]
    fn thread_count_does_not_change_the_outcome() {
        let mut rng = SplitMix::new(5);
        let block = Block::new(
            rng.matrix(90, 8),
            rng.matrix(8, 90),
            None,
            Matrix::identity(8),
            1.0,
        )
        .unwrap();
        let a = run_default(&block, 1);
        let b = run_default(&block, 2);
        assert_eq!(a.finding, b.finding);
        assert_eq!(a.relaxation_distance, b.relaxation_distance);
        assert_eq!(a.certificate, b.certificate);
    }

    /// The outcome with the float32 solver allowed from `width` neurons.
    /// `W_up` then `W_down` from `rng`, an identity skip and flip constant `c`.
    fn identity_block(rng: &mut SplitMix, d: usize, m: usize, c: f64) -> Block<'static> {
        Block::new(
            rng.matrix(m, d),
            rng.matrix(d, m),
            None,
            Matrix::identity(d),
            c,
        )
        .unwrap()
    }

    fn run_float32_from(block: &Block, width: usize, threads: usize) -> Outcome {
        let mut options = Options::new(1e-9, GenericityCheck::Proportional)
            .with_threads(threads)
            .with_distance(Distance::Exact);
        options.float32_min_width = width;
        options.keep_gram = true;
        decide(block, &options, &AtomicBool::new(false)).unwrap()
    }

    #[test]
    fn float32_solve_proves_the_float64_distance() {
        // m = 300 > d^2 / 2 = 200 (d = 20): a full-rank Gram matrix that
        // float32 factors; the float32 path's distance is the float64
        // path's within the certified allowance, and its certificate is
        // re-checked here.
        let (d, m) = (20, 300);
        let block = identity_block(&mut SplitMix::new(17), d, m, 0.5);
        let f32_run = run_float32_from(&block, 0, 2);
        let f64_run = run_float32_from(&block, usize::MAX, 2);
        assert_eq!(f32_run.relaxation_precision, Some("float32"));
        assert_eq!(f64_run.relaxation_precision, Some("float64"));
        assert_eq!(f32_run.finding, Finding::NoSubset(Evidence::Certificate));
        assert_eq!(f64_run.finding, f32_run.finding);
        let (a, b) = (
            f32_run.relaxation_distance.unwrap(),
            f64_run.relaxation_distance.unwrap(),
        );
        let allowance = 2.0
            * f32_run
                .rounding_bound
                .unwrap()
                .max(f64_run.rounding_bound.unwrap());
        assert!((a - b).abs() <= allowance.max(1e-6 * b), "{a} {b}");
        assert!(a > 0.05, "{a}");
        let y = f32_run.certificate.as_ref().unwrap();
        assert!((lower_bound(&block, y) - a).abs() <= 1e-9);
        assert_eq!(f32_run.rank, Some(m));
        // The float32 path keeps the Gram matrix intact for the bracket,
        // with this block's fingerprint; the float64 path factors it.
        let (g, fingerprint) = f32_run.gram.as_ref().unwrap();
        assert_eq!(*fingerprint, relaxation::gram_fingerprint(&block));
        let budget = Budget::unlimited();
        assert!(*g == gram_lower(&block, &budget).unwrap());
        assert!(f64_run.gram.is_none());
        // Bit-identical for every thread count.
        let one = run_float32_from(&block, 0, 1);
        assert_eq!(one.relaxation_distance, f32_run.relaxation_distance);
        assert_eq!(one.certificate, f32_run.certificate);
    }

    #[test]
    fn the_gram_certificate_proves_what_the_formed_one_does() {
        // Both precisions: without Y the verdict, the distance (within the
        // certified allowance) and the bound are those of the formed
        // certificate, and no d_out x d_in pass runs ("solve" is its lap).
        let mut rng = SplitMix::new(23);
        let (d, m) = (20, 300);
        let block = identity_block(&mut rng, d, m, 1.0);
        for width in [0, usize::MAX] {
            let formed = run_float32_from(&block, width, 2);
            let mut options = Options::new(1e-9, GenericityCheck::Proportional)
                .with_threads(2)
                .with_distance(Distance::Exact);
            options.float32_min_width = width;
            options.keep_certificate = false;
            options.keep_gram = true;
            let bare = decide(&block, &options, &AtomicBool::new(false)).unwrap();
            assert_eq!(bare.finding, formed.finding);
            assert_eq!(bare.finding, Finding::NoSubset(Evidence::Certificate));
            assert_eq!(bare.relaxation_precision, formed.relaxation_precision);
            assert!(
                bare.method.contains(&Step::GramCertificate),
                "{:?}",
                bare.method
            );
            assert!(bare.certificate.is_none());
            assert!(!bare.timings.iter().any(|(step, _)| *step == "solve"));
            let (a, b) = (
                bare.relaxation_distance.unwrap(),
                formed.relaxation_distance.unwrap(),
            );
            assert!((a - b).abs() <= 1e-6 * b, "{a} {b}");
            let (p, q) = (bare.distance_bound.unwrap(), formed.distance_bound.unwrap());
            assert!((p - q).abs() <= 1e-6 * q && p <= a, "{p} {q} {a}");
            // Every flip set lies above the bound: the residual of the
            // rounded relaxation is one of them.
            let ones: Vec<usize> = (0..m).filter(|_| rng.next() > 0.0).collect();
            let mut x = vec![0.0; m];
            ones.iter().for_each(|&i| x[i] = 1.0);
            let e = block.residual(&x).frobenius_norm() / block.skip.frobenius_norm();
            assert!(e >= p, "{e} < {p}");
            // The Gram matrix is handed back intact on both paths.
            let (g, _) = bare.gram.as_ref().unwrap();
            assert!(*g == gram_lower(&block, &Budget::unlimited()).unwrap());
        }
    }

    fn run_from_widths(block: &Block, cg: usize, keep_certificate: bool) -> Outcome {
        let mut options = Options::new(1e-9, GenericityCheck::Proportional)
            .with_threads(2)
            .with_distance(Distance::Exact);
        options.cg_min_width = cg;
        options.float32_min_width = usize::MAX;
        options.keep_certificate = keep_certificate;
        options.keep_gram = true;
        decide(block, &options, &AtomicBool::new(false)).unwrap()
    }

    #[test]
    fn conjugate_gradients_prove_what_the_factor_does() {
        // m = 4 d: the Jacobi-scaled Gram matrix is near the identity, and
        // a handful of steps reach the factor's distance.
        let block = crate::absorption::block::testing::random_block(1024, 256, 23);
        for keep in [false, true] {
            let cg = run_from_widths(&block, 0, keep);
            let factor = run_from_widths(&block, usize::MAX, keep);
            assert_eq!(cg.finding, Finding::NoSubset(Evidence::Certificate));
            assert_eq!(factor.finding, cg.finding);
            assert!(
                cg.method.contains(&Step::GramConjugateGradients),
                "{:?}",
                cg.method
            );
            assert!((1..=16).contains(&cg.gram_cg_steps), "{}", cg.gram_cg_steps);
            assert_eq!(factor.gram_cg_steps, 0);
            assert_eq!(cg.rank, None);
            assert_eq!(factor.rank, Some(1024));
            assert_eq!(cg.relaxation_precision, Some("float64"));
            let (a, b) = (
                cg.relaxation_distance.unwrap(),
                factor.relaxation_distance.unwrap(),
            );
            let allowance = 2.0
                * cg.rounding_bound
                    .unwrap()
                    .max(factor.rounding_bound.unwrap());
            assert!((a - b).abs() <= allowance.max(1e-6 * b), "{a} {b}");
            // The Gram matrix stays intact, for the bracket.
            let (g, _) = cg.gram.as_ref().unwrap();
            assert!(*g == gram_lower(&block, &Budget::unlimited()).unwrap());
            if keep {
                let y = cg.certificate.as_ref().unwrap();
                assert!((lower_bound(&block, y) - cg.distance_bound.unwrap()).abs() <= 1e-9);
                // The steps met their target, so the formed certificate
                // takes no refinement step (two passes over the weights)
                // and still reports the factor's distance closely.
                assert!(!cg.method.contains(&Step::Refinement), "{:?}", cg.method);
                assert!((a - b).abs() <= 1e-7 * b, "{a} {b}");
            }
        }
    }

    /// The exact path with a formed certificate, every solver tried from
    /// any width; the float32 Gram matrix only when no Gram matrix is kept
    /// (`keep_gram` false), the rest the same either way.
    fn run_float32_gram(block: &Block, keep_gram: bool) -> Outcome {
        let mut options = Options::new(1e-9, GenericityCheck::Proportional)
            .with_threads(2)
            .with_distance(Distance::Exact);
        options.cg_min_width = 0;
        options.float32_min_width = 0;
        options.keep_certificate = true;
        options.keep_gram = keep_gram;
        decide(block, &options, &AtomicBool::new(false)).unwrap()
    }

    fn took(out: &Outcome, lap: &str) -> bool {
        out.timings.iter().any(|(step, _)| *step == lap)
    }

    #[test]
    fn a_float32_gram_candidate_proves_what_the_float64_path_does() {
        let block = crate::absorption::block::testing::random_block(1024, 256, 23);
        let f32_gram = run_float32_gram(&block, false);
        let plain = run_float32_gram(&block, true);
        assert_eq!(f32_gram.finding, Finding::NoSubset(Evidence::Certificate));
        assert_eq!(plain.finding, f32_gram.finding);
        assert_eq!(f32_gram.relaxation_precision, Some("float32"));
        assert_eq!(plain.relaxation_precision, Some("float64"));
        assert_eq!(
            f32_gram.method,
            vec![
                Step::Relaxation,
                Step::GramConjugateGradients,
                Step::Certificate
            ]
        );
        assert!((1..=16).contains(&f32_gram.gram_cg_steps));
        // The float64 Gram matrix was never built.
        assert!(took(&f32_gram, "float32 gram") && !took(&f32_gram, "gram"));
        let (a, b) = (
            f32_gram.relaxation_distance.unwrap(),
            plain.relaxation_distance.unwrap(),
        );
        assert!((a - b).abs() <= 1e-6 * b, "{a} {b}");
        // The certificate handed back proves the bound reported.
        let y = f32_gram.certificate.as_ref().unwrap();
        let bound = f32_gram.distance_bound.unwrap();
        assert!((lower_bound(&block, y) - bound).abs() <= 1e-12, "{bound}");
        assert!(bound > 0.5 && bound <= a, "{bound} {a}");
    }

    #[test]
    fn a_float32_gram_that_cannot_settle_leaves_the_float64_path_as_it_was() {
        // Planted: the distance is 0, so no certificate can settle it; and
        // W_down 2^63 times larger, W_up 2^63 times smaller (exponents the
        // balancing keeps), so that c^2 V^T V (about 2^129) overflows
        // float32. Either way the float64 path decides, with the record it
        // gives without the float32 try.
        let (planted_block, subset) = planted(6, 40, 5);
        let scaled = |w: &Matrix, k: i32| {
            let data = w.data().iter().map(|&x| block::ldexp(x, k)).collect();
            Matrix::from_vec("W", w.rows(), w.cols(), data).unwrap()
        };
        let random = crate::absorption::block::testing::random_block(300, 20, 9);
        let huge = Block::new(
            scaled(&random.w_up, -63),
            scaled(&random.w_down, 63),
            None,
            Matrix::identity(20),
            1.0,
        )
        .unwrap();
        for (block, want) in [(&planted_block, Some(subset)), (&huge, None::<Vec<usize>>)] {
            let tried = run_float32_gram(block, false);
            let plain = run_float32_gram(block, true);
            assert!(took(&tried, "float32 gram left it open"));
            assert_eq!(tried.finding, plain.finding);
            assert_eq!(tried.method, plain.method);
            assert_eq!(tried.relaxation_distance, plain.relaxation_distance);
            assert_eq!(tried.distance_bound, plain.distance_bound);
            assert_eq!(tried.relaxation_precision, plain.relaxation_precision);
            match want {
                Some(subset) => assert_eq!(tried.finding, Finding::Subset(subset)),
                None => assert_eq!(tried.finding, Finding::NoSubset(Evidence::Certificate)),
            }
        }
    }

    #[test]
    fn conjugate_gradients_that_stall_leave_no_trace() {
        // m = 16 d: far from the identity after scaling; the steps give
        // up and the factor decides, with the record it gives without them.
        let block = crate::absorption::block::testing::random_block(1024, 64, 29);
        let tried = run_from_widths(&block, 0, false);
        let plain = run_from_widths(&block, usize::MAX, false);
        assert!(tried
            .timings
            .iter()
            .any(|(step, _)| *step == "conjugate gradients left it open"));
        assert_eq!(tried.gram_cg_steps, 0);
        assert_eq!(tried.method, plain.method);
        assert_eq!(tried.finding, plain.finding);
        assert_eq!(tried.relaxation_distance, plain.relaxation_distance);
        assert_eq!(tried.distance_bound, plain.distance_bound);
    }

    #[test]
    fn float32_falls_back_to_float64_where_it_cannot_factor() {
        // Two neurons with proportional rows: the Gram matrix is singular,
        // float32's factor is not of full rank, and the float64 path (with
        // its null space) decides, as without the float32 solver.
        let mut rng = SplitMix::new(23);
        let (d, m) = (6, 30);
        let mut w_up = rng.matrix(m, d);
        let mut w_down = rng.matrix(d, m);
        for q in 0..d {
            w_up.data_mut()[d + q] = 2.0 * w_up.data()[q];
            w_down.data_mut()[q * m + 1] = w_down.data()[q * m];
        }
        let block = Block::new(w_up, w_down, None, Matrix::identity(d), 1.0).unwrap();
        let with = run_float32_from(&block, 0, 2);
        let without = run_float32_from(&block, usize::MAX, 2);
        assert_eq!(with.relaxation_precision, Some("float64"));
        assert_eq!(with.finding, without.finding);
        assert_eq!(with.relaxation_distance, without.relaxation_distance);
        assert_eq!(with.rank, without.rank);
        assert!(with.rank.unwrap() < m);
        assert!(with
            .timings
            .iter()
            .any(|(k, _)| *k == "float32 left it open"));
    }

    #[test]
    fn lower_matvec_is_the_symmetric_product() {
        let mut rng = SplitMix::new(3);
        let m = 600;
        let b = rng.matrix(m, 40);
        let mut g = vec![0.0; m * m];
        for j in 0..m {
            for i in j..m {
                g[j * m + i] = dot(b.row(i), b.row(j));
            }
        }
        let s: Vec<f64> = (0..m).map(|_| rng.next()).collect();
        let y = relaxation::lower_matvec(&g, m, &s);
        for (i, yi) in y.iter().enumerate() {
            let want: f64 = (0..m).map(|j| dot(b.row(i), b.row(j)) * s[j]).sum();
            assert!((yi - want).abs() <= 1e-10 * (1.0 + want.abs()), "{i}");
        }
        let again = crate::limits::on_threads(3, || relaxation::lower_matvec(&g, m, &s));
        assert!(again == y);
    }

    #[test]
    fn nearly_cancelling_pairs_do_not_hide_a_flip_set() {
        // Cancelling pairs: neurons 0/1 and 3/4 are pairs of size 2^18
        // whose terms cancel to within about 1; S = {0, 1, 3, 4} gives
        // exactly -I. The quick search's values are off by eps cond(G); the
        // complete search on rigorous windows finds the set.
        let w_up = Matrix::from_vec(
            "W_up",
            5,
            2,
            vec![
                1.1864703425258147,
                -0.5693311750340765,
                1.1864741572230804,
                -0.5693311750340765,
                2.330385072097588,
                -1.9877013545858648,
                -1.234534875998037,
                0.10557138210061971,
                -1.234534875998037,
                0.10556756740335409,
            ],
        )
        .unwrap();
        let big = 262144.0;
        let w_down = Matrix::from_vec(
            "W_down",
            2,
            5,
            vec![
                big,
                -big,
                1169.587598834656,
                0.0,
                0.0,
                0.0,
                0.0,
                -973.5068253782067,
                -big,
                big,
            ],
        )
        .unwrap();
        let block = Block::new(w_up, w_down, None, Matrix::identity(2), 1.0).unwrap();
        let options = Options::new(1.4901161193847656e-8, GenericityCheck::Proportional);
        let out = decide(&block, &options, &AtomicBool::new(false)).unwrap();
        assert_eq!(out.finding, Finding::Subset(vec![0, 1, 3, 4]));
        assert!(out.residual.unwrap() <= 1.5e-8);
    }

    #[test]
    fn float_certificate_that_rounding_swallows_is_refused() {
        // Near-parallel integer neurons: W_down W_up = -I exactly, with
        // near-parallel neurons of size 8729. A float64 certificate claimed
        // distance 0.707; its rigorous interval bound proves nothing, and
        // the search finds the flip set.
        let n = 8729.0;
        let w_up = Matrix::from_vec(
            "W_up",
            4,
            2,
            vec![n, n + 1.0, n + 1.0, n + 2.0, n + 1.0, n, n + 2.0, n + 1.0],
        )
        .unwrap();
        let w_down = Matrix::from_vec(
            "W_down",
            2,
            4,
            vec![0.0, 0.0, -(n + 1.0), n, -(n + 1.0), n, 0.0, 0.0],
        )
        .unwrap();
        let block = Block::new(w_up, w_down, None, Matrix::identity(2), 1.0).unwrap();
        let y = Matrix::from_vec("Y", 2, 2, vec![-0.49994273, 0.5, 0.5, -0.49994273]).unwrap();
        assert_eq!(lower_bound(&block, &y), 0.0);
        let out = run_default(&block, 1);
        assert_eq!(out.finding, Finding::Subset(vec![0, 1, 2, 3]));
        assert!(out.residual.unwrap() < 1e-12);
    }

    #[test]
    fn listed_search_finds_or_refutes_exactly() {
        // The meet-in-the-middle fallback on its own: a planted block gives
        // its flip set; the same block with the skip doubled has none (all
        // terms are of size 1 and the planted pair sums to -I).
        let (block, subset) = planted(3, 10, 4);
        let cancel = AtomicBool::new(false);
        let mut budget = Budget::new(Limits::default(), &cancel);
        let mut out = run_default(&block, 1);
        let found = listed_search(&block, 1e-9, None, &mut budget, &mut out).unwrap();
        match found {
            Finding::Subset(s) => {
                assert!(residual_bounds(&block, &s, 1e-9).upper <= 1e-9);
                assert!(s.len() >= subset.len());
            }
            other => panic!("expected a flip set, got {other:?}"),
        }
        let mut doubled = block.clone();
        doubled.skip = Matrix::from_vec("skip", 3, 3, {
            let mut a = vec![0.0; 9];
            a[0] = 2.0;
            a[4] = 2.0;
            a[8] = 2.0;
            a
        })
        .unwrap();
        let out_all = (0u32..1 << 10).all(|code| {
            let s: Vec<usize> = (0..10).filter(|&i| code >> i & 1 == 1).collect();
            residual_bounds(&doubled, &s, 1e-9).lower > 1e-9
        });
        let found = listed_search(&doubled, 1e-9, None, &mut budget, &mut out).unwrap();
        assert!(out_all, "no flip set is within 1e-9 of -2I");
        assert_eq!(found, Finding::NoSubset(Evidence::Listed));
    }

    #[test]
    fn bad_options_are_errors() {
        let (block, _) = planted(2, 4, 1);
        let cancel = AtomicBool::new(false);
        for options in [
            Options::new(0.0, GenericityCheck::None),
            Options::new(f64::NAN, GenericityCheck::None),
            Options::new(1e-9, GenericityCheck::None).with_threads(0),
        ] {
            assert!(matches!(
                decide(&block, &options, &cancel),
                Err(Error::InvalidOption { .. })
            ));
        }
        let err = Block::new(
            Matrix::zeros(3, 2),
            Matrix::zeros(2, 4),
            None,
            Matrix::identity(2),
            1.0,
        );
        assert!(matches!(
            err,
            Err(Error::Shape {
                argument: "W_down",
                ..
            })
        ));
    }

    /// A block whose `W_down` leans against `W_up` (`sum_i v_i . u_i` near
    /// `-1.2 d`), so that `Y = A` proves nothing and the search needs the
    /// conjugate gradients or the relaxation (the `hard` blocks of
    /// `benches/scale.py`).
    fn leaning(d: usize, m: usize, seed: u64) -> Block<'static> {
        let mut rng = SplitMix::new(seed);
        let w_up = rng.matrix(m, d);
        let mut w_down = rng.matrix(d, m);
        let coef = -1.2 * 3.0 / m as f64;
        for p in 0..d {
            for i in 0..m {
                w_down.data_mut()[p * m + i] += coef * w_up.get(i, p);
            }
        }
        Block::new(w_up, w_down, None, Matrix::identity(d), 1.0).unwrap()
    }

    /// Run the stages with a budget that reports a time limit at its
    /// `n + 1`-th check: the finding, the outcome and the checks made.
    fn stopped_after(
        block: &Block,
        options: &Options,
        n: i64,
    ) -> (Result<Finding, Stop>, Outcome, i64) {
        let cancel = AtomicBool::new(false);
        let mut budget = Budget::expiring_after_checks(n, &cancel);
        let mut out = run_default(block, 1);
        out.method.clear();
        out.certificate = None;
        out.distance_bound = None;
        out.relaxation_distance = None;
        out.krylov_steps = 0;
        let finding = decision::run_stages(block, options, &mut budget, &mut out);
        let made = budget.checks_made(n);
        (finding, out, made)
    }

    #[test]
    fn a_limit_at_any_poll_stops_or_keeps_a_proof_that_holds() {
        // Both paths: the conjugate gradients (Y = A proves nothing, a step
        // does) and the relaxation's certificate with its refinement.
        let bound = Options::new(1e-9, GenericityCheck::Proportional)
            .with_threads(1)
            .with_distance(Distance::Bound);
        let exact = bound.with_distance(Distance::Exact);
        for (options, stage) in [
            (bound, Step::ConjugateGradients),
            (exact, Step::Certificate),
        ] {
            let block = leaning(12, 8, 21);
            let (full, full_out, checks) = stopped_after(&block, &options, i64::MAX / 2);
            assert_eq!(full, Ok(Finding::NoSubset(Evidence::Certificate)));
            assert!(full_out.method.contains(&stage), "{:?}", full_out.method);
            if stage == Step::ConjugateGradients {
                assert!(full_out.krylov_steps >= 1);
                assert!(!full_out.method.contains(&Step::Relaxation));
            }
            let mut first_proof = None;
            for n in 0..=checks {
                let (finding, out, _) = stopped_after(&block, &options, n);
                match finding {
                    Err(Stop::TimeLimit) => {
                        assert!(first_proof.is_none(), "n = {n}: a proof, then a stop");
                        assert!(out.certificate.is_none());
                    }
                    Ok(Finding::NoSubset(Evidence::Certificate)) => {
                        first_proof.get_or_insert(n);
                        // Checked afresh, trusting nothing the search did.
                        let y = out.certificate.as_ref().expect("a certificate");
                        assert!(lower_bound(&block, y) > options.tol, "n = {n}");
                    }
                    other => panic!("n = {n}: {other:?}"),
                }
            }
            // The full run's checks all pass at n = checks: the step or
            // certificate that completed last is the proof, not a stop.
            let first = first_proof.expect("the full budget proves");
            assert!(first <= checks);
            if stage == Step::Certificate {
                // The relaxation's first certificate already proves: a
                // limit reached during its refinement keeps it.
                assert!(first < checks, "first proof at {first} of {checks}");
                let (_, out, _) = stopped_after(&block, &options, first);
                assert_eq!(out.relaxation_distance, None);
                assert!(full_out.relaxation_distance.is_some());
            }
        }
    }

    #[test]
    fn cancel_flag_stops_the_search() {
        let (block, _) = planted(3, 8, 2);
        let options = Options::new(1e-9, GenericityCheck::None);
        let out = decide(&block, &options, &AtomicBool::new(true)).unwrap();
        assert_eq!(out.finding, Finding::Stopped(Stop::Interrupted));
    }
}
