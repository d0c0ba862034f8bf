//! Stages 6 and 7: the exact search over flip sets when no certificate
//! settles the block (docs/theory.md §5.4).
//!
//! `null_space` splits the relaxation's affine solution set into
//! independent components, `windows` bounds each neuron's value rigorously
//! around the relaxed solution, and `branch_and_bound` searches a component
//! under those windows. Small blocks are listed whole by the meet in the
//! middle of `subset_sum` instead.

pub mod branch_and_bound;
pub mod null_space;
pub mod windows;

use crate::absorption::block::Block;
use crate::absorption::relaxation::gram_full;
use crate::absorption::search::branch_and_bound::{enumerate_component, Enumeration};
use crate::absorption::search::null_space::Component;
use crate::absorption::search::windows::{windows, MAX_ENTRIES};
use crate::absorption::verification::{residual_bounds, verify};
use crate::absorption::{Evidence, Finding, Numerics, Outcome, Step};
use crate::limits::{Budget, Stop};
use crate::linalg::cholesky::{NullBasis, PivotedCholesky};
use crate::rigor::rounding::{gamma, norm_upper, up};
use crate::subset_sum::meet_in_the_middle::meet_in_the_middle_verified;

/// Most assignments one component may list in the complete search.
pub(crate) const COMPONENT_CAP: usize = 4096;

/// Work (entries of `E` summed) the complete search may spend verifying
/// candidates before it calls the windows too wide.
pub(crate) const VERIFY_WORK: f64 = 4e9;

/// Bytes the meet in the middle may take for width `m`: its two lists of
/// `2^(m/2)` subset sums with their indices, and room for the window's
/// candidates (a generous estimate, so the guard never underestimates).
pub fn listed_search_bytes(m: usize) -> u128 {
    64u128 << (m - m / 2).min(100)
}

/// Free neurons in one component beyond which a block small enough for the
/// meet in the middle goes there directly.
pub(crate) const LISTED_FREE: usize = 16;

/// Largest `m * d_out * d_in` handed to the meet in the middle (the flattened
/// rank-one terms are held in memory).
pub(crate) const MITM_ENTRIES: usize = 1 << 22;

/// When the windows are too wide: the complete meet in the middle on the
/// flattened system `sum_i s_i vec(R_i) = -vec(A)`, within
/// `tol ||A||_F` (rounded up), every subset it returns verified here.
pub(crate) fn listed_search(
    block: &Block,
    tol: f64,
    memory_limit: Option<u128>,
    budget: &mut Budget<'_>,
    out: &mut Outcome,
) -> Result<Finding, Stop> {
    let m = block.width();
    if memory_limit.is_some_and(|limit| listed_search_bytes(m) > limit) {
        return Err(Stop::MemoryLimit);
    }
    // Its two lists alone take 2^(m/2) nodes each: a smaller node budget
    // stops it before it starts.
    let lists = (1u64 << (m / 2)) + (1u64 << (m - m / 2));
    if budget
        .remaining()
        .node_limit
        .is_some_and(|left| left < lists)
    {
        return Err(Stop::NodeLimit);
    }
    out.method.push(Step::MeetInTheMiddle);
    let (d_out, d_in) = block.skip.shape();
    let c = block.flip_constant;
    // vec(R_i) in float64: the meet in the middle's window counts only the
    // rounding of its own sums, so the rounding of these products (and of
    // the flip constant) goes into the radius: at most gamma(4) |R_i|
    // entrywise, so gamma(4) sum_i ||R_i||_F over any flip set.
    let columns: Vec<Vec<f64>> = (0..block.width())
        .map(|i| {
            let mut col = Vec::with_capacity(d_out * d_in);
            for p in 0..d_out {
                let v = c * block.w_down.get(p, i);
                col.extend(block.w_up.row(i).iter().map(|&u| v * u));
            }
            col
        })
        .collect();
    let slack: f64 = columns.iter().map(|col| gamma(4) * norm_upper(col)).sum();
    let target: Vec<f64> = block.skip.data().iter().map(|x| -x).collect();
    let radius = up(
        tol * norm_upper(block.skip.data()) + up(slack, columns.len() + 1),
        2,
    );
    // Every subset in the window is verified rigorously; the search goes
    // on past those provably outside the tolerance.
    let checked = std::sync::atomic::AtomicU64::new(0);
    let accept = |x: &[u8]| -> Option<bool> {
        checked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let subset: Vec<usize> = (0..x.len()).filter(|&i| x[i] == 1).collect();
        residual_bounds(block, &subset, tol).within_tolerance(tol)
    };
    let (result, unresolved) = match meet_in_the_middle_verified(
        &columns,
        &target,
        radius,
        budget.remaining(),
        budget.cancel_flag(),
        &accept,
    ) {
        Ok(found) => found,
        Err(_) => return Ok(Finding::Inconclusive(Numerics::IllConditioned)),
    };
    budget.add_nodes(result.nodes);
    // The accepted subset is counted again by `verify` below.
    out.candidates += checked.into_inner() - u64::from(result.solution.is_some());
    if let Some(stop) = result.stopped {
        return Err(stop);
    }
    let Some(x) = result.solution else {
        return Ok(if unresolved {
            Finding::Inconclusive(Numerics::Unresolved)
        } else {
            Finding::NoSubset(Evidence::Listed)
        });
    };
    let subset: Vec<usize> = (0..x.len()).filter(|&i| x[i] == 1).collect();
    // Accepted above; record its bracket (and the exact tie, if any).
    match verify(block, &subset, tol, out) {
        Some(true) => Ok(Finding::Subset(subset)),
        _ => Ok(Finding::Inconclusive(Numerics::Unresolved)),
    }
}

/// The complete search: rigorous windows, every allowed assignment of every
/// component, every combination verified rigorously.
// Many parameters on purpose: the products the earlier stages built (factor, null basis, components), handed over rather than recomputed.
#[allow(clippy::too_many_arguments)]
// Long on purpose: the complete search's listing, verification and proof, one pass whose invariants span it.
#[allow(clippy::too_many_lines)]
pub(crate) fn complete_search(
    block: &Block,
    rhs: &[f64],
    factor: &PivotedCholesky,
    null: Option<&NullBasis>,
    comps: &[Component],
    tol: f64,
    budget: &mut Budget<'_>,
    out: &mut Outcome,
) -> Result<Finding, Stop> {
    let m = block.width();
    let r = factor.rank();
    if m.saturating_mul(r) > MAX_ENTRIES {
        return Ok(Finding::Inconclusive(Numerics::IllConditioned));
    }
    // The Gram matrix again, unscaled (the factorisation consumed it).
    let gram = gram_full(block, budget)?;
    let pos_of: std::collections::HashMap<usize, usize> = factor
        .pivots()
        .iter()
        .enumerate()
        .map(|(k, &p)| (p, k))
        .collect();
    let mut coupled: Vec<Vec<usize>> = vec![Vec::new(); r];
    if let Some(null) = null {
        for (k, &f) in null.free.iter().enumerate() {
            for &(b, _) in &null.coefficients[k] {
                coupled[pos_of[&b]].push(f);
            }
        }
    }
    let Some(rows) = windows(block, &gram, rhs, factor, &coupled, tol, budget)? else {
        return Ok(Finding::Inconclusive(Numerics::Overflow));
    };
    drop(gram);
    let row_of = |neuron: usize| &rows[pos_of[&neuron]];
    let inert = |f: usize| {
        block.w_up.row(f).iter().all(|&x| x == 0.0)
            || (0..block.w_down.rows()).all(|p| block.w_down.get(p, f) == 0.0)
    };

    // Choices: per component the assignments it allows; per fixed basic
    // neuron the values its window allows.
    let mut choices: Vec<Vec<Vec<usize>>> = Vec::new();
    let mut in_comp = vec![false; m];
    for (k, comp) in comps.iter().enumerate() {
        let null = null.expect("components come from a null basis");
        let mut frees: Vec<usize> = comp.free.iter().map(|&q| null.free[q]).collect();
        frees.sort_unstable();
        let comp_rows: Vec<&crate::absorption::search::windows::Row> =
            comp.basic.iter().map(|&b| row_of(b)).collect();
        for &i in frees.iter().chain(&comp.basic) {
            in_comp[i] = true;
        }
        let inert_flags: Vec<bool> = frees.iter().map(|&f| inert(f)).collect();
        match enumerate_component(&comp_rows, &frees, &inert_flags, COMPONENT_CAP, budget)? {
            Enumeration::TooMany => return Ok(Finding::Inconclusive(Numerics::IllConditioned)),
            Enumeration::Solutions(list) if list.is_empty() => {
                return Ok(Finding::NoSubset(Evidence::Exhausted { component: k }))
            }
            Enumeration::Solutions(list) => choices.push(list),
        }
    }
    for &p in factor.pivots() {
        if in_comp[p] {
            continue;
        }
        let row = row_of(p);
        let list: Vec<Vec<usize>> = [0u8, 1]
            .iter()
            .filter(|&&b| row.allows(b))
            .map(|&b| if b == 1 { vec![p] } else { Vec::new() })
            .collect();
        if list.is_empty() {
            return Ok(Finding::NoSubset(Evidence::FixedNeuron {
                neuron: p,
                value: row.center(),
            }));
        }
        // A single "0" choice adds nothing; "1" or both are recorded.
        if list.len() > 1 || !list[0].is_empty() {
            choices.push(list);
        }
    }
    // Free neurons outside every component (no basic neuron moves with them)
    // can take either value unless their term is exactly zero.
    if let Some(null) = null {
        for &f in &null.free {
            if !in_comp[f] && !inert(f) {
                choices.push(vec![Vec::new(), vec![f]]);
            }
        }
    }
    let total = choices
        .iter()
        .try_fold(1f64, |acc, c| Some(acc * c.len() as f64))
        .unwrap_or(f64::INFINITY);
    let (d_out, d_in) = block.skip.shape();
    let per_candidate = (2 * m.max(1) * d_out * d_in) as f64;
    if total * per_candidate > VERIFY_WORK && total > 1.0 {
        return Ok(Finding::Inconclusive(Numerics::IllConditioned));
    }
    out.method.push(Step::ExhaustiveVerification);
    let total = total as u64;
    let mut unresolved = false;
    for code in 0..total {
        budget.check()?;
        let mut rest = code;
        let mut subset: Vec<usize> = Vec::new();
        for c in &choices {
            let n = c.len() as u64;
            subset.extend_from_slice(&c[(rest % n) as usize]);
            rest /= n;
        }
        subset.sort_unstable();
        match verify(block, &subset, tol, out) {
            Some(true) => return Ok(Finding::Subset(subset)),
            Some(false) => {}
            None => unresolved = true,
        }
    }
    if unresolved {
        return Ok(Finding::Inconclusive(Numerics::Unresolved));
    }
    out.residual = None;
    out.residual_lower = None;
    Ok(Finding::NoSubset(Evidence::Exhausted {
        component: comps.len(),
    }))
}
