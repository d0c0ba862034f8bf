/work/main/benches/criterion/target/debug/deps/crossbeam-90e6bda25be39577.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/crossbeam-0.8.5/src/lib.rs

/work/main/benches/criterion/target/debug/deps/libcrossbeam-90e6bda25be39577.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/crossbeam-0.8.5/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/crossbeam-0.8.5/src/lib.rs:
