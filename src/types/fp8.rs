//! The two 8-bit float formats of the spec (`float8e4m3`, `float8e5m2`) as plain numbers:
//! decoding a byte and encoding a value with the rounding PTX's `cvt.rn.satfinite` uses
//! (round to nearest, ties to even; values beyond the largest finite one, infinities
//! included, saturate to it; NaN stays NaN).
//!
//! The compiler folds constants with these functions, and the GPU tests use them as the
//! reference for the code the back end generates. They search the 256 codes rather than
//! manipulate bits, so they share no logic with that code.

use super::Scalar;

/// The shape of an fp8 format.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Format {
    /// Exponent bits.
    pub exp_bits: u32,
    /// Mantissa (fraction) bits.
    pub man_bits: u32,
    /// True for e5m2, which has infinities and IEEE NaNs; e4m3 ("fn") has neither and uses
    /// only S.1111.111 for NaN.
    pub ieee: bool,
}

/// `float8e4m3` (`__nv_fp8_e4m3`, OCP E4M3FN): largest finite 448.
pub const E4M3: Format = Format {
    exp_bits: 4,
    man_bits: 3,
    ieee: false,
};

/// `float8e5m2` (`__nv_fp8_e5m2`): largest finite 57344.
pub const E5M2: Format = Format {
    exp_bits: 5,
    man_bits: 2,
    ieee: true,
};

impl Format {
    /// The format of an fp8 scalar type.
    pub fn of(s: Scalar) -> Option<Format> {
        match s {
            Scalar::Float8E4M3 => Some(E4M3),
            Scalar::Float8E5M2 => Some(E5M2),
            _ => None,
        }
    }

    /// The exponent bias.
    pub fn bias(self) -> i32 {
        (1 << (self.exp_bits - 1)) - 1
    }

    /// The code of the largest finite value (sign bit clear).
    pub fn max_code(self) -> u8 {
        if self.ieee {
            // exponent all ones is inf/NaN: one exponent below, all mantissa bits.
            (((1u32 << self.exp_bits) - 2) << self.man_bits | ((1 << self.man_bits) - 1)) as u8
        } else {
            0x7e
        }
    }

    /// The canonical NaN code (sign bit clear).
    pub fn nan_code(self) -> u8 {
        0x7f
    }

    /// The value of a byte.
    pub fn decode(self, code: u8) -> f64 {
        let sign = if code & 0x80 != 0 { -1.0 } else { 1.0 };
        let e = i32::from((code >> self.man_bits) & ((1 << self.exp_bits) - 1) as u8);
        let m = f64::from(code & ((1 << self.man_bits) - 1) as u8);
        let top = (1 << self.exp_bits) - 1;
        let scale = f64::from(1u32 << self.man_bits);
        if self.ieee && e == top {
            return if m == 0.0 {
                sign * f64::INFINITY
            } else {
                f64::NAN
            };
        }
        if !self.ieee && e == top && m == scale - 1.0 {
            return f64::NAN;
        }
        if e == 0 {
            sign * m / scale * 2f64.powi(1 - self.bias())
        } else {
            sign * (1.0 + m / scale) * 2f64.powi(e - self.bias())
        }
    }

    /// The byte nearest to `x` (ties to the even code), saturating to the largest finite
    /// value; NaN gives the canonical NaN.
    pub fn encode(self, x: f64) -> u8 {
        if x.is_nan() {
            return self.nan_code();
        }
        let sign = if x.is_sign_negative() { 0x80u8 } else { 0 };
        let a = x.abs();
        if a >= self.decode(self.max_code()) {
            // Saturation (infinities included); also keeps huge values out of the search,
            // where every distance would round to the same float.
            return sign | self.max_code();
        }
        let mut best = 0u8;
        let mut best_err = f64::INFINITY;
        for code in 0..=self.max_code() {
            let err = (self.decode(code) - a).abs();
            // Codes ascend with value, so on a tie the later code wins only if it is even.
            if err < best_err || (err == best_err && code % 2 == 0) {
                best = code;
                best_err = err;
            }
        }
        sign | best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        assert_eq!(E4M3.decode(0x7e), 448.0);
        assert_eq!(E5M2.decode(0x7b), 57344.0);
        assert_eq!(E4M3.decode(0x01), 2f64.powi(-9));
        assert_eq!(E5M2.decode(0x01), 2f64.powi(-16));
        assert_eq!(E4M3.decode(0x38), 1.0);
        assert_eq!(E5M2.decode(0x3c), 1.0);
        assert!(E4M3.decode(0x7f).is_nan());
        assert_eq!(E5M2.decode(0x7c), f64::INFINITY);
        assert_eq!(E4M3.encode(1e9), 0x7e);
        assert_eq!(E4M3.encode(f64::NEG_INFINITY), 0xfe);
        assert_eq!(E5M2.encode(f64::INFINITY), 0x7b);
        // 1.0625 is halfway between 1.0 (0x38) and 1.125 (0x39): the even code wins.
        assert_eq!(E4M3.encode(1.0625), 0x38);
        assert_eq!(E4M3.encode(1.1875), 0x3a);
        assert_eq!(E4M3.encode(-0.0), 0x80);
        assert_eq!(E5M2.encode(1e300), 0x7b);
        assert_eq!(E4M3.encode(-1e300), 0xfe);
    }

    #[test]
    fn every_code_round_trips() {
        for f in [E4M3, E5M2] {
            for code in 0..=255u8 {
                let v = f.decode(code);
                if v.is_nan() || v.is_infinite() {
                    continue;
                }
                assert_eq!(f.encode(v), code, "{f:?} {code:#x}");
            }
        }
    }
}
