/work/main/benches/criterion/target/debug/deps/private_gemm_x86-4d7327faeebc3f7a.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/private-gemm-x86-0.1.22/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/private-gemm-x86-0.1.22/src/cache.rs /work/main/benches/criterion/target/debug/build/private-gemm-x86-ff515d9cef3db18d/out/asm.rs /work/main/benches/criterion/target/debug/build/private-gemm-x86-ff515d9cef3db18d/out/asm.s

/work/main/benches/criterion/target/debug/deps/libprivate_gemm_x86-4d7327faeebc3f7a.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/private-gemm-x86-0.1.22/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/private-gemm-x86-0.1.22/src/cache.rs /work/main/benches/criterion/target/debug/build/private-gemm-x86-ff515d9cef3db18d/out/asm.rs /work/main/benches/criterion/target/debug/build/private-gemm-x86-ff515d9cef3db18d/out/asm.s

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/private-gemm-x86-0.1.22/src/lib.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/private-gemm-x86-0.1.22/src/cache.rs:
/work/main/benches/criterion/target/debug/build/private-gemm-x86-ff515d9cef3db18d/out/asm.rs:
/work/main/benches/criterion/target/debug/build/private-gemm-x86-ff515d9cef3db18d/out/asm.s:

# env-dep:OUT_DIR=/work/main/benches/criterion/target/debug/build/private-gemm-x86-ff515d9cef3db18d/out
