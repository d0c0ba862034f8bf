//! One decision, stage by stage (docs/theory.md §5), in the order the
//! design note at the top of `absorption` numbers them.
//!
//! [`Decision::run`] is a plain sequence of calls. Each stage either hands
//! its product to the next (the right-hand side of the normal equations,
//! the Gram matrix, the factor, the certified relaxation) or ends the
//! decision with [`Settled`]: what it established, or the limit that
//! stopped it. The record, [`Outcome`], is filled as the stages go, and
//! closed once by the caller.

use crate::absorption::block::Block;
use crate::absorption::certificates::gram::gram_certified;
use crate::absorption::certificates::interval_bound;
use crate::absorption::certificates::krylov::krylov_certificate;
use crate::absorption::certificates::{overflow_unless_skip_certifies, record_bound};
use crate::absorption::genericity::genericity_report;
use crate::absorption::relaxation::certified::{
    certify_relaxation, conjugate_gradient_relaxation, float32_gram_relaxation, float32_relaxation,
    Normal, Refine, Relaxed,
};
use crate::absorption::relaxation::{self, gram_lower, rhs as normal_rhs};
use crate::absorption::search::branch_and_bound::search_component;
use crate::absorption::search::null_space::{components, Component};
use crate::absorption::search::{complete_search, listed_search, LISTED_FREE, MITM_ENTRIES};
use crate::absorption::verification::verify;
use crate::absorption::{
    value_tolerance, Distance, Evidence, Finding, Numerics, Options, Outcome, Step,
};
use crate::limits::{Budget, Stop};
use crate::linalg::cholesky::{NullBasis, PivotedCholesky};
use crate::subset_sum::meet_in_the_middle::MAX_HALF;

/// How a stage ends the decision before the last one.
pub(crate) enum Settled {
    /// It established the finding.
    Found(Finding),
    /// A limit stopped it.
    Stopped(Stop),
}

impl From<Stop> for Settled {
    fn from(stop: Stop) -> Self {
        Settled::Stopped(stop)
    }
}

/// A stage's product, or the end of the decision.
type Stage<T> = Result<T, Settled>;

/// End the decision with `finding`.
fn found<T>(finding: Finding) -> Stage<T> {
    Err(Settled::Found(finding))
}

/// The right-hand side of the normal equations, `h_i = <R_i, -A>`, and
/// `-h`, the inner products of the certificate `Y = A` (§5.2, §5.3).
struct RightHandSide {
    rhs: Vec<f64>,
    minus_h: Vec<f64>,
}

/// One decision in progress: the block, its options, the budget the
/// stages poll and the record they fill.
struct Decision<'a, 'b> {
    block: &'a Block<'a>,
    options: &'a Options,
    budget: &'a mut Budget<'b>,
    out: &'a mut Outcome,
}

/// Run every stage of one decision on `block`, filling `out`.
pub(crate) fn run_stages(
    block: &Block,
    options: &Options,
    budget: &mut Budget<'_>,
    out: &mut Outcome,
) -> Result<Finding, Stop> {
    Decision {
        block,
        options,
        budget,
        out,
    }
    .run()
}

impl Decision<'_, '_> {
    /// Every stage in order; the finding of the last one to run.
    fn run(&mut self) -> Result<Finding, Stop> {
        match self.stages() {
            Ok(finding) | Err(Settled::Found(finding)) => Ok(finding),
            Err(Settled::Stopped(stop)) => Err(stop),
        }
    }

    fn stages(&mut self) -> Stage<Finding> {
        self.zero_skip()?;
        if self.out.genericity.is_none() {
            self.out.genericity = Some(genericity_report(
                self.block,
                self.options.check,
                self.options.tol,
            ));
        }
        let h = self.right_hand_side()?;
        let exact = self.exact_path();
        if exact {
            self.float32_gram(&h)?;
        } else {
            self.cheap_certificates(&h)?;
        }
        let gram = self.gram(&h, exact)?;
        let gram = self.relaxation_without_factor(gram, &h)?;
        let (factor, gram_copy) = self.factor(gram, &h, exact)?;
        if let Some(gram) = gram_copy {
            self.gram_certificate(gram, &factor, &h)?;
        }
        let relaxed = self.certified_relaxation(&factor, &h)?;
        if exact {
            // The least-squares residual proves nothing over the box when
            // the relaxation reaches (or nearly reaches) -A, yet a point of
            // the conjugate-gradient path may: try them before any search,
            // as the verdict-first path does.
            if let Some(finding) =
                krylov_certificate(self.block, &h.rhs, self.options.tol, self.budget, self.out)?
            {
                return found(finding);
            }
        }
        self.search(&h, &factor, &relaxed.s_star)
    }

    /// Before stage 1: a zero skip is absorbed by the empty flip set.
    fn zero_skip(&mut self) -> Stage<()> {
        if self.block.skip.data().iter().all(|&x| x == 0.0) {
            self.out.method.push(Step::ZeroSkip);
            self.out.residual = Some(0.0);
            self.out.relaxation_distance = Some(0.0);
            return found(Finding::Subset(Vec::new()));
        }
        Ok(())
    }

    /// `h` and `-h`, `O(m d)` for an identity skip; products that overflow
    /// float64 end the decision.
    fn right_hand_side(&mut self) -> Stage<RightHandSide> {
        let rhs = normal_rhs(self.block);
        if rhs.iter().any(|x| !x.is_finite()) {
            return found(Finding::Inconclusive(Numerics::Overflow));
        }
        let minus_h = rhs.iter().map(|x| -x).collect();
        Ok(RightHandSide { rhs, minus_h })
    }

    /// Whether the exact path runs: asked for, or left to `Auto` and within
    /// the memory budget, the time budget and what is left of the time
    /// limit (the estimate is recorded). A time limit shorter than the
    /// estimate takes the verdict-first path, whose `Y = A` certificate
    /// costs `O(m d)` and may settle the block before the limit, where the
    /// exact path would stop undecided.
    fn exact_path(&mut self) -> bool {
        let (options, m) = (self.options, self.block.width());
        let left = self.budget.remaining().time_limit.map(|t| t.as_secs_f64());
        let limits = [options.exact_seconds, left];
        let within_budget =
            if options.distance == Distance::Auto && limits.iter().any(Option::is_some) {
                let (d_out, d_in) = self.block.skip.shape();
                let estimate = relaxation::exact_path_seconds(
                    (m, d_out, d_in),
                    rayon::current_num_threads(),
                    m >= options.float32_min_width,
                    options.keep_certificate,
                );
                self.out.exact_estimate = Some(estimate);
                limits.iter().flatten().all(|&seconds| estimate <= seconds)
            } else {
                true
            };
        match options.distance {
            Distance::Exact => true,
            Distance::Bound => false,
            Distance::Auto => options.exact_fits(m) && within_budget,
        }
    }

    /// Stage 2, on the verdict-first path: `Y = A`, then conjugate
    /// gradients (§5.3). The path needs the Gram matrix beyond them, so a
    /// block whose Gram matrix does not fit ends here at the memory limit.
    fn cheap_certificates(&mut self, h: &RightHandSide) -> Stage<()> {
        let (block, tol) = (self.block, self.options.tol);
        self.out.method.push(Step::SkipCertificate);
        let skip_cert = interval_bound(block, &block.skip, Some(&h.minus_h));
        self.out.distance_bound = Some(skip_cert.bound);
        self.out.rounding_bound = Some(skip_cert.rounding);
        if skip_cert.bound > tol {
            self.out.certificate = Some(block.skip.clone().into_owned());
            return found(Finding::NoSubset(Evidence::Certificate));
        }
        if let Some(finding) = krylov_certificate(block, &h.rhs, tol, self.budget, self.out)? {
            return found(finding);
        }
        if !self.options.exact_fits(block.width()) {
            return Err(Settled::Stopped(Stop::MemoryLimit));
        }
        Ok(())
    }

    /// Stages 3 to 5 on a float32 Gram matrix, for a formed certificate
    /// that no bracket follows (it would need the float64 Gram matrix),
    /// from [`Options::cg_min_width`] and [`Options::float32_min_width`]
    /// neurons: conjugate gradients propose the relaxed solution, the
    /// float64 certificate on the weights proves what it proves; a block
    /// it does not settle goes on to the float64 Gram matrix.
    fn float32_gram(&mut self, h: &RightHandSide) -> Stage<()> {
        let (options, m) = (self.options, self.block.width());
        if !options.keep_certificate
            || options.keep_gram
            || m < options.cg_min_width.max(options.float32_min_width)
        {
            return Ok(());
        }
        match float32_gram_relaxation(
            self.block,
            &h.rhs,
            &h.minus_h,
            options,
            self.budget,
            self.out,
        )? {
            Some(finding) => found(finding),
            None => Ok(()),
        }
    }

    /// Stage 3: the lower triangle of the Gram matrix (§5.2). Overflow ends
    /// the decision, unless `Y = A` proves it on the exact path.
    fn gram(&mut self, h: &RightHandSide, exact: bool) -> Stage<Vec<f64>> {
        self.out.method.push(Step::Relaxation);
        let gram = gram_lower(self.block, self.budget)?;
        self.out.lap("gram", self.budget);
        if gram.iter().any(|x| !x.is_finite()) {
            return found(self.overflow(h, exact));
        }
        Ok(gram)
    }

    fn overflow(&mut self, h: &RightHandSide, exact: bool) -> Finding {
        overflow_unless_skip_certifies(self.block, &h.minus_h, self.options.tol, exact, self.out)
    }

    /// Stage 4 without the float64 factor: conjugate gradients from 4096
    /// neurons, then the float32 factor from 2048, each certified in
    /// float64; a settled block keeps its Gram matrix for the bracket (moved,
    /// not copied: a copy would be a second `m x m` buffer at the peak),
    /// and an open one hands it back for the factor.
    fn relaxation_without_factor(&mut self, gram: Vec<f64>, h: &RightHandSide) -> Stage<Vec<f64>> {
        let (block, options, m) = (self.block, self.options, self.block.width());
        let normal = Normal {
            gram: &gram,
            rhs: &h.rhs,
            minus_h: &h.minus_h,
        };
        let mut settled = None;
        if m >= options.cg_min_width {
            settled =
                conjugate_gradient_relaxation(block, &normal, options, self.budget, self.out)?;
            if settled.is_none() {
                self.out
                    .lap("conjugate gradients left it open", self.budget);
            }
        }
        if settled.is_none() && m >= options.float32_min_width {
            settled = float32_relaxation(block, &normal, options, self.budget, self.out)?;
            if settled.is_none() {
                self.out.lap("float32 left it open", self.budget);
            }
        }
        match settled {
            Some(finding) => {
                self.keep_gram(gram);
                found(finding)
            }
            None => Ok(gram),
        }
    }

    /// With [`Options::keep_gram`], hand the Gram matrix to the record.
    fn keep_gram(&mut self, gram: Vec<f64>) {
        if self.options.keep_gram {
            self.out.gram = Some((gram, relaxation::gram_fingerprint(self.block)));
        }
    }

    /// Stage 4: the pivoted float64 Cholesky factor, which consumes the
    /// Gram matrix; a copy is kept when the Gram certificate will need it.
    fn factor(
        &mut self,
        gram: Vec<f64>,
        h: &RightHandSide,
        exact: bool,
    ) -> Stage<(PivotedCholesky, Option<Vec<f64>>)> {
        self.out.relaxation_precision = Some("float64");
        // A second m x m buffer, within what exact_path_bytes counts.
        let gram_copy = (!self.options.keep_certificate).then(|| gram.clone());
        let Some(factor) = PivotedCholesky::factor(gram, self.block.width(), self.budget)? else {
            return found(self.overflow(h, exact));
        };
        self.out.lap("factor", self.budget);
        self.out.rank = Some(factor.rank());
        self.out.rank_decision = Some(factor.rank_decision());
        Ok((factor, gram_copy))
    }

    /// Stage 5 without forming `Y`, when the caller keeps no certificate:
    /// the solution refined on the normal equations (`O(m^2)` a step),
    /// bounded from the Gram matrix.
    fn gram_certificate(
        &mut self,
        gram: Vec<f64>,
        factor: &PivotedCholesky,
        h: &RightHandSide,
    ) -> Stage<()> {
        let (block, m) = (self.block, self.block.width());
        let s0 = factor.solve(&h.rhs);
        let s = relaxation::refine_on_normal_equations(
            &gram,
            m,
            &h.rhs,
            s0.clone(),
            &|r| factor.solve(r),
            self.budget,
        )?
        .unwrap_or(s0);
        let tol = self.options.tol;
        if let Some(finding) = gram_certified(block, &gram, &h.rhs, &h.minus_h, &s, tol, self.out) {
            self.out.lap("gram certificate", self.budget);
            self.keep_gram(gram);
            return found(finding);
        }
        Ok(())
    }

    /// Stage 5: the relaxation refined against the weights and its
    /// certificate checked rigorously beside `Y = A` (§5.2, §6).
    fn certified_relaxation(
        &mut self,
        factor: &PivotedCholesky,
        h: &RightHandSide,
    ) -> Stage<Relaxed> {
        self.out.method.push(Step::Certificate);
        let relaxed = certify_relaxation(
            self.block,
            &h.minus_h,
            Refine::Converge,
            factor.solve(&h.rhs),
            &|r| factor.solve(r),
            self.options.tol,
            self.budget,
            self.out,
        )?;
        if relaxed.refined {
            self.out.method.push(Step::Refinement);
        }
        self.out.relaxation_distance = relaxed.relaxation_distance;
        record_bound(self.out, &relaxed.best);
        if relaxed.best.bound > self.options.tol {
            self.out.certificate = Some(relaxed.best_y);
            return found(Finding::NoSubset(Evidence::Certificate));
        }
        if let Some(stop) = relaxed.refinement_stopped {
            return Err(Settled::Stopped(stop));
        }
        Ok(relaxed)
    }

    /// Stages 6 to 8 (§5.4, §5.6): the null space and its components, a
    /// quick branch and bound on the rounded relaxed values (which proves
    /// nothing; a candidate it finds is verified rigorously), then the
    /// complete search under rigorous windows, or meeting in the middle on
    /// small blocks where interval pruning is weak.
    fn search(
        &mut self,
        h: &RightHandSide,
        factor: &PivotedCholesky,
        s_star: &[f64],
    ) -> Stage<Finding> {
        let (block, options, m) = (self.block, self.options, self.block.width());
        let null = if factor.rank() < m {
            self.out.method.push(Step::NullSpace);
            Some(factor.null_basis(self.budget)?)
        } else {
            None
        };
        let (comps, fixed) = match &null {
            Some(null) => components(null, factor.pivots(), m),
            None => (Vec::new(), factor.pivots().to_vec()),
        };
        self.out.components = comps.iter().map(|c| c.size()).collect();
        let (d_out, d_in) = block.skip.shape();
        let listable = m <= 2 * MAX_HALF && m * d_out * d_in <= MITM_ENTRIES;
        let widest = comps.iter().map(|c| c.free.len()).max().unwrap_or(0);
        if listable && widest > LISTED_FREE {
            // A component with many free neurons on a small block (d = 1,
            // or m far above d^2): interval pruning is weak there, and
            // meeting in the middle costs 2^(m/2).
            return self.listed();
        }
        if let Some(subset) = self.quick_search(null.as_ref(), &comps, &fixed, s_star)? {
            return found(Finding::Subset(subset));
        }
        self.out.method.push(Step::RigorousWindows);
        let finding = complete_search(
            block,
            &h.rhs,
            factor,
            null.as_ref(),
            &comps,
            options.tol,
            self.budget,
            self.out,
        )?;
        if finding == Finding::Inconclusive(Numerics::IllConditioned) && listable {
            return self.listed();
        }
        Ok(finding)
    }

    /// Stage 7 on the whole block: the meet in the middle lists every flip
    /// set (small blocks only), each verified.
    fn listed(&mut self) -> Stage<Finding> {
        let options = self.options;
        Ok(listed_search(
            self.block,
            options.tol,
            options.memory_limit,
            self.budget,
            self.out,
        )?)
    }

    /// Round the relaxed values of the fixed neurons, branch and bound on
    /// each component within a value tolerance, and verify the subset
    /// found; `Some` when it is verified within the tolerance.
    fn quick_search(
        &mut self,
        null: Option<&NullBasis>,
        comps: &[Component],
        fixed: &[usize],
        s_star: &[f64],
    ) -> Stage<Option<Vec<usize>>> {
        let delta = value_tolerance(self.options.tol);
        let mut subset: Vec<usize> = fixed.iter().copied().filter(|&i| s_star[i] > 0.5).collect();
        if let Some(null) = null {
            self.out.method.push(Step::BranchAndBound);
            for comp in comps {
                match search_component(comp, null, s_star, delta, self.budget)? {
                    Some(ones) => subset.extend(ones),
                    None => return Ok(None),
                }
            }
        }
        subset.sort_unstable();
        self.out.method.push(Step::Verification);
        let verified = verify(self.block, &subset, self.options.tol, self.out) == Some(true);
        Ok(verified.then_some(subset))
    }
}
