/work/main/benches/criterion/target/debug/deps/interpol-e6d9dbf93f7284ec.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/interpol-0.2.1/src/lib.rs

/work/main/benches/criterion/target/debug/deps/libinterpol-e6d9dbf93f7284ec.so: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/interpol-0.2.1/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/interpol-0.2.1/src/lib.rs:
