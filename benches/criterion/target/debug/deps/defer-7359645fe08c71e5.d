/work/main/benches/criterion/target/debug/deps/defer-7359645fe08c71e5.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/defer-0.2.1/src/lib.rs

/work/main/benches/criterion/target/debug/deps/libdefer-7359645fe08c71e5.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/defer-0.2.1/src/lib.rs

/work/main/benches/criterion/target/debug/deps/libdefer-7359645fe08c71e5.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/defer-0.2.1/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/defer-0.2.1/src/lib.rs:
