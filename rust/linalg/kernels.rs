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

/// Lanes of [`AxpyL1::run`]: its sums run in this many interleaved partial
/// sums on every CPU, so each kernel rounds alike.
pub const LANES: usize = 8;

/// The kernel behind [`AxpyL1::run`] on this CPU, chosen once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AxpyL1 {
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    Portable,
}

impl AxpyL1 {
    /// The widest kernel this CPU runs.
    pub fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return AxpyL1::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                return AxpyL1::Avx2;
            }
        }
        AxpyL1::Portable
    }

    /// `out = above + alpha s`, returning `sum_i w_i |out_i|`. All four
    /// slices have one length, a multiple of [`LANES`] (callers pad with
    /// zeros); the products are not fused and the sum runs over the same
    /// lanes in the same order whatever the kernel, so the result has the
    /// same bits on every CPU.
    #[inline]
    pub fn run(self, out: &mut [f64], above: &[f64], s: &[f64], w: &[f64], alpha: f64) -> f64 {
        assert!(
            out.len().is_multiple_of(LANES)
                && above.len() == out.len()
                && s.len() == out.len()
                && w.len() == out.len()
        );
        match self {
            // SAFETY: `detect` chose these only where the CPU has the feature.
            #[cfg(target_arch = "x86_64")]
            AxpyL1::Avx512 => unsafe { axpy_l1_avx512(out, above, s, w, alpha) },
            #[cfg(target_arch = "x86_64")]
            AxpyL1::Avx2 => unsafe { axpy_l1_avx2(out, above, s, w, alpha) },
            AxpyL1::Portable => axpy_l1_lanes(out, above, s, w, alpha),
        }
    }
}

#[inline(always)]
fn axpy_l1_lanes(out: &mut [f64], above: &[f64], s: &[f64], w: &[f64], alpha: f64) -> f64 {
    let mut acc = [0.0f64; LANES];
    for (((o, a), s), w) in out
        .chunks_exact_mut(LANES)
        .zip(above.chunks_exact(LANES))
        .zip(s.chunks_exact(LANES))
        .zip(w.chunks_exact(LANES))
    {
        for l in 0..LANES {
            let v = a[l] + alpha * s[l];
            o[l] = v;
            acc[l] += w[l] * v.abs();
        }
    }
    lane_sum(acc)
}

/// The eight lanes summed in the order every kernel sums them: halves,
/// then quarters, then the last pair (a vector register's natural
/// reduction).
#[inline(always)]
fn lane_sum(acc: [f64; LANES]) -> f64 {
    ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))
}

/// [`AxpyL1::run`]'s arithmetic for one instruction set, written to be
/// inlined into code compiled for that set (a caller with the matching
/// `#[target_feature]`), where the intrinsics inline too.
pub trait AxpyL1Kernel {
    /// As [`AxpyL1::run`], without its checks.
    ///
    /// # Safety
    /// The CPU must have the kernel's instruction set, and the slices must
    /// be as [`AxpyL1::run`] checks.
    unsafe fn axpy_l1(out: &mut [f64], above: &[f64], s: &[f64], w: &[f64], alpha: f64) -> f64;
}

/// The AVX-512F kernel.
#[cfg(target_arch = "x86_64")]
pub struct Avx512;
/// The AVX2 kernel.
#[cfg(target_arch = "x86_64")]
pub struct Avx2;
/// The kernel for any CPU.
pub struct Portable;

impl AxpyL1Kernel for Portable {
    #[inline(always)]
    unsafe fn axpy_l1(out: &mut [f64], above: &[f64], s: &[f64], w: &[f64], alpha: f64) -> f64 {
        axpy_l1_lanes(out, above, s, w, alpha)
    }
}

#[cfg(target_arch = "x86_64")]
impl AxpyL1Kernel for Avx512 {
    #[inline(always)]
    unsafe fn axpy_l1(out: &mut [f64], above: &[f64], s: &[f64], w: &[f64], alpha: f64) -> f64 {
        use std::arch::x86_64::*;
        let a = _mm512_set1_pd(alpha);
        let mut acc = _mm512_setzero_pd();
        for k in (0..out.len()).step_by(LANES) {
            let v = _mm512_add_pd(
                _mm512_loadu_pd(above.as_ptr().add(k)),
                _mm512_mul_pd(a, _mm512_loadu_pd(s.as_ptr().add(k))),
            );
            _mm512_storeu_pd(out.as_mut_ptr().add(k), v);
            let wv = _mm512_mul_pd(_mm512_loadu_pd(w.as_ptr().add(k)), _mm512_abs_pd(v));
            acc = _mm512_add_pd(acc, wv);
        }
        // lane_sum's order: halves, quarters, the last pair.
        let half = _mm256_add_pd(
            _mm512_castpd512_pd256(acc),
            _mm512_extractf64x4_pd::<1>(acc),
        );
        let quarter = _mm_add_pd(
            _mm256_castpd256_pd128(half),
            _mm256_extractf128_pd::<1>(half),
        );
        _mm_cvtsd_f64(_mm_add_sd(quarter, _mm_unpackhi_pd(quarter, quarter)))
    }
}

#[cfg(target_arch = "x86_64")]
impl AxpyL1Kernel for Avx2 {
    #[inline(always)]
    unsafe fn axpy_l1(out: &mut [f64], above: &[f64], s: &[f64], w: &[f64], alpha: f64) -> f64 {
        use std::arch::x86_64::*;
        let a = _mm256_set1_pd(alpha);
        let mask = _mm256_castsi256_pd(_mm256_set1_epi64x(i64::MAX));
        let (mut lo, mut hi) = (_mm256_setzero_pd(), _mm256_setzero_pd());
        for k in (0..out.len()).step_by(LANES) {
            for (half, acc) in [(0, &mut lo), (4, &mut hi)] {
                let i = k + half;
                let v = _mm256_add_pd(
                    _mm256_loadu_pd(above.as_ptr().add(i)),
                    _mm256_mul_pd(a, _mm256_loadu_pd(s.as_ptr().add(i))),
                );
                _mm256_storeu_pd(out.as_mut_ptr().add(i), v);
                let wv = _mm256_mul_pd(_mm256_loadu_pd(w.as_ptr().add(i)), _mm256_and_pd(v, mask));
                *acc = _mm256_add_pd(*acc, wv);
            }
        }
        // lane_sum's order: halves, quarters, the last pair.
        let half = _mm256_add_pd(lo, hi);
        let quarter = _mm_add_pd(
            _mm256_castpd256_pd128(half),
            _mm256_extractf128_pd::<1>(half),
        );
        _mm_cvtsd_f64(_mm_add_sd(quarter, _mm_unpackhi_pd(quarter, quarter)))
    }
}

/// # Safety
/// The CPU must have AVX-512F; the slices are as [`AxpyL1::run`] checks.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn axpy_l1_avx512(out: &mut [f64], above: &[f64], s: &[f64], w: &[f64], alpha: f64) -> f64 {
    Avx512::axpy_l1(out, above, s, w, alpha)
}

/// # Safety
/// The CPU must have AVX2; the slices are as [`AxpyL1::run`] checks.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn axpy_l1_avx2(out: &mut [f64], above: &[f64], s: &[f64], w: &[f64], alpha: f64) -> f64 {
    Avx2::axpy_l1(out, above, s, w, alpha)
}

#[cfg(test)]
mod tests {
    use super::{AxpyL1, LANES};

    #[test]
    fn every_axpy_l1_kernel_gives_the_same_bits() {
        let n = 3 * LANES;
        let above: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin() * 1e3).collect();
        let s: Vec<f64> = (0..n).map(|i| (i as f64 * 1.1).cos() / 3.0).collect();
        let w: Vec<f64> = (0..n).map(|i| 1.0 + (i % 3) as f64).collect();
        let mut want = vec![0.0; n];
        let total = AxpyL1::Portable.run(&mut want, &above, &s, &w, -0.7);
        let exact: f64 = (0..n).map(|i| w[i] * (above[i] - 0.7 * s[i]).abs()).sum();
        assert!((total - exact).abs() <= 1e-9 * exact);
        let mut kernels = vec![AxpyL1::detect()];
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            kernels.push(AxpyL1::Avx2);
        }
        for kernel in kernels {
            let mut got = vec![0.0; n];
            let sum = kernel.run(&mut got, &above, &s, &w, -0.7);
            assert_eq!(sum.to_bits(), total.to_bits(), "{kernel:?}");
            assert_eq!(got, want, "{kernel:?}");
        }
    }

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
