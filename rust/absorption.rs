//! The decision pipeline: relaxation, certificate, null space, branch and
//! bound, verification. See the design note in `lib.rs`.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::block::Block;
use crate::branch_and_bound::search_component;
use crate::certificate::certificate;
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

    pub fn with_time_limit(mut self, seconds: f64) -> Self {
        self.limits.time_limit = Some(Duration::from_secs_f64(seconds));
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
    Ok(pool.install(|| run(block, options, cancel)))
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
    let factor = PivotedCholesky::factor(normal.gram, budget)?;
    out.rank = Some(factor.rank());
    let s_star = factor.solve(&normal.rhs);

    out.method.push("certificate");
    let cert = certificate(block, &s_star);
    out.relaxation_distance = Some(cert.distance);
    if cert.distance > tol {
        out.certificate = Some(cert.y);
        return Ok(Finding::NoSubset(Evidence::Certificate));
    }
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
    for &i in &fixed {
        let value = s_star[i];
        if (value - value.round()).abs() > delta || !(value.round() == 0.0 || value.round() == 1.0)
        {
            return Ok(Finding::NoSubset(Evidence::FixedNeuron { neuron: i, value }));
        }
        if value.round() == 1.0 {
            subset.push(i);
        }
    }
    if let Some((null, comps)) = comps {
        out.method.push("branch and bound");
        out.components = comps.iter().map(|c| c.size()).collect();
        for (k, comp) in comps.iter().enumerate() {
            match search_component(comp, &null, &s_star, delta, budget)? {
                Some(ones) => subset.extend(ones),
                None => return Ok(Finding::NoSubset(Evidence::Exhausted { component: k })),
            }
        }
    }
    subset.sort_unstable();

    out.method.push("verification");
    let residual = subset_residual(block, &subset);
    out.residual = Some(residual);
    if residual <= tol {
        Ok(Finding::Subset(subset))
    } else {
        Ok(Finding::VerificationFailed(subset))
    }
}
