/work/main/benches/criterion/target/debug/deps/gemm_c32-5c19ad24ffaa024f.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-c32-0.19.0/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-c32-0.19.0/src/gemm.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-c32-0.19.0/src/microkernel.rs

/work/main/benches/criterion/target/debug/deps/libgemm_c32-5c19ad24ffaa024f.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-c32-0.19.0/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-c32-0.19.0/src/gemm.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-c32-0.19.0/src/microkernel.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-c32-0.19.0/src/lib.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-c32-0.19.0/src/gemm.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-c32-0.19.0/src/microkernel.rs:
