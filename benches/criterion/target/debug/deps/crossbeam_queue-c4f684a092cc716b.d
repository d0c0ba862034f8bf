/work/main/benches/criterion/target/debug/deps/crossbeam_queue-c4f684a092cc716b.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/crossbeam-queue-0.3.14/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/crossbeam-queue-0.3.14/src/array_queue.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/crossbeam-queue-0.3.14/src/seg_queue.rs

/work/main/benches/criterion/target/debug/deps/libcrossbeam_queue-c4f684a092cc716b.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/crossbeam-queue-0.3.14/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/crossbeam-queue-0.3.14/src/array_queue.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/crossbeam-queue-0.3.14/src/seg_queue.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/crossbeam-queue-0.3.14/src/lib.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/crossbeam-queue-0.3.14/src/array_queue.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/crossbeam-queue-0.3.14/src/seg_queue.rs:
