//! Double-double numbers: an unevaluated sum `hi + lo` of two `f64` with
//! `|lo| <= ulp(hi) / 2`, about 106 bits of significand (Dekker 1971).
//! The core's LLL falls back to them when `f64` cannot resolve its
//! Gram-Schmidt data (rows more than about `2^50` times longer than their
//! Gram-Schmidt vectors).
//!
//! The operations follow Joldes, Muller & Popescu ("Tight and rigorous
//! error bounds for basic building blocks of double-word arithmetic", ACM
//! TOMS 44, 2017), whose bounds for them are small multiples of `u^2`
//! (`u = 2^-53`); [`Real::UNIT`] states `2^-100`. Nothing rests on that
//! figure: the LLL uses these numbers only to choose its integer row
//! operations, which are exact, and its output is certified in `f64`
//! afterwards (`subset_sum::reduction::certified`).

use std::cmp::Ordering;
use std::ops::{Add, Div, Mul, Neg, Sub, SubAssign};

use crate::rigor::rounding::{two_prod, two_sum};

/// The arithmetic the LLL's Gram-Schmidt data need, for `f64` and [`Dd`].
pub trait Real:
    Copy
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + SubAssign
{
    /// A bound on the relative error of one operation.
    const UNIT: f64;
    /// Zero.
    const ZERO: Self;
    /// The nearest value to `v`.
    fn from_i128(v: i128) -> Self;
    /// `v` exactly.
    fn from_f64(v: f64) -> Self;
    /// The nearest `f64`.
    fn to_f64(self) -> f64;
    /// The square root (of a value `>= 0`).
    fn sqrt(self) -> Self;
    /// The absolute value.
    fn abs(self) -> Self {
        if self < Self::ZERO {
            -self
        } else {
            self
        }
    }
    /// The nearest integer, when it is finite and inside `i128`.
    fn round_to_i128(self) -> Option<i128>;
    /// Whether the value is finite.
    fn is_finite(self) -> bool;
}

/// `i128::MAX as f64`, that is `2^127`: a rounded value at or above it
/// does not fit.
const I128_LIMIT: f64 = 170_141_183_460_469_231_731_687_303_715_884_105_728.0;

impl Real for f64 {
    const UNIT: f64 = f64::EPSILON / 2.0;
    const ZERO: Self = 0.0;

    fn from_i128(v: i128) -> Self {
        v as f64
    }
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    fn abs(self) -> Self {
        f64::abs(self)
    }
    fn round_to_i128(self) -> Option<i128> {
        let q = self.round();
        (q.is_finite() && q.abs() < I128_LIMIT).then_some(q as i128)
    }
    fn is_finite(self) -> bool {
        f64::is_finite(self)
    }
}

/// A double-double number `hi + lo`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Dd {
    hi: f64,
    lo: f64,
}

/// `a + b = s + e` exactly, when `|a| >= |b|` or `a = 0` (Dekker's
/// Fast2Sum).
#[inline]
fn fast_two_sum(a: f64, b: f64) -> Dd {
    let s = a + b;
    Dd {
        hi: s,
        lo: b - (s - a),
    }
}

impl Dd {
    /// The value `hi + lo`, renormalized.
    pub fn new(hi: f64, lo: f64) -> Self {
        let (s, e) = two_sum(hi, lo);
        Dd { hi: s, lo: e }
    }

    /// Product with an `f64`.
    fn times_f64(self, y: f64) -> Dd {
        let (ch, cl1) = two_prod(self.hi, y);
        let cl3 = self.lo.mul_add(y, cl1);
        fast_two_sum(ch, cl3)
    }
}

impl PartialEq for Dd {
    fn eq(&self, other: &Self) -> bool {
        self.hi == other.hi && self.lo == other.lo
    }
}

impl PartialOrd for Dd {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        // Normalized, the high words decide unless they are equal.
        match self.hi.partial_cmp(&other.hi)? {
            Ordering::Equal => self.lo.partial_cmp(&other.lo),
            order => Some(order),
        }
    }
}

impl Add for Dd {
    type Output = Dd;
    /// The accurate sum: both words added with TwoSum, then renormalized.
    fn add(self, y: Dd) -> Dd {
        let (sh, sl) = two_sum(self.hi, y.hi);
        let (th, tl) = two_sum(self.lo, y.lo);
        let v = fast_two_sum(sh, sl + th);
        fast_two_sum(v.hi, tl + v.lo)
    }
}

impl Neg for Dd {
    type Output = Dd;
    fn neg(self) -> Dd {
        Dd {
            hi: -self.hi,
            lo: -self.lo,
        }
    }
}

impl Sub for Dd {
    type Output = Dd;
    fn sub(self, y: Dd) -> Dd {
        self + (-y)
    }
}

impl SubAssign for Dd {
    fn sub_assign(&mut self, y: Dd) {
        *self = *self - y;
    }
}

impl Mul for Dd {
    type Output = Dd;
    /// The product of the high words exactly, the cross terms by FMA.
    fn mul(self, y: Dd) -> Dd {
        let (ch, cl1) = two_prod(self.hi, y.hi);
        let tl0 = self.lo * y.lo;
        let tl1 = self.hi.mul_add(y.lo, tl0);
        let cl2 = self.lo.mul_add(y.hi, tl1);
        fast_two_sum(ch, cl1 + cl2)
    }
}

impl Div for Dd {
    type Output = Dd;
    /// A quotient of the high words, corrected by one remainder.
    fn div(self, y: Dd) -> Dd {
        let th = self.hi / y.hi;
        let r = y.times_f64(th);
        let ph = self.hi - r.hi;
        let dl = self.lo - r.lo;
        let d = ph + dl;
        let tl = d / y.hi;
        fast_two_sum(th, tl)
    }
}

impl Real for Dd {
    const UNIT: f64 = 7.888_609_052_210_118e-31; // 2^-100
    const ZERO: Self = Dd { hi: 0.0, lo: 0.0 };

    fn from_i128(v: i128) -> Self {
        let hi = v as f64;
        // v - hi is exact in i128 unless hi rounded up to 2^127.
        let lo = if hi >= I128_LIMIT {
            (v - i128::MAX) as f64 - 1.0
        } else {
            (v - hi as i128) as f64
        };
        Dd::new(hi, lo)
    }
    fn from_f64(v: f64) -> Self {
        Dd { hi: v, lo: 0.0 }
    }
    fn to_f64(self) -> f64 {
        self.hi
    }
    /// One Newton step from the `f64` root, with the square taken exactly.
    fn sqrt(self) -> Self {
        if self.hi <= 0.0 {
            return Dd::from_f64(self.hi.max(0.0).sqrt());
        }
        let s = self.hi.sqrt();
        let (p, e) = two_prod(s, s);
        let residual = ((self.hi - p) - e) + self.lo;
        fast_two_sum(s, residual / (2.0 * s))
    }
    fn round_to_i128(self) -> Option<i128> {
        if !self.is_finite() {
            return None;
        }
        let h = self.hi.round();
        let (h, l) = if h == self.hi {
            // hi is an integer: the fraction, if any, is in lo.
            (h, self.lo.round())
        } else if (h - self.hi).abs() == 0.5 {
            // A tie on hi: lo says which side the value is on.
            let toward = if self.lo > 0.0 {
                self.hi.ceil()
            } else {
                self.hi.floor()
            };
            (if self.lo == 0.0 { h } else { toward }, 0.0)
        } else {
            (h, 0.0)
        };
        if h.abs() >= I128_LIMIT || l.abs() >= I128_LIMIT {
            return None;
        }
        (h as i128).checked_add(l as i128)
    }
    fn is_finite(self) -> bool {
        self.hi.is_finite() && self.lo.is_finite()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact value of an integer-valued `x`.
    fn exact(x: Dd) -> i128 {
        x.hi as i128 + x.lo as i128
    }

    #[test]
    fn integers_up_to_2_to_the_106_are_exact() {
        for v in [
            0i128,
            1,
            -1,
            (1 << 60) + 1,
            -(1 << 100) - 12345,
            (1 << 105) + 7,
        ] {
            let x = Dd::from_i128(v);
            assert_eq!(x.round_to_i128(), Some(v));
            assert_eq!(exact(x), v);
        }
        assert_eq!(Dd::from_i128(i128::MAX).round_to_i128(), None);
    }

    #[test]
    fn arithmetic_keeps_about_100_bits() {
        // (2^53 + 1)^2 = 2^106 + 2^54 + 1 is beyond f64 and within Dd;
        // its low bit is lost (it needs 107 bits), the rest is exact.
        let a = Dd::from_i128((1 << 53) + 1);
        let sq = a * a;
        let want: i128 = (1 << 106) + (1 << 54);
        assert!((exact(sq) - want).abs() <= 1);
        // Division and square root undo the product to about 2^-100.
        let back = sq / a;
        assert!((back - a).abs().to_f64() / a.to_f64() < 1e-29);
        let root = sq.sqrt();
        assert!((root - a).abs().to_f64() / a.to_f64() < 1e-29);
        // 1/3 * 3 is 1 within the unit.
        let third = Dd::from_f64(1.0) / Dd::from_f64(3.0);
        let one = third * Dd::from_f64(3.0);
        assert!((one - Dd::from_f64(1.0)).abs().to_f64() < 4.0 * Dd::UNIT);
        // Cancellation f64 cannot see: (2^60 + 1) - 2^60 = 1.
        let big = Dd::from_i128((1 << 60) + 1) - Dd::from_i128(1 << 60);
        assert_eq!(big.round_to_i128(), Some(1));
    }

    #[test]
    fn rounding_breaks_a_high_word_tie_by_the_low_word() {
        assert_eq!(Dd::new(2.5, 1e-20).round_to_i128(), Some(3));
        assert_eq!(Dd::new(2.5, -1e-20).round_to_i128(), Some(2));
        assert_eq!(Dd::new(-2.5, -1e-20).round_to_i128(), Some(-3));
        assert_eq!(Dd::new(f64::NAN, 0.0).round_to_i128(), None);
        assert!(Dd::new(1.0, 1e-30) > Dd::from_f64(1.0));
        assert!(Dd::new(1.0, -1e-30) < Dd::from_f64(1.0));
    }
}
