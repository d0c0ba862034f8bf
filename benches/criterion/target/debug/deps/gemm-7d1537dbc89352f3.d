/work/main/benches/criterion/target/debug/deps/gemm-7d1537dbc89352f3.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-0.19.0/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-0.19.0/src/gemm.rs

/work/main/benches/criterion/target/debug/deps/libgemm-7d1537dbc89352f3.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-0.19.0/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-0.19.0/src/gemm.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-0.19.0/src/lib.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/gemm-0.19.0/src/gemm.rs:
