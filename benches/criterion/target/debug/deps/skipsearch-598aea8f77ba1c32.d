/work/main/benches/criterion/target/debug/deps/skipsearch-598aea8f77ba1c32.d: /work/main/rust/lib.rs /work/main/rust/absorption/mod.rs /work/main/rust/absorption/block.rs /work/main/rust/absorption/bracket.rs /work/main/rust/absorption/certificates/mod.rs /work/main/rust/absorption/certificates/gram.rs /work/main/rust/absorption/certificates/krylov.rs /work/main/rust/absorption/decision.rs /work/main/rust/absorption/genericity.rs /work/main/rust/absorption/relaxation/mod.rs /work/main/rust/absorption/relaxation/certified.rs /work/main/rust/absorption/relaxation/conjugate_gradients.rs /work/main/rust/absorption/search/mod.rs /work/main/rust/absorption/search/branch_and_bound.rs /work/main/rust/absorption/search/null_space.rs /work/main/rust/absorption/search/windows.rs /work/main/rust/absorption/verification.rs /work/main/rust/error.rs /work/main/rust/limits.rs /work/main/rust/linalg/mod.rs /work/main/rust/linalg/cholesky.rs /work/main/rust/linalg/kernels.rs /work/main/rust/linalg/matrix.rs /work/main/rust/rigor/mod.rs /work/main/rust/rigor/float_env.rs /work/main/rust/rigor/rounding.rs /work/main/rust/subset_sum/mod.rs /work/main/rust/subset_sum/feasibility_jump.rs /work/main/rust/subset_sum/lattice.rs /work/main/rust/subset_sum/meet_in_the_middle.rs /work/main/rust/subset_sum/schroeppel_shamir.rs

/work/main/benches/criterion/target/debug/deps/libskipsearch-598aea8f77ba1c32.rmeta: /work/main/rust/lib.rs /work/main/rust/absorption/mod.rs /work/main/rust/absorption/block.rs /work/main/rust/absorption/bracket.rs /work/main/rust/absorption/certificates/mod.rs /work/main/rust/absorption/certificates/gram.rs /work/main/rust/absorption/certificates/krylov.rs /work/main/rust/absorption/decision.rs /work/main/rust/absorption/genericity.rs /work/main/rust/absorption/relaxation/mod.rs /work/main/rust/absorption/relaxation/certified.rs /work/main/rust/absorption/relaxation/conjugate_gradients.rs /work/main/rust/absorption/search/mod.rs /work/main/rust/absorption/search/branch_and_bound.rs /work/main/rust/absorption/search/null_space.rs /work/main/rust/absorption/search/windows.rs /work/main/rust/absorption/verification.rs /work/main/rust/error.rs /work/main/rust/limits.rs /work/main/rust/linalg/mod.rs /work/main/rust/linalg/cholesky.rs /work/main/rust/linalg/kernels.rs /work/main/rust/linalg/matrix.rs /work/main/rust/rigor/mod.rs /work/main/rust/rigor/float_env.rs /work/main/rust/rigor/rounding.rs /work/main/rust/subset_sum/mod.rs /work/main/rust/subset_sum/feasibility_jump.rs /work/main/rust/subset_sum/lattice.rs /work/main/rust/subset_sum/meet_in_the_middle.rs /work/main/rust/subset_sum/schroeppel_shamir.rs

/work/main/rust/lib.rs:
/work/main/rust/absorption/mod.rs:
/work/main/rust/absorption/block.rs:
/work/main/rust/absorption/bracket.rs:
/work/main/rust/absorption/certificates/mod.rs:
/work/main/rust/absorption/certificates/gram.rs:
/work/main/rust/absorption/certificates/krylov.rs:
/work/main/rust/absorption/decision.rs:
/work/main/rust/absorption/genericity.rs:
/work/main/rust/absorption/relaxation/mod.rs:
/work/main/rust/absorption/relaxation/certified.rs:
/work/main/rust/absorption/relaxation/conjugate_gradients.rs:
/work/main/rust/absorption/search/mod.rs:
/work/main/rust/absorption/search/branch_and_bound.rs:
/work/main/rust/absorption/search/null_space.rs:
/work/main/rust/absorption/search/windows.rs:
/work/main/rust/absorption/verification.rs:
/work/main/rust/error.rs:
/work/main/rust/limits.rs:
/work/main/rust/linalg/mod.rs:
/work/main/rust/linalg/cholesky.rs:
/work/main/rust/linalg/kernels.rs:
/work/main/rust/linalg/matrix.rs:
/work/main/rust/rigor/mod.rs:
/work/main/rust/rigor/float_env.rs:
/work/main/rust/rigor/rounding.rs:
/work/main/rust/subset_sum/mod.rs:
/work/main/rust/subset_sum/feasibility_jump.rs:
/work/main/rust/subset_sum/lattice.rs:
/work/main/rust/subset_sum/meet_in_the_middle.rs:
/work/main/rust/subset_sum/schroeppel_shamir.rs:
