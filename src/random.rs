//! Philox4x32-10, the counter-based generator of Salmon, Moraes, Dror and Shaw, "Parallel
//! random numbers: as easy as 1, 2, 3" (SC 2011) — the one cuRAND and JAX use — written
//! from the published algorithm and constants, and the conversions of its 32-bit outputs to
//! uniform floats.
//!
//! This is the host reference for the planned `device.random` extension (issue 18): device
//! code will compute the same bits (only integer multiply, xor and add), so a kernel's
//! uniform numbers can be checked against [`philox4x32_10`] bit for bit. The generator is
//! not wired into device code yet.

/// The multipliers of the two Philox S-boxes.
const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
/// The Weyl-sequence increments of the two key words (the golden ratio and √3 − 1).
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

/// One Philox round: two 32 × 32 → 64-bit multiplies, their halves mixed with the other
/// counter words and the key.
fn round(c: [u32; 4], k: [u32; 2]) -> [u32; 4] {
    let p0 = u64::from(M0) * u64::from(c[0]);
    let p1 = u64::from(M1) * u64::from(c[2]);
    let (hi0, lo0) = ((p0 >> 32) as u32, p0 as u32);
    let (hi1, lo1) = ((p1 >> 32) as u32, p1 as u32);
    [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0]
}

/// Philox4x32 with 10 rounds: the four 32-bit words of block `counter` of the stream `key`.
pub fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let mut c = counter;
    let mut k = key;
    for r in 0..10 {
        if r > 0 {
            k = [k[0].wrapping_add(W0), k[1].wrapping_add(W1)];
        }
        c = round(c, k);
    }
    c
}

/// A `float32` uniform in [0, 1) from one output word: its top 24 bits times 2⁻²⁴ (exact,
/// every value a multiple of 2⁻²⁴, as JAX's and NumPy's conversions).
pub fn uniform_f32(x: u32) -> f32 {
    (x >> 8) as f32 * (1.0 / 16_777_216.0)
}

/// A `float64` uniform in [0, 1) from two output words: the top 53 bits of `hi:lo` times
/// 2⁻⁵³ (exact).
pub fn uniform_f64(hi: u32, lo: u32) -> f64 {
    let bits = (u64::from(hi) << 32 | u64::from(lo)) >> 11;
    bits as f64 * (1.0 / 9_007_199_254_740_992.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The known-answer vectors of Philox4x32-10 from Random123's `kat_vectors`.
    #[test]
    fn random123_known_answers() {
        assert_eq!(
            philox4x32_10([0, 0, 0, 0], [0, 0]),
            [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
        );
        assert_eq!(
            philox4x32_10([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
        );
        assert_eq!(
            philox4x32_10(
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0]
            ),
            [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
        );
    }

    #[test]
    fn uniforms_cover_zero_to_one_exclusive() {
        assert_eq!(uniform_f32(0), 0.0);
        assert_eq!(uniform_f32(u32::MAX), 1.0 - 1.0 / 16_777_216.0);
        assert!(uniform_f32(u32::MAX) < 1.0);
        assert_eq!(uniform_f64(0, 0), 0.0);
        assert!(uniform_f64(u32::MAX, u32::MAX) < 1.0);
        assert_eq!(uniform_f64(0x8000_0000, 0), 0.5);
    }

    /// Mean and variance of 10⁶ uniforms of one stream: 1/2 and 1/12 within a few standard
    /// errors (a broken round function or conversion is far off).
    #[test]
    fn uniforms_have_the_moments_of_u01() {
        let (mut sum, mut sq, mut n) = (0f64, 0f64, 0f64);
        for i in 0..250_000u32 {
            for w in philox4x32_10([i, 0, 0, 0], [1234, 5678]) {
                let u = f64::from(uniform_f32(w));
                sum += u;
                sq += u * u;
                n += 1.0;
            }
        }
        let mean = sum / n;
        let var = sq / n - mean * mean;
        assert!(
            (mean - 0.5).abs() < 5.0 * (1.0f64 / 12.0 / n).sqrt(),
            "{mean}"
        );
        assert!((var - 1.0 / 12.0).abs() < 1e-3, "{var}");
    }
}
