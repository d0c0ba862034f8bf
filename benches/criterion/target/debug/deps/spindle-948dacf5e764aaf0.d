/work/main/benches/criterion/target/debug/deps/spindle-948dacf5e764aaf0.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/spindle-0.2.6/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/spindle-0.2.6/src/aarc_imp/mod.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/spindle-0.2.6/src/barrier/mod.rs

/work/main/benches/criterion/target/debug/deps/libspindle-948dacf5e764aaf0.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/spindle-0.2.6/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/spindle-0.2.6/src/aarc_imp/mod.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/spindle-0.2.6/src/barrier/mod.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/spindle-0.2.6/src/lib.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/spindle-0.2.6/src/aarc_imp/mod.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/spindle-0.2.6/src/barrier/mod.rs:
