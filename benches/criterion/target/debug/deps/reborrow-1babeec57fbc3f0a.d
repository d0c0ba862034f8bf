/work/main/benches/criterion/target/debug/deps/reborrow-1babeec57fbc3f0a.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/reborrow-0.5.5/src/lib.rs

/work/main/benches/criterion/target/debug/deps/libreborrow-1babeec57fbc3f0a.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/reborrow-0.5.5/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/reborrow-0.5.5/src/lib.rs:
