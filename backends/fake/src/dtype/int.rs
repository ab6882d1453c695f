//! Integer conversion rules: float to integer rounds to nearest even and
//! saturates (NaN gives 0); integer to float rounds once, even from `i64`
//! values too wide for `f64`; 4-bit integers live sign-extended in `i8`.

/// `x` rounded to an integer, ties to even, for conversion to an integer
/// type only: the sign of a zero result is not kept. NaN and infinities come
/// back unchanged.
///
/// Written with the `2^52` trick rather than `f64::round_ties_even`, which
/// becomes a library call on baseline x86-64 and keeps cast loops from
/// vectorising: adding and subtracting `2^52` leaves no fraction bits, and
/// the hardware rounds that addition to nearest even.
#[inline]
pub(crate) fn round_even_for_int(x: f64) -> f64 {
    const TWO_52: f64 = 4_503_599_627_370_496.0;
    if x.abs() < TWO_52 {
        let t = TWO_52.copysign(x);
        (x + t) - t
    } else {
        // Already an integer (or NaN, or infinite).
        x
    }
}

/// `x` rounded to nearest even and saturated to `[min, max]`; NaN gives 0.
/// Selects rather than branches, so cast loops vectorise.
#[inline]
pub(crate) fn f64_to_int(x: f64, min: i64, max: i64) -> i64 {
    // For i64, `max as f64` is 2^63, one above max; the saturating `as`
    // below takes care of it.
    let r = round_even_for_int(x).max(min as f64).min(max as f64);
    if x.is_nan() {
        0
    } else {
        r as i64
    }
}

/// `f64_to_int` for ranges inside `i32`, through the 32-bit conversion,
/// which SSE2 has in packed form (the 64-bit one it has not); comparisons
/// written out map to `maxpd`/`minpd`, where `f64::max` would add NaN
/// handling.
#[inline]
pub(crate) fn f64_to_small_int(x: f64, min: i32, max: i32) -> i32 {
    let (lo, hi) = (f64::from(min), f64::from(max));
    let r = round_even_for_int(x);
    let r = if r < lo { lo } else { r };
    let r = if r > hi { hi } else { r };
    let r = if x.is_nan() { 0.0 } else { r };
    // SAFETY: `r` is an integer in `[min, max]` (NaN became 0), so it is
    // representable in `i32`.
    unsafe { r.to_int_unchecked::<i32>() }
}

/// `x` as `f64` rounded to odd: exact when it fits in 53 bits, else
/// truncated with the last kept bit forced to 1 when anything was dropped.
///
/// Rounding to odd first and then to nearest even in a format with at most
/// 51 fraction bits gives the same result as rounding `x` once, so `i64`
/// converts correctly to every narrow float through this `f64`.
pub(crate) fn i64_to_f64_odd(x: i64) -> f64 {
    let magnitude = x.unsigned_abs();
    let width = 64 - magnitude.leading_zeros();
    let value = if width <= 53 {
        magnitude
    } else {
        let dropped = width - 53;
        let kept = magnitude >> dropped << dropped;
        if kept == magnitude {
            kept
        } else {
            kept | (1 << dropped)
        }
    };
    // `value` has at most 53 significant bits: this conversion is exact.
    let f = value as f64;
    if x < 0 {
        -f
    } else {
        f
    }
}

/// The signed 4-bit integer in the low nibble of `nibble`, sign-extended.
#[inline]
pub(crate) fn i4_from_nibble(nibble: u8) -> i8 {
    ((nibble << 4) as i8) >> 4
}

/// `x` wrapped to 4 bits (two's complement truncation), sign-extended.
#[inline]
pub(crate) fn wrap_i4(x: i64) -> i8 {
    i4_from_nibble(x as u8 & 0xF)
}

/// `x` truncated toward zero and saturated to `[min, max]`; NaN gives 0:
/// C's `static_cast` where it is defined, and a defined answer where C
/// leaves it undefined (out of range, NaN).
#[inline]
pub(crate) fn f64_to_int_trunc(x: f64, min: i64, max: i64) -> i64 {
    // Rust's `as` truncates toward zero, saturates at i64's range and maps
    // NaN to 0.
    (x as i64).clamp(min, max)
}

/// `f64_to_int_trunc` for ranges inside `i32`, through the 32-bit
/// conversion, which vectorises.
#[inline]
pub(crate) fn f64_to_small_int_trunc(x: f64, min: i32, max: i32) -> i32 {
    (x as i32).clamp(min, max)
}
