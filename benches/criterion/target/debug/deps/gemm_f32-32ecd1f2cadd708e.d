/work/main/benches/criterion/target/debug/deps/gemm_f32-32ecd1f2cadd708e.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-f32-0.19.0/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-f32-0.19.0/src/gemm.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-f32-0.19.0/src/microkernel.rs

/work/main/benches/criterion/target/debug/deps/libgemm_f32-32ecd1f2cadd708e.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-f32-0.19.0/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-f32-0.19.0/src/gemm.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-f32-0.19.0/src/microkernel.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-f32-0.19.0/src/lib.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-f32-0.19.0/src/gemm.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-f32-0.19.0/src/microkernel.rs:
