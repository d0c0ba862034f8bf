/work/main/benches/criterion/target/debug/deps/dyn_stack-fa4c4ca9061c28dd.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/dyn-stack-0.13.2/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/dyn-stack-0.13.2/src/alloc.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/dyn-stack-0.13.2/src/mem.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/dyn-stack-0.13.2/src/stack_req.rs

/work/main/benches/criterion/target/debug/deps/libdyn_stack-fa4c4ca9061c28dd.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/dyn-stack-0.13.2/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/dyn-stack-0.13.2/src/alloc.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/dyn-stack-0.13.2/src/mem.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/dyn-stack-0.13.2/src/stack_req.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/dyn-stack-0.13.2/src/lib.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/dyn-stack-0.13.2/src/alloc.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/dyn-stack-0.13.2/src/mem.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/dyn-stack-0.13.2/src/stack_req.rs:
