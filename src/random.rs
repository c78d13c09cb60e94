//! Philox4x32-10, the counter-based generator of Salmon, Moraes, Dror and Shaw, "Parallel
//! random numbers: as easy as 1, 2, 3" (SC 2011) — the one cuRAND and JAX use — written
//! from the published algorithm and constants, and the conversions of its 32-bit outputs to
//! uniform floats.
//!
//! This is the reference of the `cuda.device.random` extension (`rand()`, `randn()`;
//! docs/semantics.md §6.4): the PTX back end computes the same bits from the same stream
//! definition ([`block`]) by the one IR expansion every back end shares
//! (`ir::expand::philox`), and the tests compare it with the functions here bit for bit. The
//! host back end reads its stream's position from [`host_seed`], [`host_thread`] and
//! [`host_next_call`].
//!
//! The stream: launch seed `s` (64 bits), thread `t` (the global linear thread index), call
//! `n` (how many `rand`/`randn` calls the thread made before, from 0). Call `n` of thread `t`
//! uses the one Philox block `philox4x32_10([n_lo, n_hi, t_lo, t_hi], [s_lo, s_hi])`:
//! `rand(float32)` takes word 0 ([`uniform_f32`]), `rand(float64)` words 0 and 1
//! ([`uniform_f64`]), `randn` all four ([`normal_f64`]). Normals are Box–Muller computed in
//! `float64` with the polynomials below (only `+ - * /`, `sqrt` and exact bit operations, so
//! every IEEE machine gives the same bits); `randn(float32)` rounds that value to `float32`.
//!
//! This module is a leaf (layer 0): it imports nothing from the crate.

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

/// The Philox key of a 64-bit seed: its low and high words.
pub fn key(seed: u64) -> [u32; 2] {
    [seed as u32, (seed >> 32) as u32]
}

/// The Philox counter of call `call` of thread `thread`: `[call_lo, call_hi, thread_lo,
/// thread_hi]`.
pub fn counter(thread: u64, call: u64) -> [u32; 4] {
    [
        call as u32,
        (call >> 32) as u32,
        thread as u32,
        (thread >> 32) as u32,
    ]
}

/// The Philox block of call `call` of thread `thread` in the stream of `seed`.
pub fn block(seed: u64, thread: u64, call: u64) -> [u32; 4] {
    philox4x32_10(counter(thread, call), key(seed))
}

/// `rand(float32)`: call `call` of thread `thread` under `seed`.
pub fn rand_f32(seed: u64, thread: u64, call: u64) -> f32 {
    uniform_f32(block(seed, thread, call)[0])
}

/// `rand(float64)`: call `call` of thread `thread` under `seed`.
pub fn rand_f64(seed: u64, thread: u64, call: u64) -> f64 {
    let b = block(seed, thread, call);
    uniform_f64(b[0], b[1])
}

/// `randn(float64)`: call `call` of thread `thread` under `seed`.
pub fn randn_f64(seed: u64, thread: u64, call: u64) -> f64 {
    normal_f64(block(seed, thread, call))
}

/// `randn(float32)`: [`randn_f64`] rounded to nearest.
pub fn randn_f32(seed: u64, thread: u64, call: u64) -> f32 {
    randn_f64(seed, thread, call) as f32
}

/// The coefficients of `ln(m) = 2s · Σ LN_COEFFS[k] · s^(2k)`, `s = (m - 1)/(m + 1)`:
/// `1/(2k + 1)`. With `m` in [√½, √2), `s²` ≤ 0.0295 and the series is cut after `s^23`
/// (the rest is below 2⁻⁵⁶ relative).
pub const LN_COEFFS: [f64; 12] = [
    1.0,
    1.0 / 3.0,
    1.0 / 5.0,
    1.0 / 7.0,
    1.0 / 9.0,
    1.0 / 11.0,
    1.0 / 13.0,
    1.0 / 15.0,
    1.0 / 17.0,
    1.0 / 19.0,
    1.0 / 21.0,
    1.0 / 23.0,
];

/// The Taylor coefficients of `sin(x)/x` in `x²` (`(-1)^k / (2k + 1)!`), enough on [0, π/4].
pub const SIN_COEFFS: [f64; 8] = [
    1.0,
    -1.0 / 6.0,
    1.0 / 120.0,
    -1.0 / 5040.0,
    1.0 / 362_880.0,
    -1.0 / 39_916_800.0,
    1.0 / 6_227_020_800.0,
    -1.0 / 1_307_674_368_000.0,
];

/// The Taylor coefficients of `cos(x)` in `x²` (`(-1)^k / (2k)!`), enough on [0, π/4].
pub const COS_COEFFS: [f64; 9] = [
    1.0,
    -1.0 / 2.0,
    1.0 / 24.0,
    -1.0 / 720.0,
    1.0 / 40_320.0,
    -1.0 / 3_628_800.0,
    1.0 / 479_001_600.0,
    -1.0 / 87_178_291_200.0,
    1.0 / 20_922_789_888_000.0,
];

/// `p(z) = c[0] + c[1] z + …` by Horner's rule, highest coefficient first, one rounding per
/// operation (no fused multiply-add: the device lowering does the same operations).
pub fn horner(c: &[f64], z: f64) -> f64 {
    let mut p = c[c.len() - 1];
    for &k in c[..c.len() - 1].iter().rev() {
        p = p * z + k;
    }
    p
}

/// The natural logarithm of a positive normal `y`, as the device computes it: `y = m · 2^e`
/// with `m` in [√½, √2) (from the bits), then `e · ln 2 + ln m` by [`LN_COEFFS`].
pub fn ln(y: f64) -> f64 {
    let bits = y.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut m = f64::from_bits(bits & 0x000f_ffff_ffff_ffff | 0x3ff0_0000_0000_0000);
    if m > std::f64::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    let s = (m - 1.0) / (m + 1.0);
    let p = horner(&LN_COEFFS, s * s);
    e as f64 * std::f64::consts::LN_2 + 2.0 * s * p
}

/// `cos(2πu)` for `u` in [0, 1), as the device computes it: the quadrant `q` and fraction
/// `f` of `4u` are exact; `cos(fπ/2)` and `sin(fπ/2)` come from the Taylor polynomials at
/// `min(f, 1 - f) · π/2` ≤ π/4.
pub fn cos_2pi(u: f64) -> f64 {
    let t = u * 4.0;
    let q = t as u32;
    let f = t - f64::from(q);
    let swap = f > 0.5;
    let g = if swap { 1.0 - f } else { f };
    let x = g * std::f64::consts::FRAC_PI_2;
    let z = x * x;
    let sin = x * horner(&SIN_COEFFS, z);
    let cos = horner(&COS_COEFFS, z);
    let (a, b) = if swap { (sin, cos) } else { (cos, sin) };
    match q {
        0 => a,
        1 => -b,
        2 => -a,
        _ => b,
    }
}

/// A standard normal from one Philox block, by Box–Muller: `u1` from words 0 and 1, `u2` from
/// words 2 and 3 ([`uniform_f64`]), `sqrt(-2 ln(1 - u1)) · cos(2π u2)` (`1 - u1` is exact and
/// in (0, 1], so the logarithm is finite).
pub fn normal_f64(w: [u32; 4]) -> f64 {
    let u1 = uniform_f64(w[0], w[1]);
    let u2 = uniform_f64(w[2], w[3]);
    let r = (-2.0 * ln(1.0 - u1)).sqrt();
    r * cos_2pi(u2)
}

/// A fresh 64-bit seed, different at each call in the process (SplitMix64 of a counter that
/// starts from the standard library's per-process random hasher keys): the seed of a launch
/// that was given none.
pub fn draw_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: OnceLock<AtomicU64> = OnceLock::new();
    let next = NEXT.get_or_init(|| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(0x5eed);
        AtomicU64::new(h.finish())
    });
    let mut z = next
        .fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)
        .wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Where the host is in its stream: `(seed, thread, next call)`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HostStream {
    /// The seed.
    pub seed: u64,
    /// The thread index the host calls stand for.
    pub thread: u64,
    /// How many calls were made.
    pub call: u64,
}

thread_local! {
    static HOST: std::cell::Cell<Option<HostStream>> = const { std::cell::Cell::new(None) };
}

/// Makes `rand`/`randn` in `@func`s run on the host (on this OS thread) continue the stream
/// of `seed` as thread `thread` from its first call, so they give what thread `thread` of a
/// kernel launched with `seed` gets.
pub fn set_host_stream(seed: u64, thread: u64) {
    HOST.with(|h| {
        h.set(Some(HostStream {
            seed,
            thread,
            call: 0,
        }))
    });
}

/// This OS thread's host stream (a fresh seed, thread 0, drawn at the first use when
/// [`set_host_stream`] was not called).
pub fn host_stream() -> HostStream {
    HOST.with(|h| {
        h.get().unwrap_or_else(|| {
            let s = HostStream {
                seed: draw_seed(),
                thread: 0,
                call: 0,
            };
            h.set(Some(s));
            s
        })
    })
}

/// The seed of this OS thread's host stream (the host back end's `RandSeed`).
pub extern "C" fn host_seed() -> u64 {
    host_stream().seed
}

/// The thread index of this OS thread's host stream (the host back end's `RandThread`).
pub extern "C" fn host_thread() -> u64 {
    host_stream().thread
}

/// The call count of this OS thread's host stream, then advanced by one (the host back end's
/// `RandCall`).
pub extern "C" fn host_next_call() -> u64 {
    let s = host_stream();
    HOST.with(|h| {
        h.set(Some(HostStream {
            call: s.call.wrapping_add(1),
            ..s
        }))
    });
    s.call
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

    /// The device-exact `ln` and `cos_2pi` are within a few ulps of libm's.
    #[test]
    fn ln_and_cos_agree_with_libm() {
        for i in 1..=100_000u64 {
            let y = i as f64 / 100_000.0;
            assert!(
                (ln(y) - y.ln()).abs() <= 4.0 * f64::EPSILON * y.ln().abs().max(1.0),
                "{y}"
            );
            let u = (i - 1) as f64 / 100_000.0;
            let c = (2.0 * std::f64::consts::PI * u).cos();
            assert!((cos_2pi(u) - c).abs() < 1e-14, "{u}: {} {c}", cos_2pi(u));
        }
        assert_eq!(ln(1.0), 0.0);
        assert!((ln(f64::from_bits(1 << 52)) - (-708.3964185322641)).abs() < 1e-12);
    }

    /// Mean 0 and variance 1 over 10⁶ normals, within a few standard errors.
    #[test]
    fn normals_have_the_moments_of_n01() {
        let n = 1_000_000u64;
        let (mut sum, mut sq) = (0f64, 0f64);
        for i in 0..n {
            let z = randn_f64(42, i % 1000, i / 1000);
            sum += z;
            sq += z * z;
        }
        let mean = sum / n as f64;
        let var = sq / n as f64 - mean * mean;
        assert!(mean.abs() < 5.0 / (n as f64).sqrt(), "{mean}");
        assert!((var - 1.0).abs() < 5.0 * (2.0 / n as f64).sqrt(), "{var}");
    }

    #[test]
    fn host_stream_continues_from_the_set_point() {
        set_host_stream(7, 3);
        assert_eq!((host_seed(), host_thread(), host_next_call()), (7, 3, 0));
        assert_eq!(host_next_call(), 1);
        assert_eq!(host_stream().call, 2);
        assert_ne!(draw_seed(), draw_seed());
    }
}
