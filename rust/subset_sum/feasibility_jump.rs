//! A primal heuristic for 0/1 solutions of `A x = b`: feasibility jump.
//!
//! # Design note
//!
//! Weighted local search without an LP (Luteberget & Sartor, "Feasibility
//! Jump: an LP-free Lagrangian MIP heuristic", Math. Prog. Comp. 15, 2023).
//! It starts from `x = 0` and keeps the residual `r = A x - b` exactly in
//! `i64`. Each row has a weight `w_i`, and the score of flipping `x_j` is
//! the drop in `sum_i w_i |r_i|` that the flip would give. A move flips the
//! best-scoring variable. When no flip lowers the weighted violation, the
//! weights of the violated rows grow by one and a variable of one violated
//! row (picked by a seeded generator) is flipped, the best one of that row;
//! a short tabu list keeps the search from undoing that move at once.
//!
//! Starting from zero, the search reaches small solutions first, which is
//! where absorbing flip sets usually are. It is cheap (`O(k n)` per move, a
//! fixed move budget) and sequential, so its answer never depends on the
//! thread count. It can only find solutions: when it fails, nothing is
//! proved, and the exact engines decide.

use std::time::Instant;

use crate::limits::Limits;
use crate::rng::{Stream, XorShift64Star};

/// What the local search found.
#[derive(Debug, Clone, PartialEq)]
pub struct JumpResult {
    /// `x` with `A x = b` exactly, or `None`.
    pub solution: Option<Vec<u8>>,
    /// Variables flipped.
    pub moves: u64,
}

/// Fixed seed: the same instance always takes the same path.
const SEED: u64 = 0x9E37_79B9_7F4A_7C15;
/// Moves a variable stays fixed after a forced move.
const TABU: u64 = 8;

/// Search for `x` in `{0, 1}^n` with `sum_j x_j columns[j] = b`, flipping at
/// most `max_moves` variables (the time limit in `limits` is honoured too;
/// its node limit is not used: the move budget bounds the work).
///
/// The caller keeps every partial sum of `|A|` plus `|b|` below `2^62`, so
/// the residual never overflows.
// Long on purpose: one local-search loop, kept whole as in Luteberget & Sartor.
#[allow(clippy::too_many_lines)]
pub fn feasibility_jump(
    columns: &[Vec<i64>],
    b: &[i64],
    max_moves: u64,
    limits: Limits,
) -> JumpResult {
    let n = columns.len();
    let k = b.len();
    let deadline = limits
        .time_limit
        .and_then(|t| Instant::now().checked_add(t));
    let mut x = vec![0u8; n];
    let mut r: Vec<i64> = b.iter().map(|&v| -v).collect();
    let mut w = vec![1.0f64; k];
    let mut score = vec![0.0f64; n];
    let mut tabu_until = vec![0u64; n];
    let mut rng = XorShift64Star::new(SEED);
    let mut moves = 0u64;
    let rescore = |x: &[u8], r: &[i64], w: &[f64], score: &mut [f64]| {
        for (j, col) in columns.iter().enumerate() {
            let step = if x[j] == 0 { 1 } else { -1 };
            score[j] = col
                .iter()
                .zip(r.iter().zip(w))
                .filter(|(&a, _)| a != 0)
                .map(|(&a, (&ri, &wi))| wi * (ri.abs() as f64 - (ri + step * a).abs() as f64))
                .sum();
        }
    };
    rescore(&x, &r, &w, &mut score);
    loop {
        if r.iter().all(|&v| v == 0) {
            return JumpResult {
                solution: Some(x),
                moves,
            };
        }
        if moves >= max_moves || n == 0 {
            return JumpResult {
                solution: None,
                moves,
            };
        }
        if moves % 256 == 255 && deadline.is_some_and(|d| Instant::now() >= d) {
            return JumpResult {
                solution: None,
                moves,
            };
        }
        // The best improving flip, lowest index on ties.
        let mut best: Option<usize> = None;
        for j in 0..n {
            if score[j] > 0.0 && tabu_until[j] <= moves && best.is_none_or(|b| score[j] > score[b])
            {
                best = Some(j);
            }
        }
        let j = match best {
            Some(j) => j,
            None => {
                // A local minimum: weigh the violated rows up and move on
                // one of them.
                let violated: Vec<usize> = (0..k).filter(|&i| r[i] != 0).collect();
                for &i in &violated {
                    w[i] += 1.0;
                }
                rescore(&x, &r, &w, &mut score);
                let row = violated[(rng.next_u64() >> 33) as usize % violated.len()];
                let mut pick: Option<usize> = None;
                for j in 0..n {
                    // Only flips that move this row toward zero.
                    let a = columns[j][row];
                    let step = if x[j] == 0 { a } else { -a };
                    let helps = (r[row] + step).abs() < r[row].abs();
                    if helps && tabu_until[j] <= moves && pick.is_none_or(|p| score[j] > score[p]) {
                        pick = Some(j);
                    }
                }
                match pick {
                    Some(j) => {
                        tabu_until[j] = moves + TABU;
                        j
                    }
                    // Every helpful variable is tabu: wait it out.
                    None => {
                        moves += 1;
                        continue;
                    }
                }
            }
        };
        let step = if x[j] == 0 { 1 } else { -1 };
        x[j] ^= 1;
        for (ri, &a) in r.iter_mut().zip(&columns[j]) {
            *ri += step * a;
        }
        rescore(&x, &r, &w, &mut score);
        moves += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(columns: &[Vec<i64>], b: &[i64], x: &[u8]) -> bool {
        (0..b.len()).all(|i| {
            columns
                .iter()
                .zip(x)
                .map(|(c, &xj)| c[i] * xj as i64)
                .sum::<i64>()
                == b[i]
        })
    }

    #[test]
    fn finds_a_planted_sparse_solution() {
        // Columns 1 and 4 sum to b; the others are distractors.
        let columns = vec![
            vec![3, -2, 1],
            vec![1, 0, -1],
            vec![-2, 2, 2],
            vec![2, 3, -3],
            vec![0, 2, 1],
        ];
        let b = vec![1, 2, 0];
        let out = feasibility_jump(&columns, &b, 1000, Limits::default());
        let x = out.solution.expect("a solution");
        assert!(check(&columns, &b, &x));
        assert_eq!(x, vec![0, 1, 0, 0, 1]);
    }

    #[test]
    fn reports_nothing_on_an_infeasible_instance() {
        // Even entries cannot sum to an odd target.
        let columns = vec![vec![2, 4], vec![4, 2], vec![6, 6]];
        let out = feasibility_jump(&columns, &[3, 3], 500, Limits::default());
        assert_eq!(out.solution, None);
        assert_eq!(out.moves, 500);
    }

    #[test]
    fn zero_target_is_solved_without_moves() {
        let out = feasibility_jump(&[vec![1, 2]], &[0, 0], 10, Limits::default());
        assert_eq!(out.solution, Some(vec![0]));
        assert_eq!(out.moves, 0);
    }
}
