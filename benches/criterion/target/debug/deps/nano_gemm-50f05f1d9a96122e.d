/work/main/benches/criterion/target/debug/deps/nano_gemm-50f05f1d9a96122e.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/nano-gemm-0.2.2/src/lib.rs

/work/main/benches/criterion/target/debug/deps/libnano_gemm-50f05f1d9a96122e.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/nano-gemm-0.2.2/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/nano-gemm-0.2.2/src/lib.rs:
