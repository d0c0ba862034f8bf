//! The complete depth-first search of a kernel lattice, cut into subtrees
//! that can be searched anywhere, in any order, in pieces: the unit of the
//! distributed and resumable search.
//!
//! A subtree is named by its prefix, the coefficients of the top levels
//! (top first), so it travels as a few integers and needs no state of the
//! process that listed it. [`root_prefixes`] lists the tree's cut, the
//! prefixes [`super::lattice::Tree`] searches in parallel; their subtrees
//! together are the whole tree. [`search_subtrees`] searches a list of
//! prefixes within a node or time budget and hands back, in place of each
//! one it did not finish, the prefixes of the part it did not search
//! (`Walker::frontier`). So the prefixes still pending always cover every
//! node not yet searched, whatever was cut where: once none is pending and
//! no solution was found, the search has proved that there is none, as
//! the whole tree searched at once would have.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::lattice::{run_jobs, Job, Lattice, Shared, Tree};
use crate::error::Error;
use crate::limits::{Limits, Stop};

/// The tree's cut: its prefixes in search order, and the nodes visited
/// to list them (counted once, by whoever reports the search).
pub fn root_prefixes(
    basis: &[Vec<i64>],
    bounds: &[i64],
    radius_sq: f64,
) -> Result<(Vec<Vec<i64>>, u64), Error> {
    let tree = Tree::new(basis, bounds, radius_sq)?;
    let prefixes = tree.jobs.iter().map(|j| j.prefix.clone()).collect();
    Ok((prefixes, tree.listing.load(Ordering::Relaxed)))
}

/// What a [`search_subtrees`] call did.
#[derive(Debug, Clone, PartialEq)]
pub struct Subtrees {
    /// Lattice vectors within the bounds, exact, at most `max_solutions`
    /// of them, in the order of the prefixes given.
    pub solutions: Vec<Vec<i64>>,
    /// The prefixes still to search: every given one not searched to its
    /// end, or, for one a limit cut, the part of its subtree it did not
    /// search. Empty (with no solution) when every given subtree is
    /// exhausted.
    pub pending: Vec<Vec<i64>>,
    /// Given prefixes searched to their end.
    pub finished: usize,
    /// Values the cut walks listed for `pending` instead of searching
    /// them: with `nodes`, what one uncut search would have counted.
    pub listed: u64,
    pub nodes: u64,
    /// The limit that cut the search, if one did.
    pub stopped: Option<Stop>,
    pub seconds: f64,
}

/// Search the subtrees below `prefixes` (each the coefficients of the top
/// levels, top first, as [`root_prefixes`] or an earlier call gave them)
/// depth first, in parallel on the current rayon pool, until
/// `max_solutions` are found, every subtree is exhausted, or a limit stops
/// it. Checks the
/// shapes and the basis as [`Tree::new`] does, and that no prefix is
/// longer than the basis is deep.
pub fn search_subtrees(
    basis: &[Vec<i64>],
    bounds: &[i64],
    radius_sq: f64,
    prefixes: &[Vec<i64>],
    max_solutions: usize,
    limits: Limits,
    cancel: &AtomicBool,
) -> Result<Subtrees, Error> {
    let wanted = max_solutions.max(1);
    let start = Instant::now();
    if basis.is_empty() {
        // No nonzero vector: every subtree is empty.
        return Ok(Subtrees {
            solutions: Vec::new(),
            pending: Vec::new(),
            finished: prefixes.len(),
            listed: 0,
            nodes: 0,
            stopped: None,
            seconds: start.elapsed().as_secs_f64(),
        });
    }
    let lattice = Lattice::new(basis, bounds, radius_sq)?;
    let jobs = prefixes
        .iter()
        .map(|p| Job::from_prefix(&lattice.gso, p))
        .collect::<Option<Vec<Job>>>()
        .ok_or_else(|| Error::InvalidOption {
            option: "prefixes",
            message: format!(
                "a prefix is longer than the basis has levels ({})",
                basis.len()
            ),
        })?;
    let mut shared = Shared::new(&lattice, wanted, limits, start, cancel);
    shared.hand_back = true;
    let (results, _) = run_jobs(&shared, &jobs, None, &vec![false; jobs.len()], 0);
    let mut out = Subtrees {
        solutions: Vec::new(),
        pending: Vec::new(),
        finished: 0,
        listed: 0,
        nodes: 0,
        stopped: None,
        seconds: 0.0,
    };
    for (job, result) in jobs.iter().zip(results) {
        let room = wanted - out.solutions.len();
        out.solutions.extend(result.found.into_iter().take(room));
        out.stopped = out.stopped.or(result.stop);
        if result.searched {
            out.finished += 1;
        } else {
            match result.rest {
                Some((rest, listed)) => {
                    out.pending.extend(rest);
                    out.listed += listed;
                }
                None => out.pending.push(job.prefix.clone()),
            }
        }
    }
    if out.solutions.len() >= wanted {
        out.stopped = None;
    }
    out.nodes = shared.nodes.load(Ordering::Relaxed);
    out.seconds = start.elapsed().as_secs_f64();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Stream;
    use crate::subset_sum::lattice::{enumerate_bounded, Enumeration, Tree};

    /// A lattice of `dim` rows holding the +-1 vector planted in row 0,
    /// the rows mixed (each plus or minus the one before), so that the
    /// planted vector lies deep in the tree. With `parity`, column 0 is
    /// doubled: no vector has an odd entry there, and bounds of 1 admit
    /// none (an infeasible tree of the same shape).
    fn lattice(dim: usize, seed: u64, parity: bool) -> Vec<Vec<i64>> {
        let mut rng = crate::rng::XorShift64::new(seed);
        let mut draw = |k: u64| (rng.next_u64() % k) as i64;
        let mut rows: Vec<Vec<i64>> = (0..dim)
            .map(|i| {
                (0..dim)
                    .map(|j| match (i, j) {
                        (0, _) => 2 * draw(2) - 1,
                        _ if i == j => 1 + draw(2),
                        _ => draw(3) - 1,
                    })
                    .collect()
            })
            .collect();
        for r in 1..dim {
            let sign = draw(3) - 1;
            let above = rows[r - 1].clone();
            rows[r]
                .iter_mut()
                .zip(above)
                .for_each(|(v, a)| *v += sign * a);
        }
        if parity {
            rows.iter_mut().for_each(|r| r[0] *= 2);
        }
        rows
    }

    /// Every vector the subtrees hold, searching them in pieces of `cap`
    /// nodes, each piece's pending prefixes fed to the next; with the
    /// number of pieces.
    fn in_pieces(basis: &[Vec<i64>], bounds: &[i64], cap: u64) -> (bool, usize) {
        let radius = bounds.iter().map(|&c| (c * c) as f64).sum();
        let (mut pending, _) = root_prefixes(basis, bounds, radius).unwrap();
        let cancel = AtomicBool::new(false);
        let mut pieces = 0;
        while !pending.is_empty() {
            pieces += 1;
            assert!(pieces < 100_000, "no progress");
            let limits = Limits {
                time_limit: None,
                node_limit: Some(cap),
            };
            let out = search_subtrees(basis, bounds, radius, &pending, 1, limits, &cancel).unwrap();
            if !out.solutions.is_empty() {
                return (true, pieces);
            }
            pending = out.pending;
        }
        (false, pieces)
    }

    fn whole(basis: &[Vec<i64>], bounds: &[i64]) -> Enumeration {
        let radius = bounds.iter().map(|&c| (c * c) as f64).sum();
        let cancel = AtomicBool::new(false);
        let out = enumerate_bounded(basis, bounds, radius, 1, 0, 0, Limits::default(), &cancel);
        let out = out.unwrap();
        assert!(out.stopped.is_none());
        out
    }

    #[test]
    fn subtrees_searched_in_pieces_decide_as_the_whole_tree_does() {
        let (mut feasible, mut infeasible) = (0, 0);
        for seed in 1..12u64 {
            for parity in [false, true] {
                let basis = lattice(12, seed, parity);
                let bounds = vec![1i64; 12];
                let whole = whole(&basis, &bounds);
                for cap in [1u64, 100, 5000] {
                    let (found, _) = in_pieces(&basis, &bounds, cap);
                    assert_eq!(found, !whole.solutions.is_empty(), "seed {seed}, cap {cap}");
                }
                feasible += usize::from(!whole.solutions.is_empty());
                infeasible += usize::from(whole.solutions.is_empty());
            }
        }
        // Both answers occur, or the test proves little.
        assert!(
            feasible >= 11 && infeasible >= 6,
            "{feasible}, {infeasible}"
        );
    }

    #[test]
    fn pieces_count_every_node_of_the_whole_search_once() {
        // Infeasible trees (no odd entry in column 0): the pieces' nodes
        // plus the values their cuts listed are exactly the nodes of the
        // uncut search, so no subtree was lost or searched twice.
        let cancel = AtomicBool::new(false);
        let mut pieces = 0;
        for seed in [2u64, 5] {
            let (basis, bounds) = (lattice(16, seed, true), vec![1i64; 16]);
            let whole = whole(&basis, &bounds);
            assert!(whole.solutions.is_empty());
            for cap in [4096u64, 20_000] {
                let (mut pending, listing) = root_prefixes(&basis, &bounds, 16.0).unwrap();
                let mut nodes = listing;
                while !pending.is_empty() {
                    let limits = Limits {
                        time_limit: None,
                        node_limit: Some(cap),
                    };
                    let out = search_subtrees(&basis, &bounds, 16.0, &pending, 1, limits, &cancel)
                        .unwrap();
                    assert!(out.solutions.is_empty());
                    nodes += out.nodes + out.listed;
                    pending = out.pending;
                    pieces += 1;
                }
                assert_eq!(nodes, whole.nodes, "seed {seed}, cap {cap}");
            }
        }
        assert!(pieces > 20, "{pieces} pieces");
    }

    #[test]
    fn pieces_find_every_vector_exactly_once() {
        // Every vector of each tree, collected from pieces cut at random
        // points deep inside the prefixes' subtrees: a frontier that lost
        // or repeated a subtree would lose or repeat its vectors.
        let cancel = AtomicBool::new(false);
        let (mut vectors, mut cut) = (0, 0);
        for seed in 1..5u64 {
            let (basis, bounds) = (lattice(17, seed, false), vec![1i64; 17]);
            let all = enumerate_bounded(
                &basis,
                &bounds,
                17.0,
                1 << 20,
                0,
                0,
                Limits::default(),
                &cancel,
            )
            .unwrap();
            let mut expected = all.solutions.clone();
            expected.sort();
            vectors += expected.len();
            for cap in [1u64, 3000] {
                let (mut pending, _) = root_prefixes(&basis, &bounds, 17.0).unwrap();
                let mut found = Vec::new();
                while !pending.is_empty() {
                    let limits = Limits {
                        time_limit: None,
                        node_limit: Some(cap),
                    };
                    let out =
                        search_subtrees(&basis, &bounds, 17.0, &pending, 1 << 20, limits, &cancel)
                            .unwrap();
                    cut += usize::from(out.stopped.is_some());
                    found.extend(out.solutions);
                    pending = out.pending;
                }
                found.sort();
                assert_eq!(found, expected, "seed {seed}, cap {cap}");
            }
        }
        assert!(vectors >= 4 && cut > 50, "{vectors} vectors, {cut} cuts");
    }

    #[test]
    fn a_prefix_longer_than_the_basis_is_refused() {
        let basis = lattice(4, 3, false);
        let cancel = AtomicBool::new(false);
        let err = search_subtrees(
            &basis,
            &[1; 4],
            4.0,
            &[vec![0; 5]],
            1,
            Limits::default(),
            &cancel,
        );
        assert!(err.is_err());
        let tree = Tree::new(&basis, &[1; 4], 4.0).unwrap();
        assert!(!tree.jobs.is_empty());
    }
}
