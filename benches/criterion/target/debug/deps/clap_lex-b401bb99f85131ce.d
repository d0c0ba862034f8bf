/work/main/benches/criterion/target/debug/deps/clap_lex-b401bb99f85131ce.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/clap_lex-1.1.2/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/clap_lex-1.1.2/src/ext.rs

/work/main/benches/criterion/target/debug/deps/libclap_lex-b401bb99f85131ce.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/clap_lex-1.1.2/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/clap_lex-1.1.2/src/ext.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/clap_lex-1.1.2/src/lib.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/clap_lex-1.1.2/src/ext.rs:
