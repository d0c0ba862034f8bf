/work/main/benches/criterion/target/debug/deps/ciborium_io-8846c44c366137b9.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/ciborium-io-0.2.2/src/lib.rs

/work/main/benches/criterion/target/debug/deps/libciborium_io-8846c44c366137b9.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/ciborium-io-0.2.2/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/ciborium-io-0.2.2/src/lib.rs:
