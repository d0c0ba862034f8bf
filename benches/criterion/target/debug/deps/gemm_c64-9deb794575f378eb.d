/work/main/benches/criterion/target/debug/deps/gemm_c64-9deb794575f378eb.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-c64-0.19.0/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-c64-0.19.0/src/gemm.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-c64-0.19.0/src/microkernel.rs

/work/main/benches/criterion/target/debug/deps/libgemm_c64-9deb794575f378eb.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-c64-0.19.0/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-c64-0.19.0/src/gemm.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-c64-0.19.0/src/microkernel.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-c64-0.19.0/src/lib.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-c64-0.19.0/src/gemm.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-c64-0.19.0/src/microkernel.rs:
