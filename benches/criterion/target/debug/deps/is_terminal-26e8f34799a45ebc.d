/work/main/benches/criterion/target/debug/deps/is_terminal-26e8f34799a45ebc.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/is-terminal-0.4.17/src/lib.rs

/work/main/benches/criterion/target/debug/deps/libis_terminal-26e8f34799a45ebc.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/is-terminal-0.4.17/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/is-terminal-0.4.17/src/lib.rs:
