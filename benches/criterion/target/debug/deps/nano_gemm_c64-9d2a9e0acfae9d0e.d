/work/main/benches/criterion/target/debug/deps/nano_gemm_c64-9d2a9e0acfae9d0e.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/nano-gemm-c64-0.2.1/src/lib.rs /work/main/benches/criterion/target/debug/build/nano-gemm-c64-88ea07855923b3d5/out/codegen.rs

/work/main/benches/criterion/target/debug/deps/libnano_gemm_c64-9d2a9e0acfae9d0e.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/nano-gemm-c64-0.2.1/src/lib.rs /work/main/benches/criterion/target/debug/build/nano-gemm-c64-88ea07855923b3d5/out/codegen.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/nano-gemm-c64-0.2.1/src/lib.rs:
/work/main/benches/criterion/target/debug/build/nano-gemm-c64-88ea07855923b3d5/out/codegen.rs:

# env-dep:OUT_DIR=/work/main/benches/criterion/target/debug/build/nano-gemm-c64-88ea07855923b3d5/out
