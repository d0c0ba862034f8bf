//! The core's dense kernels at MiniLM's FFN shape (d = 384, m = 1536) and
//! the lattice enumeration on a fixed basis: the Gram matrix (stage 3), the
//! pivoted Cholesky factor (stage 4), the genericity checks (stage 1), a
//! depth-first enumeration of a small kernel lattice, and the core's LLL on
//! a market-split embedding (the reduction without fpylll).

use std::hint::black_box;
use std::sync::atomic::AtomicBool;

use criterion::{criterion_group, criterion_main, Criterion};
use skipsearch::absorption::block::Block;
use skipsearch::absorption::genericity::{dead_neurons, proportional_pairs, GenericityCheck};
use skipsearch::absorption::relaxation::gram_lower;
use skipsearch::limits::Budget;
use skipsearch::linalg::cholesky::PivotedCholesky;
use skipsearch::rng::SplitMix64;
use skipsearch::subset_sum::lattice::enumerate_bounded;
use skipsearch::subset_sum::reduction::lll;
use skipsearch::{Limits, Matrix};

/// Uniforms in [-1, 1) from the crate's generator.
fn uniform(seed: u64, n: usize) -> Vec<f64> {
    let mut rng = SplitMix64::new(seed);
    (0..n).map(|_| rng.symmetric()).collect()
}

fn block(d: usize, m: usize) -> Block<'static> {
    let w_up = Matrix::from_vec("W_up", m, d, uniform(1, m * d)).unwrap();
    let w_down = Matrix::from_vec("W_down", d, m, uniform(2, d * m)).unwrap();
    Block::new(w_up, w_down, None, Matrix::identity(d), 1.0).unwrap()
}

fn dense(c: &mut Criterion) {
    let (d, m) = (384, 1536);
    let b = block(d, m);
    let budget = Budget::unlimited();
    c.bench_function("gram 384x1536", |bench| {
        bench.iter(|| black_box(gram_lower(&b, &budget).unwrap()))
    });
    let gram = gram_lower(&b, &budget).unwrap();
    c.bench_function("pivoted cholesky 1536", |bench| {
        bench.iter(|| black_box(PivotedCholesky::factor(gram.clone(), m, &budget).unwrap()))
    });
    let up_sq: Vec<f64> = (0..m)
        .map(|i| b.w_up.row(i).iter().map(|x| x * x).sum())
        .collect();
    let down_sq: Vec<f64> = (0..m)
        .map(|i| (0..d).map(|r| b.w_down.row(r)[i].powi(2)).sum())
        .collect();
    c.bench_function("genericity 384x1536", |bench| {
        bench.iter(|| {
            let dead = dead_neurons(&up_sq, &down_sq, 1e-8);
            let mut is_dead = vec![false; m];
            dead.iter().for_each(|&i| is_dead[i] = true);
            black_box(proportional_pairs(
                &b.w_up,
                None,
                &is_dead,
                GenericityCheck::Proportional,
                1e-8,
            ))
        })
    });
}

/// The even-sum lattice in dimension 24: every +-1 vector lies in it, so
/// the depth-first search visits a tree of a few million nodes.
fn lattice(c: &mut Criterion) {
    let dim = 24;
    let mut basis = vec![vec![0i64; dim]; dim];
    basis[0][0] = 2;
    for (j, row) in basis.iter_mut().enumerate().skip(1) {
        row[j] = 1;
        row[0] = -1;
    }
    let bounds = vec![1i64; dim];
    let cancel = AtomicBool::new(false);
    let limits = Limits {
        time_limit: None,
        node_limit: Some(4_000_000),
    };
    c.bench_function("enumeration 4M nodes", |bench| {
        bench.iter(|| {
            black_box(
                enumerate_bounded(&basis, &bounds, dim as f64, 1 << 30, 0, 0, limits, &cancel)
                    .unwrap(),
            )
        })
    });
}

/// The embedding of a 7 x 60 market split (entries in 0..100, b = half
/// the row sums) with equations weighted by 2^23, as the lattice route
/// builds it: 61 rows of 68 entries.
fn reduction(c: &mut Criterion) {
    let (k, n) = (7, 60);
    let mut rng = SplitMix64::new(7);
    let a: Vec<Vec<i128>> = (0..k)
        .map(|_| (0..n).map(|_| (rng.next_u64() % 100) as i128).collect())
        .collect();
    let scale = 1i128 << 23;
    let mut basis: Vec<Vec<i128>> = (0..n)
        .map(|j| {
            let mut row = vec![0i128; n + 1 + k];
            row[j] = 2;
            for (i, a_i) in a.iter().enumerate() {
                row[n + 1 + i] = scale * a_i[j];
            }
            row
        })
        .collect();
    let mut last = vec![1i128; n];
    last.push(1024);
    last.extend(a.iter().map(|a_i| scale * (a_i.iter().sum::<i128>() / 2)));
    basis.push(last);
    let cancel = AtomicBool::new(false);
    c.bench_function("lll 61x68 market split embedding", |bench| {
        bench.iter(|| black_box(lll(&basis, 0.99, 0, false, Limits::default(), &cancel).unwrap()))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = dense, lattice, reduction
}
criterion_main!(benches);
