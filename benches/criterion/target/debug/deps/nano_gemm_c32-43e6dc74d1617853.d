/work/main/benches/criterion/target/debug/deps/nano_gemm_c32-43e6dc74d1617853.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/nano-gemm-c32-0.2.1/src/lib.rs /work/main/benches/criterion/target/debug/build/nano-gemm-c32-8a961a30dcf2239c/out/codegen.rs

/work/main/benches/criterion/target/debug/deps/libnano_gemm_c32-43e6dc74d1617853.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/nano-gemm-c32-0.2.1/src/lib.rs /work/main/benches/criterion/target/debug/build/nano-gemm-c32-8a961a30dcf2239c/out/codegen.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/nano-gemm-c32-0.2.1/src/lib.rs:
/work/main/benches/criterion/target/debug/build/nano-gemm-c32-8a961a30dcf2239c/out/codegen.rs:

# env-dep:OUT_DIR=/work/main/benches/criterion/target/debug/build/nano-gemm-c32-8a961a30dcf2239c/out
