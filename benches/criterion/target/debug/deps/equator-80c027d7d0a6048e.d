/work/main/benches/criterion/target/debug/deps/equator-80c027d7d0a6048e.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equator-0.2.2/src/lib.rs

/work/main/benches/criterion/target/debug/deps/libequator-80c027d7d0a6048e.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equator-0.2.2/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equator-0.2.2/src/lib.rs:
