//! The decision pipeline: relaxation, certificate, null space, branch and
//! bound, verification. See the design note in `lib.rs`.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::block::Block;
use crate::branch_and_bound::search_component;
use crate::certificate::{certificate, inner_products, lower_bound_from};
use crate::cholesky::PivotedCholesky;
use crate::error::Error;
use crate::genericity::{GenericityCheck, GenericityReport};
use crate::limits::{Budget, Limits, Stop};
use crate::matrix::Matrix;
use crate::null_space::components;
use crate::relaxation::normal_equations;
use crate::verification::subset_residual;

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
}

impl Options {
    pub fn new(tol: f64, check: GenericityCheck) -> Self {
        Options {
            tol,
            check,
            limits: Limits::default(),
            threads: None,
        }
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
    /// The relaxation distance exceeds the tolerance; `Outcome::certificate` holds `Y`.
    Certificate,
    /// The relaxed value of a neuron that no null vector moves is not 0 or 1.
    FixedNeuron { neuron: usize, value: f64 },
    /// Branch and bound exhausted a null-space component.
    Exhausted { component: usize },
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
    /// The search found a candidate that failed float64 verification.
    VerificationFailed(Vec<usize>),
    /// Floating point cannot settle the question either way.
    Inconclusive(Numerics),
}

/// Why floating point could not settle the question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Numerics {
    /// Products of the weights overflow float64.
    Overflow,
    /// The relaxation is too ill-conditioned: its residual does not prove
    /// impossibility, or a rounding conflict is within the solution's error.
    IllConditioned,
}

impl Numerics {
    pub fn as_str(self) -> &'static str {
        match self {
            Numerics::Overflow => "overflow",
            Numerics::IllConditioned => "ill_conditioned",
        }
    }
}

/// The full record of one decision.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub finding: Finding,
    /// Relative residual of the reported (or rejected) subset.
    pub residual: Option<f64>,
    /// `||Y||_F / ||A||_F`; `None` if a limit stopped the relaxation.
    pub relaxation_distance: Option<f64>,
    /// `Y`, when it proves impossibility.
    pub certificate: Option<Matrix>,
    pub genericity: Option<GenericityReport>,
    /// Numerical rank of the Gram matrix.
    pub rank: Option<usize>,
    /// Sizes of the null-space components searched.
    pub components: Vec<usize>,
    pub nodes: u64,
    /// The stages run, in order.
    pub method: Vec<&'static str>,
    pub seconds: f64,
}

/// Tolerance on the relaxed value of a single neuron, derived from the
/// problem tolerance; every candidate is re-verified, so it only steers the
/// search.
/// Whether every basic neuron's relaxed value is known to within `delta`.
/// A flip set within tolerance is at Gram distance at most
/// `rho = ||A|| (tol + dist)` from the relaxed solution; in scaled
/// coordinates that moves neuron `i` by at most
/// `scale_i rho / sqrt(lambda_min)`.
fn values_are_sharp(
    factor: &PivotedCholesky,
    a_norm: f64,
    tol: f64,
    distance: f64,
    delta: f64,
) -> bool {
    let lambda = factor.min_eigenvalue_bound();
    let worst = factor
        .pivots()
        .iter()
        .map(|&p| factor.scale()[p])
        .fold(0.0f64, f64::max);
    lambda > 0.0 && worst * a_norm * (tol + distance) / lambda.sqrt() <= delta
}

/// Refinement steps of the relaxed solution (each costs one `O(m d^2)` pass).
const REFINEMENT_STEPS: usize = 3;

fn value_tolerance(tol: f64) -> f64 {
    (1e3 * tol).clamp(1e-6, 0.25)
}

/// Decide whether some flip set `S` satisfies `c W_down[:, S] W_up[S, :] = -A`.
///
/// Runs on a pool of `options.threads` workers and stops early when `cancel`
/// is set or a limit is reached. Input errors are returned, never panicked.
pub fn decide(block: &Block, options: &Options, cancel: &AtomicBool) -> Result<Outcome, Error> {
    options.validate()?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.threads.unwrap_or(0))
        .stack_size(16 << 20)
        .build()
        .map_err(|e| Error::ThreadPool(e.to_string()))?;
    let (balanced, k_skip) = block.balanced();
    let mut outcome = pool.install(|| run(&balanced, options, cancel));
    if let Some(y) = outcome.certificate.as_mut() {
        // Y is in the units of the balanced skip, 2^k_skip A.
        y.data_mut()
            .iter_mut()
            .for_each(|x| *x = crate::block::ldexp(*x, -k_skip));
    }
    Ok(outcome)
}

fn run(block: &Block, options: &Options, cancel: &AtomicBool) -> Outcome {
    let mut budget = Budget::new(options.limits, cancel);
    let mut out = Outcome {
        finding: Finding::Stopped(Stop::Interrupted),
        residual: None,
        relaxation_distance: None,
        certificate: None,
        genericity: None,
        rank: None,
        components: Vec::new(),
        nodes: 0,
        method: Vec::new(),
        seconds: 0.0,
    };
    out.finding = match stages(block, options, &mut budget, &mut out) {
        Ok(finding) => finding,
        Err(stop) => Finding::Stopped(stop),
    };
    out.nodes = budget.nodes();
    out.seconds = budget.seconds();
    out
}

fn stages(
    block: &Block,
    options: &Options,
    budget: &mut Budget<'_>,
    out: &mut Outcome,
) -> Result<Finding, Stop> {
    let m = block.width();
    let tol = options.tol;
    if block.skip.frobenius_norm() == 0.0 {
        out.method.push("zero skip");
        out.residual = Some(0.0);
        out.relaxation_distance = Some(0.0);
        return Ok(Finding::Subset(Vec::new()));
    }

    out.method.push("relaxation");
    let v = block.w_down.transpose();
    let (normal, genericity) = normal_equations(block, &v, options.check, tol, budget)?;
    drop(v);
    out.genericity = Some(genericity);
    if normal.gram.data().iter().any(|x| !x.is_finite()) {
        return Ok(Finding::Inconclusive(Numerics::Overflow));
    }
    let factor = PivotedCholesky::factor(normal.gram, budget)?;
    out.rank = Some(factor.rank());

    // The normal equations square the condition number, so the solution is
    // refined against residuals computed from the weights themselves
    // (corrected semi-normal equations): s += G^+ <R_i, Y(s)>.
    out.method.push("certificate");
    let mut s_star = factor.solve(&normal.rhs);
    let mut cert = certificate(block, &s_star);
    let mut inner = inner_products(block, &cert.y);
    for _ in 0..REFINEMENT_STEPS {
        budget.check()?;
        let step = factor.solve(&inner);
        let size = step.iter().fold(0.0f64, |a, x| a.max(x.abs()));
        if size <= 1e-15 * s_star.iter().fold(1.0f64, |a, x| a.max(x.abs())) {
            break;
        }
        let trial: Vec<f64> = s_star.iter().zip(&step).map(|(s, d)| s + d).collect();
        let trial_cert = certificate(block, &trial);
        if trial_cert.distance.partial_cmp(&cert.distance) == Some(std::cmp::Ordering::Greater)
            || !trial_cert.distance.is_finite()
        {
            break;
        }
        s_star = trial;
        cert = trial_cert;
        inner = inner_products(block, &cert.y);
    }
    out.relaxation_distance = Some(cert.distance);
    if cert.distance > tol {
        // Claim impossibility only if Y itself proves it.
        if lower_bound_from(block, &cert.y, &inner) > tol {
            out.certificate = Some(cert.y);
            return Ok(Finding::NoSubset(Evidence::Certificate));
        }
        return Ok(Finding::Inconclusive(Numerics::IllConditioned));
    }
    let y_distance = cert.distance;
    let a_norm = block.skip.frobenius_norm();
    drop(cert);

    let delta = value_tolerance(tol);
    let mut subset: Vec<usize> = Vec::new();
    let (comps, fixed) = if factor.rank() < m {
        out.method.push("null space");
        let null = factor.null_basis(budget)?;
        let (comps, fixed) = components(&null, factor.pivots(), m);
        (Some((null, comps)), fixed)
    } else {
        (None, factor.pivots().to_vec())
    };
    // Fixed neurons take their nearest 0/1 value; the worst miss is kept.
    let mut conflict: Option<(usize, f64, f64)> = None;
    for &i in &fixed {
        let value = s_star[i];
        let bit = if value > 0.5 { 1.0 } else { 0.0 };
        let miss = (value - bit).abs();
        if miss > delta && conflict.is_none_or(|(_, _, worst)| miss > worst) {
            conflict = Some((i, value, miss));
        }
        if bit == 1.0 {
            subset.push(i);
        }
    }

    if let Some((null, comps)) = comps {
        out.method.push("branch and bound");
        out.components = comps.iter().map(|c| c.size()).collect();
        for (k, comp) in comps.iter().enumerate() {
            match search_component(comp, &null, &s_star, delta, budget)? {
                Some(ones) => subset.extend(ones),
                // Exhaustion within `delta` is a proof only if the relaxed
                // values are known to better than `delta`.
                None if !values_are_sharp(&factor, a_norm, tol, y_distance, delta) => {
                    return Ok(Finding::Inconclusive(Numerics::IllConditioned))
                }
                None => return Ok(Finding::NoSubset(Evidence::Exhausted { component: k })),
            }
        }
    }
    subset.sort_unstable();

    out.method.push("verification");
    let residual = subset_residual(block, &subset);
    out.residual = Some(residual);
    if residual <= tol {
        return Ok(Finding::Subset(subset));
    }
    let Some((neuron, value, miss)) = conflict else {
        return Ok(Finding::VerificationFailed(subset));
    };
    if factor.rank() < m {
        // The fixed neuron lies outside every null vector's support; its
        // relaxed value is as sharp as the basic part's conditioning allows.
        if !values_are_sharp(&factor, a_norm, tol, y_distance, delta) {
            return Ok(Finding::Inconclusive(Numerics::IllConditioned));
        }
        return Ok(Finding::NoSubset(Evidence::FixedNeuron { neuron, value }));
    }
    // Full rank: a flip set within tolerance satisfies
    // ||M (s - s*)|| <= rho = ||A|| sqrt(tol^2 - dist^2), and in scaled
    // coordinates ||M x|| >= sqrt(lambda_min) |x_i|. Neuron i misses 0 and 1
    // by `miss`, so no flip set exists when sqrt(lambda) miss / scale_i
    // exceeds rho (with a safety factor of 2).
    let rho = a_norm * (tol * tol - y_distance * y_distance).max(0.0).sqrt();
    let lambda = factor.min_eigenvalue_bound();
    let scale = factor.scale()[neuron];
    if scale > 0.0 && lambda.sqrt() * miss / scale > 2.0 * rho {
        Ok(Finding::NoSubset(Evidence::FixedNeuron { neuron, value }))
    } else {
        Ok(Finding::Inconclusive(Numerics::IllConditioned))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::certificate::lower_bound;

    /// Small deterministic generator (SplitMix64), so the core needs no
    /// random-number dependency.
    struct SplitMix(u64);

    impl SplitMix {
        fn next(&mut self) -> f64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            (z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        }

        fn matrix(&mut self, rows: usize, cols: usize) -> Matrix {
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
    fn planted(d: usize, m: usize, seed: u64) -> (Block, Vec<usize>) {
        let mut rng = SplitMix(seed);
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
        let mut rng = SplitMix(3);
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
        let mut rng = SplitMix(5);
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

    #[test]
    fn cancel_flag_stops_the_search() {
        let (block, _) = planted(3, 8, 2);
        let options = Options::new(1e-9, GenericityCheck::None);
        let out = decide(&block, &options, &AtomicBool::new(true)).unwrap();
        assert_eq!(out.finding, Finding::Stopped(Stop::Interrupted));
    }
}
