/work/main/benches/criterion/target/debug/deps/nano_gemm_codegen-a09723792d7595b5.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/nano-gemm-codegen-0.2.1/src/lib.rs

/work/main/benches/criterion/target/debug/deps/libnano_gemm_codegen-a09723792d7595b5.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/nano-gemm-codegen-0.2.1/src/lib.rs

/work/main/benches/criterion/target/debug/deps/libnano_gemm_codegen-a09723792d7595b5.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/nano-gemm-codegen-0.2.1/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/nano-gemm-codegen-0.2.1/src/lib.rs:
