/work/main/benches/criterion/target/debug/deps/equator_macro-85791cb491ae5a4f.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equator-macro-0.4.2/src/lib.rs

/work/main/benches/criterion/target/debug/deps/libequator_macro-85791cb491ae5a4f.so: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equator-macro-0.4.2/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equator-macro-0.4.2/src/lib.rs:
