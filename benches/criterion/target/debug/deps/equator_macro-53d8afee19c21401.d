/work/main/benches/criterion/target/debug/deps/equator_macro-53d8afee19c21401.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equator-macro-0.2.1/src/lib.rs

/work/main/benches/criterion/target/debug/deps/libequator_macro-53d8afee19c21401.so: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equator-macro-0.2.1/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equator-macro-0.2.1/src/lib.rs:
