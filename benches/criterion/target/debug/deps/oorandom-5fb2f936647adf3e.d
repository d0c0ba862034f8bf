/work/main/benches/criterion/target/debug/deps/oorandom-5fb2f936647adf3e.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/oorandom-11.1.5/src/lib.rs

/work/main/benches/criterion/target/debug/deps/liboorandom-5fb2f936647adf3e.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/oorandom-11.1.5/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/oorandom-11.1.5/src/lib.rs:
