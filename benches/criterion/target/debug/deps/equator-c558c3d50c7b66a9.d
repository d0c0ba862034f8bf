/work/main/benches/criterion/target/debug/deps/equator-c558c3d50c7b66a9.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equator-0.6.0/src/lib.rs

/work/main/benches/criterion/target/debug/deps/libequator-c558c3d50c7b66a9.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equator-0.6.0/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equator-0.6.0/src/lib.rs:
