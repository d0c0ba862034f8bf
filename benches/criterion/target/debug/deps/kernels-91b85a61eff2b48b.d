/work/main/benches/criterion/target/debug/deps/kernels-91b85a61eff2b48b.d: benches/kernels.rs

/work/main/benches/criterion/target/debug/deps/libkernels-91b85a61eff2b48b.rmeta: benches/kernels.rs

benches/kernels.rs:
