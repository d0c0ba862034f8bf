/work/main/benches/criterion/target/debug/deps/nano_gemm_core-c56fd5dbd8c070a8.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/nano-gemm-core-0.2.1/src/lib.rs

/work/main/benches/criterion/target/debug/deps/libnano_gemm_core-c56fd5dbd8c070a8.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/nano-gemm-core-0.2.1/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/nano-gemm-core-0.2.1/src/lib.rs:
