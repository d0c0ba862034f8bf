/work/main/benches/criterion/target/debug/deps/gemm_f64-2815265593cb66b2.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-f64-0.19.0/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-f64-0.19.0/src/gemm.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-f64-0.19.0/src/microkernel.rs

/work/main/benches/criterion/target/debug/deps/libgemm_f64-2815265593cb66b2.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-f64-0.19.0/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-f64-0.19.0/src/gemm.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-f64-0.19.0/src/microkernel.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-f64-0.19.0/src/lib.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-f64-0.19.0/src/gemm.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-f64-0.19.0/src/microkernel.rs:
