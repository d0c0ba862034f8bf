/work/main/benches/criterion/target/debug/deps/seq_macro-d08d3ca333714c46.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/seq-macro-0.3.6/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/seq-macro-0.3.6/src/parse.rs

/work/main/benches/criterion/target/debug/deps/libseq_macro-d08d3ca333714c46.so: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/seq-macro-0.3.6/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/seq-macro-0.3.6/src/parse.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/seq-macro-0.3.6/src/lib.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/seq-macro-0.3.6/src/parse.rs:
