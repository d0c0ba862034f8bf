/work/main/benches/criterion/target/debug/deps/nano_gemm_f32-c60b495fe9873d1c.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/nano-gemm-f32-0.2.1/src/lib.rs /work/main/benches/criterion/target/debug/build/nano-gemm-f32-91699a8e9a435b87/out/codegen.rs

/work/main/benches/criterion/target/debug/deps/libnano_gemm_f32-c60b495fe9873d1c.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/nano-gemm-f32-0.2.1/src/lib.rs /work/main/benches/criterion/target/debug/build/nano-gemm-f32-91699a8e9a435b87/out/codegen.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/nano-gemm-f32-0.2.1/src/lib.rs:
/work/main/benches/criterion/target/debug/build/nano-gemm-f32-91699a8e9a435b87/out/codegen.rs:

# env-dep:OUT_DIR=/work/main/benches/criterion/target/debug/build/nano-gemm-f32-91699a8e9a435b87/out
