//! The floating-point environment every rigorous bound here assumes: IEEE
//! 754 round-to-nearest-even with subnormal numbers kept.
//!
//! The a-priori rounding bounds (Higham, *Accuracy and Stability of
//! Numerical Algorithms*, 2002, ch. 3) and the exact expansions (Shewchuk
//! 1997) hold only in that environment. A process can leave it without
//! asking: a shared library built with `-ffast-math` sets flush-to-zero
//! (FTZ) and denormals-are-zero (DAZ) in the thread that loads it, and
//! other libraries change the rounding mode. Under FTZ/DAZ a subnormal skip
//! reads as zero and a certificate can "prove" a distance for a block that
//! has an exact flip set.
//!
//! [`FloatEnv::enter`] puts the calling thread into the standard
//! environment and gives the old one back when dropped. On x86_64 it writes
//! MXCSR (rounding control, FTZ, DAZ; all exceptions masked), on aarch64
//! FPCR (rounding mode, FZ, FIZ, AH; no traps). Everywhere it then checks
//! the result with arithmetic whose outcome tells the environment apart
//! (subnormal products, ties and quarter-ulp sums), so a platform whose
//! environment it cannot set is refused with an error instead of answered.

use crate::error::Error;
use std::hint::black_box;

/// The calling thread's floating-point control state, restored on drop.
#[must_use = "the standard environment holds only while the guard lives"]
pub struct FloatEnv {
    saved: Option<u64>,
}

impl FloatEnv {
    /// Switch the calling thread to round-to-nearest with subnormals kept,
    /// and check that it took.
    pub fn enter() -> Result<FloatEnv, Error> {
        let guard = FloatEnv {
            saved: arch::read().inspect(|&state| arch::write(arch::standard(state))),
        };
        match check() {
            Ok(()) => Ok(guard),
            // The guard drops here and puts the caller's state back.
            Err(why) => Err(Error::FloatEnvironment(why)),
        }
    }
}

impl FloatEnv {
    /// Keep the standard environment beyond this guard and hand back the
    /// state to restore later with [`restore`] (for a caller whose scope
    /// is not a Rust one: the Python layer's context manager).
    pub fn into_saved(self) -> Option<u64> {
        let saved = self.saved;
        std::mem::forget(self);
        saved
    }
}

/// Put back a state saved by [`FloatEnv::into_saved`] on the same thread.
pub fn restore(saved: Option<u64>) {
    if let Some(state) = saved {
        arch::write(state);
    }
}

impl Drop for FloatEnv {
    fn drop(&mut self) {
        if let Some(state) = self.saved {
            arch::write(state);
        }
    }
}

/// Put the calling thread into the standard environment for good (the
/// core's own worker threads, which run nothing else).
pub fn set_standard() {
    if let Some(state) = arch::read() {
        arch::write(arch::standard(state));
    }
}

/// `Ok` when the calling thread rounds to nearest and keeps subnormals;
/// otherwise what differs. Every operand goes through `black_box`, so the
/// compiler cannot fold the arithmetic at build time.
pub fn check() -> Result<(), String> {
    let tiny = f64::from_bits(1); // the smallest subnormal, 2^-1074
    let mut wrong = Vec::new();
    // DAZ reads a subnormal input as zero; FTZ flushes a subnormal result.
    if black_box(tiny) * black_box(2f64.powi(60)) != 2f64.powi(-1014) {
        wrong.push("subnormal inputs are read as zero (denormals-are-zero)");
    }
    // (x86 flushes only an inexact tiny result, so divide by three.)
    if black_box(f64::MIN_POSITIVE) / black_box(3.0) == 0.0 {
        wrong.push("subnormal results are flushed to zero (flush-to-zero)");
    }
    // Three-quarters of an ulp rounds away from 1, a quarter towards it,
    // in either sign, only under round-to-nearest.
    let ulp = f64::EPSILON;
    let nearest = black_box(1.0) + black_box(0.75 * ulp) == 1.0 + ulp
        && black_box(1.0) + black_box(0.25 * ulp) == 1.0
        && black_box(-1.0) - black_box(0.75 * ulp) == -1.0 - ulp
        && black_box(-1.0) - black_box(0.25 * ulp) == -1.0;
    // A tie goes to the even neighbour.
    let even = black_box(1.0) + black_box(0.5 * ulp) == 1.0
        && black_box(1.0 + ulp) + black_box(0.5 * ulp) == 1.0 + 2.0 * ulp;
    if !(nearest && even) {
        wrong.push("the rounding mode is not round-to-nearest-even");
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("; "))
    }
}

#[cfg(target_arch = "x86_64")]
mod arch {
    /// MXCSR: FTZ (bit 15), rounding control (bits 13-14), the six exception
    /// masks (bits 7-12), DAZ (bit 6); the low six bits are sticky flags.
    const FTZ: u32 = 1 << 15;
    const ROUNDING: u32 = 0b11 << 13;
    const MASKS: u32 = 0b11_1111 << 7;
    const DAZ: u32 = 1 << 6;

    pub fn read() -> Option<u64> {
        let mut csr: u32 = 0;
        // SAFETY: stmxcsr stores the 32-bit MXCSR to the valid location given.
        unsafe {
            std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack, preserves_flags));
        }
        Some(u64::from(csr))
    }

    pub fn standard(state: u64) -> u64 {
        let csr = state as u32;
        u64::from((csr & !(FTZ | ROUNDING | DAZ)) | MASKS)
    }

    pub fn write(state: u64) {
        let csr = state as u32;
        // SAFETY: ldmxcsr loads a value read by stmxcsr, or one with only
        // the documented control bits changed, so no reserved bit is set.
        unsafe {
            std::arch::asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack, readonly, preserves_flags));
        }
    }
}

#[cfg(target_arch = "aarch64")]
mod arch {
    /// FPCR: FZ (bit 24), rounding mode (bits 22-23), the trap enables
    /// (bits 8-12 and 15), AH (bit 1) and FIZ (bit 0), which are RES0 on
    /// cores without FEAT_AFP (writing 0 there is allowed).
    const FZ: u64 = 1 << 24;
    const RMODE: u64 = 0b11 << 22;
    const TRAPS: u64 = (0b1_1111 << 8) | (1 << 15);
    const AH_FIZ: u64 = 0b11;

    pub fn read() -> Option<u64> {
        let fpcr: u64;
        // SAFETY: reading FPCR has no side effects.
        unsafe {
            std::arch::asm!("mrs {}, fpcr", out(reg) fpcr, options(nomem, nostack, preserves_flags));
        }
        Some(fpcr)
    }

    pub fn standard(state: u64) -> u64 {
        state & !(FZ | RMODE | TRAPS | AH_FIZ)
    }

    pub fn write(state: u64) {
        // SAFETY: writes a value read from FPCR with control bits cleared.
        unsafe {
            std::arch::asm!("msr fpcr, {}", in(reg) state, options(nomem, nostack, preserves_flags));
        }
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod arch {
    // No control register is written here: `check` alone decides whether
    // the environment is the standard one.
    pub fn read() -> Option<u64> {
        None
    }

    pub fn standard(state: u64) -> u64 {
        state
    }

    pub fn write(_state: u64) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_environment_is_standard() {
        assert_eq!(check(), Ok(()));
        let _env = FloatEnv::enter().expect("the standard environment");
        assert_eq!(check(), Ok(()));
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn a_flushing_rounding_up_thread_is_put_right_and_restored() {
        // On a thread of its own, so the test harness's threads are untouched.
        std::thread::spawn(|| {
            let clean = arch::read().unwrap();
            #[cfg(target_arch = "x86_64")]
            let dirty = clean | (1 << 15) | (1 << 6) | (0b10 << 13);
            #[cfg(target_arch = "aarch64")]
            let dirty = clean | (1 << 24) | (0b01 << 22);
            arch::write(dirty);
            let err = check().unwrap_err();
            assert!(err.contains("flush-to-zero"), "{err}");
            assert!(err.contains("round-to-nearest"), "{err}");
            {
                let _env = FloatEnv::enter().expect("the environment can be set");
                assert_eq!(check(), Ok(()));
                assert_eq!(black_box(f64::from_bits(1)) * 2.0, f64::from_bits(2));
            }
            // The sticky exception flags (MXCSR's low six bits) have moved;
            // the control bits must be the caller's again.
            let flags = if cfg!(target_arch = "x86_64") {
                0x3f
            } else {
                0
            };
            assert_eq!(
                arch::read().unwrap() & !flags,
                dirty & !flags,
                "the caller's state is restored"
            );
            arch::write(clean);
        })
        .join()
        .unwrap();
    }
}
