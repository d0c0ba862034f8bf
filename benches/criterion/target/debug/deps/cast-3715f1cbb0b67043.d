/work/main/benches/criterion/target/debug/deps/cast-3715f1cbb0b67043.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/cast-0.3.0/src/lib.rs

/work/main/benches/criterion/target/debug/deps/libcast-3715f1cbb0b67043.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/cast-0.3.0/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/cast-0.3.0/src/lib.rs:
