/work/main/benches/criterion/target/debug/deps/generativity-55ad416ed9a1e839.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/generativity-1.2.1/src/lib.rs

/work/main/benches/criterion/target/debug/deps/libgenerativity-55ad416ed9a1e839.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/generativity-1.2.1/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/generativity-1.2.1/src/lib.rs:
