/work/main/benches/criterion/target/debug/deps/atomic_wait-e4440a2832097ad8.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/atomic-wait-1.1.0/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/atomic-wait-1.1.0/src/linux.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/atomic-wait-1.1.0/src/../README.md

/work/main/benches/criterion/target/debug/deps/libatomic_wait-e4440a2832097ad8.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/atomic-wait-1.1.0/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/atomic-wait-1.1.0/src/linux.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/atomic-wait-1.1.0/src/../README.md

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/atomic-wait-1.1.0/src/lib.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/atomic-wait-1.1.0/src/linux.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/atomic-wait-1.1.0/src/../README.md:
