/work/main/benches/criterion/target/debug/deps/clap-5ed5a55f7f2559b5.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/clap-4.6.9/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/clap-4.6.9/src/../examples/demo.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/clap-4.6.9/src/../examples/demo.md

/work/main/benches/criterion/target/debug/deps/libclap-5ed5a55f7f2559b5.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/clap-4.6.9/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/clap-4.6.9/src/../examples/demo.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/clap-4.6.9/src/../examples/demo.md

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/clap-4.6.9/src/lib.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/clap-4.6.9/src/../examples/demo.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/clap-4.6.9/src/../examples/demo.md:
