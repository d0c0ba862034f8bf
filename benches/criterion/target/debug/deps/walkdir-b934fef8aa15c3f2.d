/work/main/benches/criterion/target/debug/deps/walkdir-b934fef8aa15c3f2.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/walkdir-2.5.1/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/walkdir-2.5.1/src/dent.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/walkdir-2.5.1/src/error.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/walkdir-2.5.1/src/util.rs

/work/main/benches/criterion/target/debug/deps/libwalkdir-b934fef8aa15c3f2.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/walkdir-2.5.1/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/walkdir-2.5.1/src/dent.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/walkdir-2.5.1/src/error.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/walkdir-2.5.1/src/util.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/walkdir-2.5.1/src/lib.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/walkdir-2.5.1/src/dent.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/walkdir-2.5.1/src/error.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/walkdir-2.5.1/src/util.rs:
