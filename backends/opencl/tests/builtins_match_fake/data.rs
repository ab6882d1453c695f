//! Inputs: the fourteen types as the tests need them, a deterministic
//! random source, element bytes that mix special encodings (zeros,
//! infinities, NaNs quiet and signalling with payloads, subnormals,
//! extremes) with moderate values (ties and rounding boundaries of every
//! conversion) and raw random bits, and the byte layout of strided views.

/// An element type: its name, storage bits, and for floats the exponent
/// and fraction widths and the bias.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ty {
    pub name: &'static str,
    pub bits: u32,
    pub float: Option<(u32, u32, u32)>,
    pub is_bool: bool,
}

const fn float(name: &'static str, bits: u32, exp: u32, man: u32, bias: u32) -> Ty {
    Ty { name, bits, float: Some((exp, man, bias)), is_bool: false }
}

const fn int(name: &'static str, bits: u32) -> Ty {
    Ty { name, bits, float: None, is_bool: false }
}

/// Every type, in ABI order.
pub const TYPES: [Ty; 14] = [
    float("f64", 64, 11, 52, 1023),
    float("f32", 32, 8, 23, 127),
    float("f16", 16, 5, 10, 15),
    float("bf16", 16, 8, 7, 127),
    float("f8e4m3", 8, 4, 3, 7),
    float("f8e5m2", 8, 5, 2, 15),
    float("f4e2m1", 4, 2, 1, 1),
    int("i64", 64),
    int("i32", 32),
    int("i16", 16),
    int("i8", 8),
    int("u8", 8),
    int("i4", 4),
    Ty { name: "bool", bits: 8, float: None, is_bool: true },
];

impl Ty {
    pub fn packed(self) -> bool {
        self.bits == 4
    }

    /// Bytes of `n` elements.
    pub fn bytes(self, n: usize) -> usize {
        if self.packed() {
            n.div_ceil(2)
        } else {
            n * self.bits as usize / 8
        }
    }

    /// Bytes of a scalar argument.
    pub fn scalar_bytes(self) -> usize {
        self.bytes(1).max(1)
    }
}

/// A small deterministic random source (64-bit LCG, high bits mixed).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let x = self.0;
        x ^ (x >> 29) ^ (x << 17)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// What values an input holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mix {
    /// Specials, moderate values and random bits.
    Any,
    /// Moderate finite values only, of varied magnitudes: sums and products
    /// whose rounding shows the order of operations.
    Finite,
}

/// The bits of one element of `t`.
pub fn element(t: Ty, rng: &mut Rng, mix: Mix) -> u64 {
    let mask = if t.bits == 64 { u64::MAX } else { (1u64 << t.bits) - 1 };
    let pick = rng.below(8);
    let bits = match t.float {
        Some(format) if mix == Mix::Finite || pick < 4 => moderate_float(format, rng),
        Some(format) if pick < 6 => special_float(format, rng),
        None if !t.is_bool && pick < 3 => special_int(t.bits, rng),
        None if !t.is_bool && pick < 6 => (rng.below(600) as i64 - 300) as u64,
        // Bools: mostly 0 and 1, some other nonzero bytes.
        None if t.is_bool && pick < 6 => rng.below(2),
        _ => rng.next(),
    };
    bits & mask
}

/// A float with a random fraction and an exponent from a little below 1
/// to beyond the fraction's reach (ties and rounding boundaries of float to
/// integer and float to float conversions), either sign.
fn moderate_float((exp_bits, man_bits, bias): (u32, u32, u32), rng: &mut Rng) -> u64 {
    let top = (1u64 << exp_bits) - 2;
    let lo = u64::from(bias).saturating_sub(3).max(1);
    let hi = (u64::from(bias) + u64::from(man_bits) + 12).min(top).max(lo);
    let exponent = lo + rng.below(hi - lo + 1);
    let man = rng.next() & ((1u64 << man_bits) - 1);
    // A short fraction now and then: exact halves, i.e. ties.
    let man = if rng.below(3) == 0 { man & !((1u64 << man_bits.saturating_sub(3)) - 1) } else { man };
    let sign = rng.below(2) << (exp_bits + man_bits);
    sign | exponent << man_bits | man
}

/// Zeros, infinities, NaNs (quiet, signalling, with payloads), subnormals,
/// the extremes of the format, either sign.
fn special_float((exp_bits, man_bits, _): (u32, u32, u32), rng: &mut Rng) -> u64 {
    let all_exp = ((1u64 << exp_bits) - 1) << man_bits;
    let man_mask = (1u64 << man_bits) - 1;
    let top_man = 1u64 << (man_bits - 1);
    let candidates = [
        0,
        all_exp,
        all_exp | top_man,
        all_exp | 1,
        all_exp | (rng.next() & man_mask).max(1),
        all_exp | top_man | (rng.next() & man_mask),
        all_exp | man_mask,
        all_exp - 1,
        all_exp - (1 << man_bits),
        1,
        man_mask,
        rng.next() & man_mask,
        1 << man_bits,
    ];
    let sign = rng.below(2) << (exp_bits + man_bits);
    sign | candidates[rng.below(candidates.len() as u64) as usize]
}

/// The extremes of a `bits`-wide integer and their neighbours, and the
/// magnitudes where float formats stop being exact or E4M3 overflows.
fn special_int(bits: u32, rng: &mut Rng) -> u64 {
    let max = if bits == 64 { i64::MAX } else { (1i64 << (bits - 1)) - 1 };
    let candidates = [
        0,
        1,
        -1,
        max,
        max - 1,
        -max - 1,
        -max,
        464,
        465,
        -464,
        -465,
        448,
        (1 << 24) + 1,
        (1 << 53) + 1,
        -(1 << 53) - 3,
        i64::MAX - 1024,
        65520,
        -65519,
    ];
    candidates[rng.below(candidates.len() as u64) as usize] as u64
}

/// `n` elements of `t` as bytes (packed: two a byte, the last high nibble
/// random when `n` is odd).
pub fn elements(t: Ty, n: usize, rng: &mut Rng, mix: Mix) -> Vec<u8> {
    let mut out = rng.bytes(t.bytes(n));
    for i in 0..n {
        let bits = element(t, rng, mix);
        if t.packed() {
            let shift = (i % 2) * 4;
            out[i / 2] = (out[i / 2] & !(0xF << shift)) | ((bits as u8 & 0xF) << shift);
        } else {
            let width = t.bits as usize / 8;
            out[i * width..(i + 1) * width].copy_from_slice(&bits.to_le_bytes()[..width]);
        }
    }
    out
}

/// A scalar argument of `t` (a 4-bit one with a random high nibble, a
/// bool any byte: kernels must read only what the ABI says).
pub fn scalar(t: Ty, rng: &mut Rng, mix: Mix) -> Vec<u8> {
    let bits = element(t, rng, mix);
    if t.packed() {
        vec![(bits as u8 & 0xF) | (rng.next() as u8 & 0xF0)]
    } else {
        bits.to_le_bytes()[..t.scalar_bytes()].to_vec()
    }
}

/// Guard bytes around every array, random: writes outside the elements
/// show as differences.
pub const GUARD: usize = 8;

/// The buffer length and the byte offset of element 0 for a view of `t`
/// reaching element offsets `lo..=hi` (nibbles for packed types).
pub fn layout(t: Ty, lo: i64, hi: i64) -> (usize, usize) {
    if t.packed() {
        let (first, last) = (lo.div_euclid(2), hi.div_euclid(2));
        ((last - first + 1) as usize + 2 * GUARD, GUARD + (-first) as usize)
    } else {
        let width = (t.bits / 8) as i64;
        (((hi - lo + 1) * width) as usize + 2 * GUARD, GUARD + (-lo * width) as usize)
    }
}

/// The lowest and highest offsets of a strided view.
pub fn reach(sizes: &[u64], strides: &[i64]) -> (i64, i64) {
    if sizes.contains(&0) {
        return (0, 0);
    }
    sizes.iter().zip(strides).fold((0, 0), |(lo, hi), (&n, &s)| {
        let r = s * (n as i64 - 1);
        if r < 0 {
            (lo + r, hi)
        } else {
            (lo, hi + r)
        }
    })
}

/// Sixteen 64-bit words, the first from `values`, the rest random (the
/// kernels must ignore them).
pub fn words<T: Copy + Into<i128>>(values: &[T], rng: &mut Rng) -> Vec<u8> {
    (0..16)
        .flat_map(|k| match values.get(k) {
            Some(&v) => (v.into() as u64).to_ne_bytes(),
            None => rng.next().to_ne_bytes(),
        })
        .collect()
}

/// A u64 argument.
pub fn u64_arg(v: u64) -> Vec<u8> {
    v.to_ne_bytes().to_vec()
}
