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
pub fn feasibility_jump(
    columns: &[Vec<i64>],
    b: &[i64],
    max_moves: u64,
    limits: Limits,
) -> JumpResult {
    // Every residual a flip can reach is at most `sum_j |A_ij| + |b_i|`;
    // below 2^53 it is exact in f64, and the scores are summed there.
    let in_f64 = (0..b.len()).all(|i| {
        let reach = columns.iter().map(|c| c[i].unsigned_abs()).sum::<u64>() + b[i].unsigned_abs();
        reach < 1 << 53
    });
    jump(columns, b, max_moves, limits, in_f64)
}

/// [`feasibility_jump`], its scores summed in f64 (`in_f64`, only where
/// every residual is exact there) or from the i64 residuals.
// Long on purpose: one local-search loop, kept whole as in Luteberget & Sartor.
#[allow(clippy::too_many_lines)]
fn jump(
    columns: &[Vec<i64>],
    b: &[i64],
    max_moves: u64,
    limits: Limits,
    in_f64: bool,
) -> JumpResult {
    let n = columns.len();
    let k = b.len();
    let deadline = limits
        .time_limit
        .and_then(|t| Instant::now().checked_add(t));
    let mut x = vec![0u8; n];
    // `step[j]`: what flipping `x_j` adds to `r` in units of column `j`
    // (+1 or -1; a float for the vectorised scores).
    let mut step = vec![1.0f64; n];
    let mut r: Vec<i64> = b.iter().map(|&v| -v).collect();
    let mut w = vec![1.0f64; k];
    let mut score = vec![0.0f64; n];
    let mut tabu_until = vec![0u64; n];
    let mut rng = XorShift64Star::new(SEED);
    let mut moves = 0u64;
    // Row-major: the scores are summed row by row over all columns at once
    // (vectorised), each in the row order a column-wise sum would take. A
    // zero entry adds `w_i * 0.0`, which changes no score's value. With
    // `in_f64` the residuals and each term's difference are exact floats,
    // so the scores are bit for bit those of the i64 residuals.
    let rows: Vec<i64> = (0..k)
        .flat_map(|i| columns.iter().map(move |col| col[i]))
        .collect();
    let rows_f: Vec<f64> = if in_f64 {
        rows.iter().map(|&a| a as f64).collect()
    } else {
        Vec::new()
    };
    let rescore = |step: &[f64], r: &[i64], w: &[f64], score: &mut [f64]| {
        score.fill(-0.0);
        if n == 0 {
            return;
        }
        if in_f64 {
            for ((row, &ri), &wi) in rows_f.chunks_exact(n).zip(r).zip(w) {
                let ri = ri as f64;
                let now = ri.abs();
                for ((s, &a), &st) in score.iter_mut().zip(row).zip(step) {
                    *s += wi * (now - (ri + st * a).abs());
                }
            }
            return;
        }
        for ((row, &ri), &wi) in rows.chunks_exact(n).zip(r).zip(w) {
            let now = ri.abs() as f64;
            for ((s, &a), &st) in score.iter_mut().zip(row).zip(step) {
                *s += wi * (now - (ri + st as i64 * a).abs() as f64);
            }
        }
    };
    rescore(&step, &r, &w, &mut score);
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
                rescore(&step, &r, &w, &mut score);
                let row = violated[(rng.next_u64() >> 33) as usize % violated.len()];
                let mut pick: Option<usize> = None;
                for j in 0..n {
                    // Only flips that move this row toward zero.
                    let helps = (r[row] + step[j] as i64 * columns[j][row]).abs() < r[row].abs();
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
        x[j] ^= 1;
        for (ri, &a) in r.iter_mut().zip(&columns[j]) {
            *ri += step[j] as i64 * a;
        }
        step[j] = -step[j];
        rescore(&step, &r, &w, &mut score);
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
    fn float_scores_take_the_integer_scores_path() {
        // The f64 scores must give the very moves of the i64 ones.
        let mut rng = XorShift64Star::new(7);
        let mut solved = 0;
        for trial in 0..300 {
            let k = 1 + (rng.next_u64() % 6) as usize;
            let n = 1 + (rng.next_u64() % 40) as usize;
            let span = [3, 40, 1000, 1 << 30][trial % 4];
            let columns: Vec<Vec<i64>> = (0..n)
                .map(|_| {
                    (0..k)
                        .map(|_| (rng.next_u64() % span) as i64 - span as i64 / 3)
                        .collect()
                })
                .collect();
            let b: Vec<i64> = (0..k)
                .map(|i| {
                    columns.iter().step_by(3).map(|c| c[i]).sum::<i64>() + (trial % 5 == 0) as i64
                })
                .collect();
            let moves = 1 + rng.next_u64() % 2000;
            let float = jump(&columns, &b, moves, Limits::default(), true);
            let int = jump(&columns, &b, moves, Limits::default(), false);
            assert_eq!(float, int, "trial {trial}");
            solved += usize::from(float.solution.is_some());
        }
        // Both outcomes occur, so the comparison covers found solutions too.
        assert!(solved > 30 && solved < 300, "{solved} of 300 solved");
    }

    #[test]
    fn zero_target_is_solved_without_moves() {
        let out = feasibility_jump(&[vec![1, 2]], &[0, 0], 10, Limits::default());
        assert_eq!(out.solution, Some(vec![0]));
        assert_eq!(out.moves, 0);
    }
}
