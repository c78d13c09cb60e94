//! The symbols JIT-compiled host code calls: the C math library (`sinf`, `pow`, …, linked
//! from libm so they are always present) and pydevice's own helpers (half-precision rounding,
//! integer power). Registered with the JIT by name; nothing else is looked up.

use super::leaf;
use std::sync::atomic::{AtomicBool, Ordering};

/// `x ** e` on integers widened to 64 bits (the caller keeps the low bits): repeated
/// squaring, wrapping; a negative exponent (when `signed`) gives 1 for 1, ±1 for −1 and 0
/// otherwise, as the device's `__pyd_ipow_*`.
extern "C" fn ipow(base: i64, exp: i64, signed: u8) -> i64 {
    if signed != 0 && exp < 0 {
        return match base {
            1 => 1,
            -1 if exp & 1 != 0 => -1,
            -1 => 1,
            _ => 0,
        };
    }
    let (mut acc, mut b, mut e) = (1i64, base, exp as u64);
    while e != 0 {
        if e & 1 != 0 {
            acc = acc.wrapping_mul(b);
        }
        b = b.wrapping_mul(b);
        e >>= 1;
    }
    acc
}

extern "C" fn round_f16(x: f64) -> f32 {
    leaf::round_f16(x)
}

extern "C" fn round_bf16(x: f64) -> f32 {
    leaf::round_bf16(x)
}

extern "C" fn f16_bits(v: f32) -> u16 {
    leaf::f16_bits(v)
}

extern "C" fn f16_value(bits: u16) -> f32 {
    leaf::f16_value(bits)
}

/// `float8e4m3(x)` of a `float64` (or wider-held) value: rounded once, to nearest even,
/// saturating (§2.8), as the `float32` the host holds it in.
extern "C" fn round_e4m3(x: f64) -> f32 {
    use crate::types::fp8::E4M3;
    E4M3.decode(E4M3.encode(x)) as f32
}

/// An mbarrier word on the CPU (`emit::hopper`): bit 63 the current phase's parity, bits
/// 0–20 the arrivals it still waits for, bits 21–41 the count it was initialized with, bits
/// 42–62 its pending transaction bytes (two's complement: a copy may retire before its
/// bytes are expected).
mod mbar {
    pub(super) const FIELD: u64 = (1 << 21) - 1;

    pub(super) fn pack(parity: u64, pending: u64, count: u64, tx: i64) -> u64 {
        parity << 63 | (pending & FIELD) | (count & FIELD) << 21 | ((tx as u64) & FIELD) << 42
    }

    /// (parity, pending, count, tx).
    pub(super) fn unpack(w: u64) -> (u64, u64, u64, i64) {
        let raw = (w >> 42) & FIELD;
        let tx = ((raw << 43) as i64) >> 43;
        (w >> 63, w & FIELD, (w >> 21) & FIELD, tx)
    }

    /// Completes the phase when nothing is left of it.
    pub(super) fn settle(w: u64) -> u64 {
        let (parity, pending, count, tx) = unpack(w);
        if pending == 0 && tx == 0 {
            pack(parity ^ 1, count, count, 0)
        } else {
            w
        }
    }

    /// Changes the word at `p` with `f` atomically; returns the old word.
    ///
    /// # Safety
    ///
    /// `p` is the address of a live, 8-byte-aligned `uint64` (the emitted code passes an
    /// element of a shared `uint64` array, or its scratch word).
    pub(super) unsafe fn update(p: u64, f: impl Fn(u64) -> u64) -> u64 {
        // SAFETY: the caller's promise.
        let a = unsafe { &*(p as *const std::sync::atomic::AtomicU64) };
        let order = std::sync::atomic::Ordering::SeqCst;
        a.fetch_update(order, order, |w| Some(settle(f(w))))
            .unwrap_or_else(|w| w)
    }
}

/// `mbarrier_init(bar, count)`: phase 0, `count` arrivals pending, no transactions.
extern "C" fn mbar_init(p: u64, count: u32) -> i32 {
    let w = mbar::pack(0, u64::from(count), u64::from(count), 0);
    // SAFETY: an mbarrier operand (see `mbar::update`).
    unsafe {
        (*(p as *const std::sync::atomic::AtomicU64)).store(w, std::sync::atomic::Ordering::SeqCst)
    };
    0
}

/// `mbarrier_arrive` (`arrive` 1, `tx` 0), `mbarrier_arrive_expect_tx` (`arrive` 1) and
/// `mbarrier_expect_tx` (`arrive` 0): adds `tx` expected bytes, then arrives; returns the
/// word before.
extern "C" fn mbar_arrive(p: u64, tx: u32, arrive: i32) -> u64 {
    // SAFETY: an mbarrier operand.
    unsafe {
        mbar::update(p, |w| {
            let (parity, pending, count, old) = mbar::unpack(w);
            let pending = if arrive != 0 {
                pending.saturating_sub(1)
            } else {
                pending
            };
            mbar::pack(parity, pending, count, old + i64::from(tx))
        })
    }
}

/// A bulk copy's `bytes` retire on the mbarrier (`complete_tx`).
pub(crate) extern "C" fn mbar_complete_tx(p: u64, bytes: u32) -> i32 {
    // SAFETY: an mbarrier operand.
    unsafe {
        mbar::update(p, |w| {
            let (parity, pending, count, tx) = mbar::unpack(w);
            mbar::pack(parity, pending, count, tx - i64::from(bytes))
        })
    };
    0
}

/// Whether the phase of parity `parity` has completed (`try_wait.parity`): the current
/// phase has the other parity.
extern "C" fn mbar_done(p: u64, parity: u32) -> i32 {
    // SAFETY: an mbarrier operand.
    let w = unsafe {
        (*(p as *const std::sync::atomic::AtomicU64)).load(std::sync::atomic::Ordering::SeqCst)
    };
    i32::from(w >> 63 != u64::from(parity & 1))
}

/// A bulk copy of `n` bytes (the emitted code checked both ranges).
/// The locks of 16-byte atomics ([`atomic16`]), chosen by address.
static ATOMIC16_LOCKS: [AtomicBool; 64] = [const { AtomicBool::new(false) }; 64];

/// A 16-byte atomic (`complex128`'s `load`, `store`, `exch`, `cas`, docs/semantics.md §9.2)
/// of the element at `ptr`: `op` 0 load, 1 store, 2 exchange, 3 compare-and-swap of the
/// bits. `io` points to 32 bytes: the value (or the expected value, then the new one); the
/// old value is written to its first 16 bytes. Every 16-byte atomic of an address holds the
/// same spin lock while it reads and writes, so none sees another half done (a kernel's
/// fiber never suspends while holding it).
extern "C" fn atomic16(op: i32, ptr: u64, io: u64) -> i32 {
    let lock = &ATOMIC16_LOCKS[((ptr >> 4) & 63) as usize];
    while lock
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        std::hint::spin_loop();
    }
    // SAFETY: `ptr` is a checked reference to a 16-byte element and `io` the caller's
    // 32-byte stack slot; unaligned accesses, as NumPy's complex128 is 8-byte aligned.
    unsafe {
        let p = ptr as *mut [u64; 2];
        let io = io as *mut [u64; 2];
        let old = p.read_unaligned();
        let val = io.read_unaligned();
        match op {
            1 | 2 => p.write_unaligned(val),
            3 if old == val => p.write_unaligned(io.add(1).read_unaligned()),
            _ => {}
        }
        io.write_unaligned(old);
    }
    lock.store(false, Ordering::Release);
    0
}

extern "C" fn bulk_copy(dst: u64, src: u64, n: u64) -> i32 {
    // SAFETY: both ranges lie in their arrays (checked by the caller); `copy` allows an
    // overlap.
    unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, n as usize) };
    0
}

/// `float8e5m2(x)`, as [`round_e4m3`].
extern "C" fn round_e5m2(x: f64) -> f32 {
    use crate::types::fp8::E5M2;
    E5M2.decode(E5M2.encode(x)) as f32
}

/// The code of an fp8 value held as `float32` (exact: the value is an fp8 value).
extern "C" fn e4m3_bits(v: f32) -> u8 {
    crate::types::fp8::E4M3.encode(f64::from(v))
}

/// As [`e4m3_bits`]; an infinity (which only an e5m2 value read from memory holds) keeps
/// its code, where a conversion would saturate it.
extern "C" fn e5m2_bits(v: f32) -> u8 {
    if v.is_infinite() {
        return if v < 0.0 { 0xfc } else { 0x7c };
    }
    crate::types::fp8::E5M2.encode(f64::from(v))
}

/// The value of an fp8 code, as `float32` (exact).
extern "C" fn e4m3_value(code: u8) -> f32 {
    crate::types::fp8::E4M3.decode(code) as f32
}

/// As [`e4m3_value`].
extern "C" fn e5m2_value(code: u8) -> f32 {
    crate::types::fp8::E5M2.decode(code) as f32
}

unsafe extern "C" {
    fn printf(format: *const std::ffi::c_char, ...) -> std::ffi::c_int;
    fn fflush(stream: *mut std::ffi::c_void) -> std::ffi::c_int;
}

// The `print` pieces (`lower::host::emit::print`): `format` is one NUL-terminated printf
// directive (or text with `%` doubled) from the JIT module's data; each value is passed as C
// passes a variadic argument of its type, as the device's `vprintf` buffer holds it.

extern "C" fn print_text(format: *const std::ffi::c_char) -> i32 {
    // SAFETY: `format` is a NUL-terminated string with no conversion (every `%` doubled).
    unsafe { printf(format) }
}

extern "C" fn print_i64(format: *const std::ffi::c_char, v: i64) -> i32 {
    // SAFETY: `format` is one `%...lld`-style directive, which takes a `long long`.
    unsafe { printf(format, v) }
}

extern "C" fn print_u64(format: *const std::ffi::c_char, v: u64) -> i32 {
    // SAFETY: `format` is one `%...llu`-style directive, which takes an `unsigned long long`.
    unsafe { printf(format, v) }
}

extern "C" fn print_f64(format: *const std::ffi::c_char, v: f64) -> i32 {
    // SAFETY: `format` is one floating-point directive, which takes a `double`.
    unsafe { printf(format, v) }
}

extern "C" fn print_repr(digits: i32, v: f64) -> i32 {
    let text = float_repr(v, digits as u32);
    let c = std::ffi::CString::new(text).unwrap_or_default();
    // SAFETY: `%s` takes the NUL-terminated string `c`, alive for the call.
    unsafe { printf(c"%s".as_ptr(), c.as_ptr()) }
}

/// `v` as Python's `repr` writes a float (`print(x)`, `str(x)`) of the width that
/// `digits` names ([`crate::ir::PrintPiece::repr_digits`]: 16 `float64`, 7 `float32`, 4
/// `float16`, 3 `bfloat16`; `v` holds a value of that width): the fewest significant digits
/// that read back to the value at that width, in positional notation with at least one
/// digit after the point when the decimal exponent is in -4..16 (`3.0`, `0.0001`,
/// `123456.5`), else in exponent notation with a signed exponent of at least two digits
/// (`1e+16`, `1.5e-05`); `nan`, `inf`, `-inf`.
pub(crate) fn float_repr(v: f64, digits: u32) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    // Rust's `{:e}` writes the shortest round-trip digits of an f64 or f32; for the half
    // widths, the fewest digits that round back to `v`.
    let sci = match digits {
        16 => format!("{v:e}"),
        7 => format!("{:e}", v as f32),
        _ => {
            let round = if digits == 4 {
                leaf::round_f16
            } else {
                leaf::round_bf16
            };
            (1..=17usize)
                .map(|p| format!("{:.*e}", p - 1, v))
                .find(|s| s.parse::<f64>().is_ok_and(|x| f64::from(round(x)) == v))
                .unwrap_or_else(|| format!("{v:e}"))
        }
    };
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let all: String = mant.chars().filter(char::is_ascii_digit).collect();
    let ds = match all.trim_end_matches('0') {
        "" => "0",
        d => d,
    };
    let mut out = String::from(if neg { "-" } else { "" });
    if (-4..16).contains(&exp) {
        if exp >= 0 {
            let int = exp as usize + 1;
            if ds.len() <= int {
                out.push_str(ds);
                out.extend(std::iter::repeat_n('0', int - ds.len()));
                out.push_str(".0");
            } else {
                out.push_str(&ds[..int]);
                out.push('.');
                out.push_str(&ds[int..]);
            }
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
            out.push_str(ds);
        }
    } else {
        out.push_str(&ds[..1]);
        if ds.len() > 1 {
            out.push('.');
            out.push_str(&ds[1..]);
        }
        out.push_str(&format!(
            "e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.abs()
        ));
    }
    out
}

extern "C" fn print_bool(format: *const std::ffi::c_char, v: u32) -> i32 {
    let s: &std::ffi::CStr = if v != 0 { c"True" } else { c"False" };
    // SAFETY: `format` is one `%...s` directive, which takes a NUL-terminated string.
    unsafe { printf(format, s.as_ptr()) }
}

extern "C" fn print_flush() -> i32 {
    // SAFETY: `fflush(NULL)` flushes every output stream.
    unsafe { fflush(std::ptr::null_mut()) }
}

macro_rules! libm {
    (unary: $($u:ident)*; binary: $($b:ident)*; ternary: $($t:ident)*;) => {
        #[link(name = "m")]
        unsafe extern "C" {
            $(safe fn $u(x: f64) -> f64;)*
            $(safe fn $b(x: f64, y: f64) -> f64;)*
            $(safe fn $t(x: f64, y: f64, z: f64) -> f64;)*
        }
        /// The double-precision functions, by C name.
        fn libm_f64() -> Vec<(&'static str, *const u8)> {
            vec![
                $((stringify!($u), $u as *const u8),)*
                $((stringify!($b), $b as *const u8),)*
                $((stringify!($t), $t as *const u8),)*
            ]
        }
    };
}

macro_rules! libmf {
    (unary: $($u:ident)*; binary: $($b:ident)*; ternary: $($t:ident)*;) => {
        #[link(name = "m")]
        unsafe extern "C" {
            $(safe fn $u(x: f32) -> f32;)*
            $(safe fn $b(x: f32, y: f32) -> f32;)*
            $(safe fn $t(x: f32, y: f32, z: f32) -> f32;)*
        }
        /// The single-precision functions, by C name.
        fn libm_f32() -> Vec<(&'static str, *const u8)> {
            vec![
                $((stringify!($u), $u as *const u8),)*
                $((stringify!($b), $b as *const u8),)*
                $((stringify!($t), $t as *const u8),)*
            ]
        }
    };
}

libm! {
    unary: exp exp2 expm1 log log2 log10 log1p sin cos tan asin acos atan sinh cosh tanh
        asinh acosh atanh erf erfc tgamma lgamma cbrt floor ceil trunc nearbyint sqrt rint
        exp10;
    binary: pow atan2 fmod hypot remainder nextafter;
    ternary: fma;
}

libmf! {
    unary: expf exp2f expm1f logf log2f log10f log1pf sinf cosf tanf asinf acosf atanf sinhf
        coshf tanhf asinhf acoshf atanhf erff erfcf tgammaf lgammaf cbrtf floorf ceilf truncf
        nearbyintf sqrtf rintf exp10f;
    binary: powf atan2f fmodf hypotf remainderf nextafterf;
    ternary: fmaf;
}

#[link(name = "m")]
unsafe extern "C" {
    safe fn ldexp(x: f64, n: i32) -> f64;
    safe fn ldexpf(x: f32, n: i32) -> f32;
    fn frexp(x: f64, e: *mut i32) -> f64;
    fn frexpf(x: f32, e: *mut i32) -> f32;
    fn modf(x: f64, i: *mut f64) -> f64;
    fn modff(x: f32, i: *mut f32) -> f32;
}

// `math.frexp` and `math.modf` (kernels on the CPU): the C library's, one result each.

extern "C" fn frexp_mantissa(x: f64) -> f64 {
    let mut e = 0;
    // SAFETY: `e` is a valid `int` to write.
    unsafe { frexp(x, &mut e) }
}

extern "C" fn frexp_exponent(x: f64) -> i32 {
    let mut e = 0;
    // SAFETY: as above.
    unsafe { frexp(x, &mut e) };
    e
}

/// `round(x, ndigits)` as the device computes it (`lower::ptx`'s `round_digits`, numba's
/// `round_to_impl`), step for step in `x`'s own type: `10 ** e` by squaring over `e`'s low
/// 17 bits, `llrint` as the device's saturating round-half-even conversion.
macro_rules! round_digits {
    ($name:ident, $t:ty) => {
        extern "C" fn $name(x: $t, n: i64) -> $t {
            let nonneg = n >= 0;
            let big = nonneg && n > 22;
            let e = if !nonneg {
                n.wrapping_neg()
            } else if big {
                n - 22
            } else {
                n
            };
            let (mut r, mut a): ($t, $t) = (1.0, 10.0);
            for bit in 0..17 {
                if e & (1 << bit) != 0 {
                    r *= a;
                }
                a *= a;
            }
            let pow1 = if e > 0x10000 { <$t>::INFINITY } else { r };
            let pow2: $t = if big { 1e22 } else { 1.0 };
            let y_pos = (x * pow1) * pow2;
            let y = if nonneg { y_pos } else { x / pow1 };
            // `as i64` saturates and takes NaN to 0, as `cvt.rni.s64` does.
            let llrint = |v: $t| v.round_ties_even() as i64 as $t;
            let mut z = llrint(y);
            if (y - z).abs() == 0.5 {
                z = 2.0 * llrint(y * 0.5);
            }
            let res = if nonneg { (z / pow2) / pow1 } else { z * pow1 };
            if !x.is_finite() || (nonneg && y_pos.abs() == <$t>::INFINITY) {
                x
            } else {
                res
            }
        }
    };
}

round_digits!(round_digits_f64, f64);
round_digits!(round_digits_f32, f32);

extern "C" fn frexpf_mantissa(x: f32) -> f32 {
    let mut e = 0;
    // SAFETY: as above.
    unsafe { frexpf(x, &mut e) }
}

extern "C" fn frexpf_exponent(x: f32) -> i32 {
    let mut e = 0;
    // SAFETY: as above.
    unsafe { frexpf(x, &mut e) };
    e
}

extern "C" fn modf_fraction(x: f64) -> f64 {
    let mut i = 0.0;
    // SAFETY: `i` is a valid `double` to write.
    unsafe { modf(x, &mut i) }
}

extern "C" fn modf_integral(x: f64) -> f64 {
    let mut i = 0.0;
    // SAFETY: as above.
    unsafe { modf(x, &mut i) };
    i
}

extern "C" fn modff_fraction(x: f32) -> f32 {
    let mut i = 0.0;
    // SAFETY: `i` is a valid `float` to write.
    unsafe { modff(x, &mut i) }
}

extern "C" fn modff_integral(x: f32) -> f32 {
    let mut i = 0.0;
    // SAFETY: as above.
    unsafe { modff(x, &mut i) };
    i
}

/// PTX's `fns.b32 mask, base, offset` (coalesced-group shuffles on the CPU): the position of
/// the `offset`-th set bit of `mask` counted from bit `base` (inclusive) upward, or downward
/// for a negative `offset`; `0xffffffff` when there is none.
extern "C" fn find_nth_set(mask: u32, base: u32, offset: i32) -> u32 {
    if offset == 0 || base > 31 {
        return u32::MAX;
    }
    let mut left = offset.unsigned_abs();
    let mut pos = base as i32;
    while (0..32).contains(&pos) {
        if mask & (1 << pos) != 0 {
            left -= 1;
            if left == 0 {
                return pos as u32;
            }
        }
        pos += offset.signum();
    }
    u32::MAX
}

/// Every symbol host code may call, by name.
pub(crate) fn symbols() -> Vec<(&'static str, *const u8)> {
    let mut v = libm_f64();
    v.extend(libm_f32());
    v.push(("__pyd_ipow", ipow as *const u8));
    v.push(("__pyd_fns", find_nth_set as *const u8));
    v.push(("ldexp", ldexp as *const u8));
    v.push(("ldexpf", ldexpf as *const u8));
    v.push(("__pyd_frexp_m", frexp_mantissa as *const u8));
    v.push(("__pyd_frexp_e", frexp_exponent as *const u8));
    v.push(("__pyd_frexpf_m", frexpf_mantissa as *const u8));
    v.push(("__pyd_frexpf_e", frexpf_exponent as *const u8));
    v.push(("__pyd_round_digits", round_digits_f64 as *const u8));
    v.push(("__pyd_round_digitsf", round_digits_f32 as *const u8));
    v.push(("__pyd_modf_frac", modf_fraction as *const u8));
    v.push(("__pyd_modf_int", modf_integral as *const u8));
    v.push(("__pyd_modff_frac", modff_fraction as *const u8));
    v.push(("__pyd_modff_int", modff_integral as *const u8));
    v.push(("__pyd_cmath_re", super::cmath::cmath_re as *const u8));
    v.push(("__pyd_cmath_im", super::cmath::cmath_im as *const u8));
    v.push(("__pyd_round_f16", round_f16 as *const u8));
    v.push(("__pyd_round_bf16", round_bf16 as *const u8));
    v.push(("__pyd_f16_bits", f16_bits as *const u8));
    v.push(("__pyd_f16_value", f16_value as *const u8));
    v.push(("__pyd_round_e4m3", round_e4m3 as *const u8));
    v.push(("__pyd_mbar_init", mbar_init as *const u8));
    v.push(("__pyd_mbar_arrive", mbar_arrive as *const u8));
    v.push(("__pyd_mbar_complete_tx", mbar_complete_tx as *const u8));
    v.push(("__pyd_mbar_done", mbar_done as *const u8));
    v.push(("__pyd_bulk_copy", bulk_copy as *const u8));
    v.push(("__pyd_atomic16", atomic16 as *const u8));
    v.push(("__pyd_round_e5m2", round_e5m2 as *const u8));
    v.push(("__pyd_e4m3_bits", e4m3_bits as *const u8));
    v.push(("__pyd_e5m2_bits", e5m2_bits as *const u8));
    v.push(("__pyd_e4m3_value", e4m3_value as *const u8));
    v.push(("__pyd_e5m2_value", e5m2_value as *const u8));
    v.push(("__pyd_print_text", print_text as *const u8));
    v.push(("__pyd_print_i64", print_i64 as *const u8));
    v.push(("__pyd_print_u64", print_u64 as *const u8));
    v.push(("__pyd_print_f64", print_f64 as *const u8));
    v.push(("__pyd_print_bool", print_bool as *const u8));
    v.push(("__pyd_print_repr", print_repr as *const u8));
    v.push(("__pyd_print_flush", print_flush as *const u8));
    v.push(("__pyd_rand_f32", crate::random::host_rand_f32 as *const u8));
    v.push(("__pyd_rand_f64", crate::random::host_rand_f64 as *const u8));
    v.push((
        "__pyd_randn_f32",
        crate::random::host_randn_f32 as *const u8,
    ));
    v.push((
        "__pyd_randn_f64",
        crate::random::host_randn_f64 as *const u8,
    ));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_nth_set_follows_ptx_fns() {
        let m = 0b1011_0100u32;
        assert_eq!(find_nth_set(m, 0, 1), 2);
        assert_eq!(find_nth_set(m, 2, 1), 2);
        assert_eq!(find_nth_set(m, 2, 2), 4);
        assert_eq!(find_nth_set(m, 2, 4), 7);
        assert_eq!(find_nth_set(m, 2, 5), u32::MAX);
        assert_eq!(find_nth_set(m, 7, -2), 5);
        assert_eq!(find_nth_set(m, 7, -4), 2);
        assert_eq!(find_nth_set(m, 7, -5), u32::MAX);
    }

    #[test]
    fn integer_power_wraps_and_handles_negative_exponents() {
        assert_eq!(ipow(3, 4, 1), 81);
        assert_eq!(ipow(2, 0, 1), 1);
        assert_eq!(ipow(2, 64, 1), 0);
        assert_eq!(ipow(-1, -3, 1), -1);
        assert_eq!(ipow(-1, -4, 1), 1);
        assert_eq!(ipow(1, -5, 1), 1);
        assert_eq!(ipow(7, -1, 1), 0);
        assert_eq!(ipow(3, 40, 1) as i32, 3i32.wrapping_pow(40));
    }
}
