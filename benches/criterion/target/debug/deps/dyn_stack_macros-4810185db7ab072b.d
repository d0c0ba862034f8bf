/work/main/benches/criterion/target/debug/deps/dyn_stack_macros-4810185db7ab072b.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/dyn-stack-macros-0.1.3/src/lib.rs

/work/main/benches/criterion/target/debug/deps/libdyn_stack_macros-4810185db7ab072b.so: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/dyn-stack-macros-0.1.3/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/dyn-stack-macros-0.1.3/src/lib.rs:
