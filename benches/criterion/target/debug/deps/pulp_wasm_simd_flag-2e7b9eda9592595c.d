/work/main/benches/criterion/target/debug/deps/pulp_wasm_simd_flag-2e7b9eda9592595c.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/pulp-wasm-simd-flag-0.1.1/src/lib.rs

/work/main/benches/criterion/target/debug/deps/libpulp_wasm_simd_flag-2e7b9eda9592595c.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/pulp-wasm-simd-flag-0.1.1/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/pulp-wasm-simd-flag-0.1.1/src/lib.rs:
