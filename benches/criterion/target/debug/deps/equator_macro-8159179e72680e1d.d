/work/main/benches/criterion/target/debug/deps/equator_macro-8159179e72680e1d.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equator-macro-0.6.0/src/lib.rs

/work/main/benches/criterion/target/debug/deps/libequator_macro-8159179e72680e1d.so: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equator-macro-0.6.0/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equator-macro-0.6.0/src/lib.rs:
