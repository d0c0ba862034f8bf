//! Which SIMD kernels the dense products run on this CPU.
//!
//! Every GEMM of the core (the Gram matrix, the Cholesky factor's updates,
//! the certificates' products) goes through the gemm crate, which picks its
//! micro-kernels at run time from the CPU's features: AVX-512F (the wheel is
//! built with the crate's `x86-v4` kernels), else AVX2 with FMA, else its
//! portable kernels; NEON on aarch64. [`gemm_kernel`] applies the same test,
//! so the name reported in the statistics is the kernel that ran.

/// The gemm crate's kernel family on this CPU: `"avx512f"`, `"avx2+fma"`,
/// `"neon"` or `"scalar"`.
pub fn gemm_kernel() -> &'static str {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return "avx512f";
        }
        if std::arch::is_x86_feature_detected!("fma") {
            return "avx2+fma";
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        if std::arch::is_aarch64_feature_detected!("neon") {
            return "neon";
        }
    }
    "scalar"
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_kernel_is_one_the_gemm_crate_has() {
        let k = super::gemm_kernel();
        assert!(
            ["avx512f", "avx2+fma", "neon", "scalar"].contains(&k),
            "{k}"
        );
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f") {
            assert_eq!(k, "avx512f");
        }
    }
}
