//! Encoding numbers as `float16` (IEEE binary16) and `bfloat16` bits on the host, rounding
//! once from `f64` to nearest with ties to even, as CUDA's `__double2half` does; values
//! beyond the largest finite one become infinities, NaN stays NaN. Used where the host
//! packs a 16-bit float: kernel scalar arguments.

/// The bits of `x` as `float16`.
pub fn f16_bits(x: f64) -> u16 {
    encode(x, 5, 10)
}

/// The bits of `x` as `bfloat16`.
pub fn bf16_bits(x: f64) -> u16 {
    encode(x, 8, 7)
}

/// Rounds `x` to a 16-bit IEEE-style format with `exp_bits` exponent and `man_bits`
/// fraction bits (1 + exp_bits + man_bits = 16).
fn encode(x: f64, exp_bits: u32, man_bits: u32) -> u16 {
    let sign: u16 = if x.is_sign_negative() { 0x8000 } else { 0 };
    let exp_all_ones = ((1u32 << exp_bits) - 1) << man_bits;
    if x.is_nan() {
        // The canonical quiet NaN: exponent all ones, top fraction bit set.
        return sign | (exp_all_ones | (1 << (man_bits - 1))) as u16;
    }
    let a = x.abs();
    if a == 0.0 {
        return sign;
    }
    let bias = (1i32 << (exp_bits - 1)) - 1;
    let infinity = sign | exp_all_ones as u16;
    if a.is_infinite() {
        return infinity;
    }
    let e = ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    let emin = 1 - bias;
    let one = 1u32 << man_bits;
    if e < emin {
        // Subnormal (or zero after rounding): multiples of 2^(emin - man_bits). f64
        // subnormals are far below this range and round to zero like any tiny value.
        let q = (a * 2f64.powi(man_bits as i32 - emin)).round_ties_even() as u32;
        // q == one is the smallest normal number, whose code is the same integer.
        return sign | q as u16;
    }
    let mut e = e;
    let mut q = (a * 2f64.powi(man_bits as i32 - e)).round_ties_even() as u32;
    if q == 2 * one {
        e += 1;
        q = one;
    }
    if e > bias {
        return infinity;
    }
    sign | ((((e + bias) as u32) << man_bits) | (q - one)) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float16_values() {
        assert_eq!(f16_bits(1.0), 0x3c00);
        assert_eq!(f16_bits(-2.0), 0xc000);
        assert_eq!(f16_bits(65504.0), 0x7bff);
        assert_eq!(f16_bits(65519.99), 0x7bff);
        assert_eq!(f16_bits(65520.0), 0x7c00); // ties to even: overflows to infinity
        assert_eq!(f16_bits(1.0 / 3.0), 0x3555);
        assert_eq!(f16_bits(2f64.powi(-24)), 0x0001);
        assert_eq!(f16_bits(2f64.powi(-25)), 0x0000); // tie, rounds to even (zero)
        assert_eq!(f16_bits(2f64.powi(-14)), 0x0400);
        assert_eq!(f16_bits(2f64.powi(-14) * (1.0 - 2f64.powi(-12))), 0x0400); // rounds up into the normals
        assert_eq!(f16_bits(1.0 + 2f64.powi(-11)), 0x3c00); // tie to even
        assert_eq!(f16_bits(1.0 + 3.0 * 2f64.powi(-11)), 0x3c02);
        assert_eq!(f16_bits(f64::INFINITY), 0x7c00);
        assert_eq!(f16_bits(f64::NEG_INFINITY), 0xfc00);
        assert_eq!(f16_bits(f64::NAN) & 0x7fff, 0x7e00);
        assert_eq!(f16_bits(-0.0), 0x8000);
        assert_eq!(f16_bits(1e-300), 0);
    }

    #[test]
    fn bfloat16_values() {
        assert_eq!(bf16_bits(1.0), 0x3f80);
        assert_eq!(bf16_bits(1.0 / 3.0), 0x3eab);
        assert_eq!(bf16_bits(-3.0), 0xc040);
        assert_eq!(bf16_bits(f64::from(f32::MAX)), 0x7f80); // rounds up past the largest finite
        assert_eq!(bf16_bits(3.3895313892515355e38), 0x7f7f); // largest finite bfloat16
        assert_eq!(bf16_bits(f64::NAN) & 0x7fff, 0x7fc0);
    }

    #[test]
    fn agrees_with_truncating_f32_bits_where_exact() {
        // Every bfloat16 value is exactly representable: encoding it gives its own bits.
        for bits in (0u16..0x7f80).step_by(7) {
            let v = f32::from_bits(u32::from(bits) << 16);
            assert_eq!(bf16_bits(f64::from(v)), bits);
        }
    }
}
