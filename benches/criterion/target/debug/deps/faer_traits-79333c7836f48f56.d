/work/main/benches/criterion/target/debug/deps/faer_traits-79333c7836f48f56.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/faer-traits-0.24.0/src/lib.rs

/work/main/benches/criterion/target/debug/deps/libfaer_traits-79333c7836f48f56.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/faer-traits-0.24.0/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/faer-traits-0.24.0/src/lib.rs:
