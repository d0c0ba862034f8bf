/work/main/benches/criterion/target/debug/deps/qd-b46e89a424c4d88c.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/qd-0.8.0/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/qd-0.8.0/src/const_fma/mod.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/qd-0.8.0/src/const_imp/mod.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/qd-0.8.0/src/simd/mod.rs

/work/main/benches/criterion/target/debug/deps/libqd-b46e89a424c4d88c.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/qd-0.8.0/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/qd-0.8.0/src/const_fma/mod.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/qd-0.8.0/src/const_imp/mod.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/qd-0.8.0/src/simd/mod.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/qd-0.8.0/src/lib.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/qd-0.8.0/src/const_fma/mod.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/qd-0.8.0/src/const_imp/mod.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/qd-0.8.0/src/simd/mod.rs:
