/work/main/benches/criterion/target/debug/deps/nano_gemm_f64-49cf88ffb07a5666.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/nano-gemm-f64-0.2.1/src/lib.rs /work/main/benches/criterion/target/debug/build/nano-gemm-f64-0657e5d34530bddb/out/codegen.rs

/work/main/benches/criterion/target/debug/deps/libnano_gemm_f64-49cf88ffb07a5666.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/nano-gemm-f64-0.2.1/src/lib.rs /work/main/benches/criterion/target/debug/build/nano-gemm-f64-0657e5d34530bddb/out/codegen.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/nano-gemm-f64-0.2.1/src/lib.rs:
/work/main/benches/criterion/target/debug/build/nano-gemm-f64-0657e5d34530bddb/out/codegen.rs:

# env-dep:OUT_DIR=/work/main/benches/criterion/target/debug/build/nano-gemm-f64-0657e5d34530bddb/out
