//! LLL reduction of an integer basis, for installs without fpylll.
//!
//! # Design note
//!
//! The lattice route (`lattice.rs`) needs reduced bases: the embedding's
//! LLL, which isolates the kernel lattice, and the closest-vector form of
//! that kernel basis. With the optional `lattice` extra, fpylll does both
//! (LLL, then BKZ). Without it, this module does the LLL part, so the lean
//! install still reaches QOBLIB's ms_07 (70 columns).
//!
//! It is a floating-point LLL in the manner of Schnorr & Euchner (1994,
//! "Lattice basis reduction: improved practical algorithms and solving
//! subset sum problems", Math. Programming 66): the basis is kept in exact
//! integers (`i128`, every operation checked), its Gram-Schmidt data in
//! `f64`, recomputed from the exact row each time the algorithm reaches it
//! and after each size-reduction pass. The Gram-Schmidt data come from a
//! Householder QR factorization, as in Morel, Stehle & Villard's H-LLL
//! (2009): the embedding's equation weights make the rows 2^30 times
//! longer than their Gram-Schmidt vectors, and the textbook recurrence
//! `|b*_k|^2 = |b_k|^2 - sum_j mu_kj^2 |b*_j|^2` loses all of its digits to
//! that cancellation, where the reflections lose only a factor `|b_k|`.
//!
//! Where `f64` fails (rows about `2^50` times longer than the Gram-Schmidt
//! vectors they are reduced against, as in degenerate kernel lattices),
//! the reduction starts again from the input in double-double arithmetic
//! (`linalg::double_double`, about 100 bits).
//!
//! Whatever the floats do, the output spans the same lattice as the input:
//! every change to the basis is an integer row operation (`b_k -= q b_j`,
//! or a swap), carried out exactly or refused. So the enumeration that
//! follows stays complete; only the quality of the reduction, and so the
//! size of the search tree, depends on the rounding. A reduction that goes
//! wrong numerically (a Gram-Schmidt norm that is not positive, or more
//! swaps than a reduction of this size can need) is reported, never
//! returned as reduced.

use std::sync::atomic::AtomicBool;

use crate::error::Error;
use crate::limits::{Budget, Limits, Stop};
use crate::linalg::double_double::{Dd, Real};

/// Size-reduction target: `|mu_kj| <= ETA` after reduction (0.5 in exact
/// arithmetic; a little above leaves room for rounding, as fplll's 0.51).
const ETA: f64 = 0.51;

/// Swaps (in units of `d^2`) after which deep insertions stop and the
/// reduction goes on as plain LLL. Deep insertions have no polynomial
/// bound: on a sparse 84-dimensional kernel basis they ran past 380,000
/// swaps (54 d^2) without ending, where the QOBLIB kernel bases (d = 54 to
/// 81) need at most 4 d^2.
const DEEP_SWAPS_PER_ROW_SQ: u64 = 8;

/// Largest dimension reduced: the Python layer stops at 600.
const MAX_ROWS: usize = 1024;

/// Why a reduction ended without a reduced basis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// A limit, or the cancel flag.
    Stopped(Stop),
    /// The rows are linearly dependent (a row became zero).
    Dependent,
    /// An entry, or an exact inner product, left the `i128` range.
    Overflow,
    /// The floating-point Gram-Schmidt data went wrong (a norm that is not
    /// positive, or no progress within the swap budget) in `f64` and then in
    /// double-double, or the result could not be certified.
    Precision,
}

impl Failure {
    /// One line for the method trace.
    pub fn as_str(&self) -> &'static str {
        match self {
            Failure::Stopped(stop) => stop.as_str(),
            Failure::Dependent => "the rows are linearly dependent",
            Failure::Overflow => "an entry or inner product left the 128-bit range",
            Failure::Precision => {
                "its floats (double, then double-double) could not reduce the basis, or not \
                 certify the result in double precision"
            }
        }
    }
}

/// The result of [`lll`]: the reduced basis (same lattice, same row count),
/// or why there is none.
pub type Reduction = Result<Vec<Vec<i128>>, Failure>;

/// LLL-reduce the rows of `basis` with Lovasz parameter `delta` (in
/// `(0.25, 1)`; 0.99 as fpylll). Rows must be linearly independent and of
/// equal length.
///
/// With `certify`, the result is returned only if [`certified`] holds for
/// it, else [`Failure::Precision`]: the floats then could not show that it
/// is reduced. Without, a basis whose rows differ in length beyond what
/// `f64` resolves (an embedding with heavy equation weights, used only to
/// read off the rows with a zero equation part) is returned as reduced as
/// the floats made it.
///
/// `deep` > 0 adds Schnorr & Euchner's deep insertions at positions below
/// `deep`, for the first `DEEP_SWAPS_PER_ROW_SQ * d^2` swaps; the rest of
/// the reduction is plain LLL, so it ends.
pub fn lll(
    basis: &[Vec<i128>],
    delta: f64,
    deep: usize,
    certify: bool,
    limits: Limits,
    cancel: &AtomicBool,
) -> Result<Reduction, Error> {
    check(basis, delta)?;
    let budget = Budget::new(limits, cancel);
    let accept = |reduction: Reduction| match reduction {
        Ok(reduced) if certify && !certified(&reduced, delta) => Err(Failure::Precision),
        other => other,
    };
    Ok(
        match accept(Lll::<f64>::new(basis).run(delta, deep, &budget)) {
            // Double-double resolves rows about 2^50 times longer than their
            // Gram-Schmidt vectors where f64 does not; it starts again from the
            // input, as the failed run's basis may be further from reduced.
            Err(Failure::Precision) => accept(Lll::<Dd>::new(basis).run(delta, deep, &budget)),
            other => other,
        },
    )
}

/// Slack of [`certified`] on the size-reduction bound and on `delta`.
const SLACK: f64 = 0.05;

/// Whether `basis` is LLL-reduced with parameters `(delta - SLACK, ETA +
/// SLACK)` once the rounding of a fresh `f64` Householder QR is accounted
/// for. Householder QR is backward stable: each computed `r_kj` is within
/// about `(n + d) u |b_k|` of the exact one (`u = 2^-53`; Higham, Accuracy
/// and Stability of Numerical Algorithms, section 19.3); this takes four
/// times that, and fails where that error alone exceeds the slack, so a
/// basis that is far from reduced but looks reduced in floats (rows far
/// longer than their Gram-Schmidt vectors) is not certified.
pub fn certified(basis: &[Vec<i128>], delta: f64) -> bool {
    let d = basis.len();
    let Some(n) = basis.first().map(Vec::len) else {
        return true;
    };
    let mut qr = Lll::<f64>::new(basis);
    let gamma = 4.0 * (n + d) as f64 * f64::EPSILON / 2.0;
    let mut length = vec![0.0; d];
    for k in 0..d {
        qr.orthogonalize(k);
        length[k] = dot(&qr.f[k], &qr.f[k]).sqrt();
        let err = gamma * length[k];
        for (j, &len) in length[..k].iter().enumerate() {
            let rjj = qr.r[j][j].abs() - gamma * len;
            if rjj <= 0.0 || qr.r[k][j].abs() + err > (ETA + SLACK) * rjj {
                return false;
            }
        }
        if k > 0 {
            let below = (qr.r[k - 1][k - 1].abs() - gamma * length[k - 1]).max(0.0);
            let diag = qr.r[k][k].abs() + err;
            let off = qr.r[k][k - 1].abs() + err;
            if (delta - SLACK) * below * below > diag * diag + off * off {
                return false;
            }
        }
    }
    true
}

fn check(basis: &[Vec<i128>], delta: f64) -> Result<(), Error> {
    let cols = basis.first().map_or(0, Vec::len);
    if basis.iter().any(|r| r.len() != cols) {
        return Err(Error::InvalidOption {
            option: "basis",
            message: "every row must have the same length".into(),
        });
    }
    if basis.len() > MAX_ROWS {
        return Err(Error::InvalidOption {
            option: "basis",
            message: format!("at most {MAX_ROWS} rows are reduced, got {}", basis.len()),
        });
    }
    if !(delta > 0.25 && delta < 1.0) {
        return Err(Error::InvalidOption {
            option: "delta",
            message: format!("must lie in (0.25, 1), got {delta}"),
        });
    }
    Ok(())
}

/// The state of one reduction: the exact basis, its `f64` image, and the
/// Householder QR factorization of the rows below the current one: row `j`
/// of `r` holds `r_j0 .. r_jj` (`b_j = sum_i r_ji q_i`), `v[j]` and `tau[j]`
/// the reflection that maps `b_j` onto the first `j + 1` axes.
struct Lll<T> {
    b: Vec<Vec<i128>>,
    f: Vec<Vec<T>>,
    r: Vec<Vec<T>>,
    v: Vec<Vec<T>>,
    tau: Vec<T>,
}

fn to_real<T: Real>(row: &[i128]) -> Vec<T> {
    row.iter().map(|&v| T::from_i128(v)).collect()
}

fn dot<T: Real>(x: &[T], y: &[T]) -> T {
    x.iter().zip(y).fold(T::ZERO, |acc, (&a, &b)| acc + a * b)
}

impl<T: Real> Lll<T> {
    fn new(basis: &[Vec<i128>]) -> Self {
        let d = basis.len();
        let n = basis.first().map_or(0, Vec::len);
        Lll {
            b: basis.to_vec(),
            f: basis.iter().map(|r| to_real(r)).collect(),
            r: vec![vec![T::ZERO; d]; d],
            v: vec![vec![T::ZERO; n]; d],
            tau: vec![T::ZERO; d],
        }
    }

    /// Squared Gram-Schmidt norm of row `k`.
    fn norm(&self, k: usize) -> T {
        self.r[k][k] * self.r[k][k]
    }

    /// The Gram-Schmidt coefficient `mu_kj`.
    fn mu(&self, k: usize, j: usize) -> T {
        self.r[k][j] / self.r[j][j]
    }

    /// Where row `k` (size-reduced) goes: the first `i` below `deep`, or
    /// `k - 1`, where its projection orthogonal to `b_0 .. b_(i-1)` is
    /// shorter than `delta |b*_i|` (Schnorr & Euchner's deep insertion;
    /// `deep = 0` is LLL's Lovasz test alone); None when it stays.
    fn insertion(&self, k: usize, delta: f64, deep: usize) -> Option<usize> {
        // |pi_i(b_k)|^2 = sum_{j >= i} r_kj^2, from the top down.
        let mut tail = self.r[k][k] * self.r[k][k];
        let mut projected = vec![T::ZERO; k + 1];
        for i in (0..k).rev() {
            tail = tail + self.r[k][i] * self.r[k][i];
            projected[i] = tail;
        }
        let delta = T::from_f64(delta);
        (0..deep.min(k - 1))
            .chain(std::iter::once(k - 1))
            .find(|&i| delta * self.norm(i) > projected[i])
    }

    fn run(mut self, delta: f64, mut deep: usize, budget: &Budget<'_>) -> Reduction {
        let d = self.b.len();
        if d == 0 {
            return Ok(self.b);
        }
        if d > self.v[0].len() {
            return Err(Failure::Dependent);
        }
        // Swaps of an exact LLL are bounded by d^2 log(max norm) / log(1 /
        // delta); entries here stay below 2^127, so this bounds them with
        // room to spare, and a float reduction that cycles ends here.
        let bits = 2.0 * 128.0;
        let max_swaps = ((d * d) as f64 * bits / -delta.ln()).min(1e12) as u64 + 1000;
        let deep_swaps = DEEP_SWAPS_PER_ROW_SQ * (d * d) as u64;
        let mut swaps = 0u64;
        let mut steps = 0u64;
        self.size_reduce(0)?;
        let mut k = 1;
        while k < d {
            if steps.is_multiple_of(64) {
                budget.check().map_err(Failure::Stopped)?;
            }
            steps += 1;
            self.size_reduce(k)?;
            if let Some(i) = self.insertion(k, delta, deep) {
                // Move b_k to position i (i = k - 1 is LLL's swap).
                self.b[i..=k].rotate_right(1);
                self.f[i..=k].rotate_right(1);
                swaps += 1;
                if swaps > max_swaps {
                    return Err(Failure::Precision);
                }
                if swaps > deep_swaps {
                    deep = 0;
                }
                if i == 0 {
                    self.size_reduce(0)?;
                }
                k = i.max(1);
            } else {
                k += 1;
            }
        }
        Ok(self.b)
    }

    /// Row `k` of R, from the `f64` image of `b_k` and the reflections of
    /// the rows below; then the reflection of row `k`. Householder's QR
    /// keeps the error of every entry relative to `|b_k|`, where the
    /// Gram-matrix recurrence has it relative to `|b_k|^2` (fplll's HLLL
    /// chooses it for the same reason).
    fn orthogonalize(&mut self, k: usize) {
        let mut x = self.f[k].clone();
        for j in 0..k {
            let v = &self.v[j];
            let t = self.tau[j] * dot(&v[j..], &x[j..]);
            for (xi, vi) in x[j..].iter_mut().zip(&v[j..]) {
                *xi -= t * *vi;
            }
        }
        let tail = dot(&x[k..], &x[k..]).sqrt();
        let alpha = if x[k] > T::ZERO { -tail } else { tail };
        self.r[k][..k].copy_from_slice(&x[..k]);
        self.r[k][k] = alpha;
        let v = &mut self.v[k];
        v.fill(T::ZERO);
        v[k..].copy_from_slice(&x[k..]);
        v[k] -= alpha;
        let vv = dot(&v[k..], &v[k..]);
        self.tau[k] = if vv > T::ZERO {
            T::from_f64(2.0) / vv
        } else {
            T::ZERO
        };
    }

    /// Size-reduce row `k` against the rows below it until every `|mu_kj|`
    /// is at most `ETA`, leaving its row of R current and checked.
    fn size_reduce(&mut self, k: usize) -> Result<(), Failure> {
        // Each pass at least halves the largest coefficient in exact
        // arithmetic; a float reduction that makes no headway ends here.
        let eta = T::from_f64(ETA);
        for _ in 0..256 {
            self.orthogonalize(k);
            let mut changed = false;
            for j in (0..k).rev() {
                let m = self.mu(k, j);
                if m.abs() <= eta {
                    continue;
                }
                let qi = m.round_to_i128().ok_or(Failure::Overflow)?;
                let q = T::from_i128(qi);
                let (below, row) = self.b.split_at_mut(k);
                for (x, &y) in row[0].iter_mut().zip(&below[j]) {
                    *x = qi
                        .checked_mul(y)
                        .and_then(|p| x.checked_sub(p))
                        .ok_or(Failure::Overflow)?;
                }
                let (below, row) = self.r.split_at_mut(k);
                for i in 0..=j {
                    let step = q * below[j][i];
                    row[0][i] -= step;
                }
                changed = true;
            }
            if !changed {
                return self.checked(k);
            }
            // Recompute from the exact row: its float image is now far
            // more accurate than the updated coefficients.
            self.f[k] = to_real(&self.b[k]);
        }
        Err(Failure::Precision)
    }

    /// A size-reduced row is nonzero (else the rows were dependent) and has
    /// a positive Gram-Schmidt norm (else the floats failed).
    fn checked(&self, k: usize) -> Result<(), Failure> {
        if self.b[k].iter().all(|&v| v == 0) {
            return Err(Failure::Dependent);
        }
        let norm = self.norm(k);
        if !(norm > T::ZERO && norm.is_finite()) {
            return Err(Failure::Precision);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{SplitMix64, Stream};

    /// The exact inner product (test lattices stay far inside `i128`).
    fn exact_dot(x: &[i128], y: &[i128]) -> Option<i128> {
        x.iter()
            .zip(y)
            .try_fold(0i128, |s, (&a, &b)| s.checked_add(a.checked_mul(b)?))
    }

    fn reduce(basis: &[Vec<i128>]) -> Vec<Vec<i128>> {
        reduce_deep(basis, 0)
    }

    fn reduce_deep(basis: &[Vec<i128>], deep: usize) -> Vec<Vec<i128>> {
        let cancel = AtomicBool::new(false);
        lll(basis, 0.99, deep, true, Limits::default(), &cancel)
            .unwrap()
            .unwrap()
    }

    /// Exact rational check of the LLL conditions, with Gram-Schmidt data
    /// in f64 from exact integer inner products (small test lattices).
    fn is_reduced(b: &[Vec<i128>], delta: f64) -> bool {
        let d = b.len();
        let mut mu = vec![vec![0.0f64; d]; d];
        let mut norm = vec![0.0f64; d];
        for k in 0..d {
            let mut n = exact_dot(&b[k], &b[k]).unwrap() as f64;
            for j in 0..k {
                let s = exact_dot(&b[k], &b[j]).unwrap() as f64;
                let p: f64 = (0..j).map(|i| mu[j][i] * mu[k][i] * norm[i]).sum();
                mu[k][j] = (s - p) / norm[j];
                n -= mu[k][j] * mu[k][j] * norm[j];
            }
            norm[k] = n;
        }
        (1..d).all(|k| {
            (0..k).all(|j| mu[k][j].abs() <= ETA + 1e-9)
                && (delta - 1e-9) * norm[k - 1]
                    <= norm[k] + mu[k][k - 1] * mu[k][k - 1] * norm[k - 1]
        })
    }

    /// The determinant of a small integer matrix, by Bareiss's
    /// fraction-free elimination (exact).
    fn determinant(mut m: Vec<Vec<i128>>) -> i128 {
        let d = m.len();
        let mut sign = 1;
        let mut prev = 1i128;
        for c in 0..d {
            let Some(p) = (c..d).find(|&i| m[i][c] != 0) else {
                return 0;
            };
            if p != c {
                m.swap(c, p);
                sign = -sign;
            }
            for i in c + 1..d {
                for j in c + 1..d {
                    m[i][j] = (m[i][j] * m[c][c] - m[i][c] * m[c][j]) / prev;
                }
            }
            prev = m[c][c];
        }
        sign * m[d - 1][d - 1]
    }

    #[test]
    fn reduces_a_knapsack_lattice_to_the_same_lattice() {
        let mut rng = SplitMix64::new(7);
        for _ in 0..5 {
            let n = 12;
            let a: Vec<i128> = (0..n).map(|_| (rng.next_u64() % 1000) as i128).collect();
            let basis: Vec<Vec<i128>> = (0..n)
                .map(|j| {
                    let mut r = vec![0i128; n + 1];
                    r[j] = 1;
                    r[n] = (1 << 20) * a[j];
                    r
                })
                .collect();
            for deep in [0, 1000] {
                let reduced = reduce_deep(&basis, deep);
                assert_eq!(reduced.len(), n);
                assert!(is_reduced(&reduced, 0.99));
                // Row r is sum_j r[j] (e_j, N a_j): in the lattice exactly when
                // its last entry is N sum_j r[j] a_j; the coefficients form a
                // unimodular matrix exactly when the rows span all of it.
                for r in &reduced {
                    assert_eq!(r[n], (1 << 20) * (0..n).map(|j| r[j] * a[j]).sum::<i128>());
                }
                let u: Vec<Vec<i128>> = reduced.iter().map(|r| r[..n].to_vec()).collect();
                assert_eq!(determinant(u).abs(), 1);
                // The heavy last coordinate is eliminated from all rows but one.
                assert_eq!(reduced.iter().filter(|r| r[n] != 0).count(), 1);
            }
        }
    }

    #[test]
    fn finds_the_short_vector_of_a_two_dimensional_lattice() {
        // (1, 0) and (0, 1) hidden as (1, 0), (1000, 1): LLL finds them.
        let reduced = reduce(&[vec![1000, 1], vec![1001, 1]]);
        let mut rows: Vec<Vec<i128>> = reduced
            .iter()
            .map(|r| r.iter().map(|v| v.abs()).collect())
            .collect();
        rows.sort();
        assert_eq!(rows, vec![vec![0, 1], vec![1, 0]]);
    }

    #[test]
    fn dependent_rows_and_bad_input_are_reported() {
        let cancel = AtomicBool::new(false);
        let got = lll(
            &[vec![1, 2], vec![2, 4]],
            0.99,
            0,
            true,
            Limits::default(),
            &cancel,
        )
        .unwrap();
        assert_eq!(got, Err(Failure::Dependent));
        assert!(lll(
            &[vec![1, 2], vec![2]],
            0.99,
            0,
            true,
            Limits::default(),
            &cancel
        )
        .is_err());
        assert!(lll(&[vec![1, 2]], 1.5, 0, true, Limits::default(), &cancel).is_err());
    }

    #[test]
    fn a_basis_the_floats_cannot_show_reduced_is_not_certified() {
        // A red-team case: the floats take mu = -6.1 for at most 0.51 (rows
        // 2^62 long against a Gram-Schmidt vector of length 6); with
        // `certify` that is a precision failure, not a reduced basis.
        let basis = vec![
            vec![2, 6],
            vec![3_937_417_526_807_858_676, 3_764_042_909_819_986_594],
        ];
        let cancel = AtomicBool::new(false);
        let got = lll(&basis, 0.99, 0, true, Limits::default(), &cancel).unwrap();
        assert!(matches!(got, Err(Failure::Precision)) || is_reduced(&got.unwrap(), 0.98));
        assert!(!certified(
            &[
                vec![2, 6],
                vec![2_414_462_901_181_076_818, -804_820_967_060_358_980]
            ],
            0.99
        ));
        assert!(certified(&reduce(&[vec![1000, 1], vec![1001, 1]]), 0.99));
    }

    #[test]
    fn double_double_reduces_what_double_cannot() {
        // Rows 2^52 longer than the Gram-Schmidt vector they are reduced
        // against: f64 cannot size-reduce them, double-double can. The
        // result keeps the lattice (same determinant up to sign: the change
        // of basis is unimodular) and passes the exact LLL test.
        let cancel = AtomicBool::new(false);
        let budget = Budget::new(Limits::default(), &cancel);
        let basis = vec![vec![1i128 << 55, 1], vec![3, 4]];
        assert!(matches!(
            Lll::<f64>::new(&basis).run(0.99, 0, &budget),
            Err(Failure::Precision)
        ));
        // `lll` falls back to double-double on its own.
        let via = lll(&basis, 0.99, 0, false, Limits::default(), &cancel).unwrap();
        assert!(is_reduced(&via.unwrap(), 0.98));
        for basis in [
            basis,
            vec![
                vec![(1i128 << 60) + 12_345, 7, 1],
                vec![3, 4, 0],
                vec![0, 5, 9],
            ],
        ] {
            let got = Lll::<Dd>::new(&basis).run(0.99, 0, &budget).unwrap();
            assert!(is_reduced(&got, 0.98), "{got:?}");
            assert_eq!(
                determinant(got.clone()).abs(),
                determinant(basis.clone()).abs()
            );
        }
    }

    #[test]
    fn a_cancelled_reduction_says_so() {
        let cancel = AtomicBool::new(true);
        let basis: Vec<Vec<i128>> = (0..8)
            .map(|j| {
                (0..9)
                    .map(|i| {
                        if i == j {
                            1
                        } else if i == 8 {
                            977 * (j as i128 + 3)
                        } else {
                            0
                        }
                    })
                    .collect()
            })
            .collect();
        let got = lll(&basis, 0.99, 0, true, Limits::default(), &cancel).unwrap();
        assert_eq!(got, Err(Failure::Stopped(Stop::Interrupted)));
    }
}
