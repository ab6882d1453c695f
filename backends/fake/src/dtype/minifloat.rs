//! Generic binary floating-point formats of up to 16 bits: exact decoding to
//! `f64` and correctly rounded (round to nearest, ties to even) encoding from
//! `f64`, subnormals and signed zero included.
//!
//! One parametrised codec serves F16, BF16 and the OCP formats, so the
//! rounding logic exists once and the tests can check every format against
//! the same reference.

/// What a format does with a value whose magnitude rounds above its largest
/// finite value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Overflow {
    /// Becomes infinity (IEEE).
    Infinity,
    /// Becomes the largest finite value of that sign (OCP E4M3, E2M1);
    /// infinities saturate too.
    Saturate,
}

/// How a format spells NaN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Nan {
    /// IEEE: all-ones exponent, nonzero fraction; all-ones exponent with a
    /// zero fraction is infinity.
    Ieee,
    /// Only all-ones exponent and fraction (OCP E4M3, `S.1111.111`); the
    /// other all-ones-exponent encodings are ordinary numbers.
    AllOnes,
    /// No NaN at all (OCP E2M1): NaN encodes as +0.
    None,
}

/// A binary floating-point format of `1 + exp_bits + man_bits` bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Format {
    /// Exponent field width.
    pub exp_bits: u32,
    /// Fraction (trailing significand) field width.
    pub man_bits: u32,
    /// Exponent bias.
    pub bias: i32,
    /// NaN encoding.
    pub nan: Nan,
    /// Overflow behaviour.
    pub overflow: Overflow,
}

/// `2^e` as an `f64`, for `e` in the normal range of `f64`.
#[cfg_attr(not(test), allow(dead_code))]
fn pow2(e: i32) -> f64 {
    debug_assert!((-1022..=1023).contains(&e));
    f64::from_bits(((e + 1023) as u64) << 52)
}

impl Format {
    /// The sign bit.
    pub const fn sign_bit(&self) -> u32 {
        1 << (self.exp_bits + self.man_bits)
    }

    /// The all-ones exponent field value.
    const fn exp_max(&self) -> u32 {
        (1 << self.exp_bits) - 1
    }

    /// The exponent of the smallest normal number.
    const fn emin(&self) -> i32 {
        1 - self.bias
    }

    /// The encoding (without sign) of the largest finite value.
    pub const fn max_finite(&self) -> u32 {
        let all = self.sign_bit() - 1;
        match self.nan {
            // The all-ones exponent is reserved: one exponent down, all
            // fraction bits set.
            Nan::Ieee => all - (1 << self.man_bits),
            // Only the all-ones pattern is NaN.
            Nan::AllOnes => all - 1,
            Nan::None => all,
        }
    }

    /// The encoding of +infinity, for formats that have one.
    pub const fn infinity(&self) -> Option<u32> {
        match self.nan {
            Nan::Ieee => Some(self.exp_max() << self.man_bits),
            _ => None,
        }
    }

    /// The encoding (without sign) this codec produces for NaN: the quiet
    /// NaN with only the top fraction bit set (IEEE), the one NaN (E4M3), or
    /// 0 (E2M1, which has none).
    pub const fn canonical_nan(&self) -> u32 {
        match self.nan {
            Nan::Ieee => (self.exp_max() << self.man_bits) | (1 << (self.man_bits - 1)),
            Nan::AllOnes => self.sign_bit() - 1,
            Nan::None => 0,
        }
    }

    /// Whether `bits` is a NaN of this format.
    #[cfg_attr(not(test), allow(dead_code))]
    pub const fn is_nan(&self, bits: u32) -> bool {
        let mag = bits & (self.sign_bit() - 1);
        let man_mask = (1 << self.man_bits) - 1;
        match self.nan {
            Nan::Ieee => mag >> self.man_bits == self.exp_max() && mag & man_mask != 0,
            Nan::AllOnes => mag == self.sign_bit() - 1,
            Nan::None => false,
        }
    }

    /// The exact value of encoding `bits` (bits above the format are
    /// ignored). The reference decoder: the kernels use the branch-free
    /// ones in `formats`, which the tests check against this for every
    /// encoding.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn decode(&self, bits: u32) -> f64 {
        let m_bits = self.man_bits;
        let negative = bits & self.sign_bit() != 0;
        let exp = (bits >> m_bits) & self.exp_max();
        let man = bits & ((1 << m_bits) - 1);
        let magnitude = if self.is_nan(bits) {
            f64::NAN
        } else if self.nan == Nan::Ieee && exp == self.exp_max() {
            f64::INFINITY
        } else if exp == 0 {
            // Subnormal: no implicit bit, the smallest normal's exponent.
            f64::from(man) * pow2(self.emin() - m_bits as i32)
        } else {
            f64::from(man | (1 << m_bits)) * pow2(exp as i32 - self.bias - m_bits as i32)
        };
        if negative {
            -magnitude
        } else {
            magnitude
        }
    }

    /// The encoding of `x` rounded to nearest, ties to even; see `Overflow`
    /// and `Nan` for what happens out of range and to NaN.
    pub fn encode(&self, x: f64) -> u32 {
        let sign = if x.is_sign_negative() { self.sign_bit() } else { 0 };
        if x.is_nan() {
            return match self.nan {
                Nan::None => 0,
                _ => sign | self.canonical_nan(),
            };
        }
        let overflowed = sign
            | match (self.overflow, self.infinity()) {
                (Overflow::Infinity, Some(inf)) => inf,
                _ => self.max_finite(),
            };
        if x.is_infinite() {
            return overflowed;
        }
        let bits = x.abs().to_bits();
        let biased = (bits >> 52) as i32;
        if biased == 0 {
            // f64 subnormals (and zero) lie far below half the smallest
            // subnormal of any format here: they round to zero.
            return sign;
        }
        let exp = biased - 1023;
        let significand = (bits & ((1 << 52) - 1)) | (1 << 52);
        let m_bits = self.man_bits as i32;
        // How many low bits of the 53-bit significand fall below the
        // target's last place: more for values in the subnormal range,
        // whose last place is fixed at emin - man_bits.
        let shift = 52 - m_bits + (self.emin() - exp).max(0);
        if shift > 54 {
            // Below half the smallest subnormal: zero.
            return sign;
        }
        let mut q = significand >> shift;
        let rem = significand & ((1u64 << shift) - 1);
        let half = 1u64 << (shift - 1);
        if rem > half || (rem == half && q & 1 == 1) {
            q += 1;
        }
        // A normal's q carries its implicit bit, which adds one to the
        // exponent field; rounding up to the next power of two carries into
        // it the same way. A subnormal's q is its fraction field, and a
        // carry out of it makes the smallest normal, as it should.
        let magnitude = if exp >= self.emin() { (((exp - self.emin()) as u64) << m_bits) + q } else { q };
        if magnitude > u64::from(self.max_finite()) {
            return overflowed;
        }
        sign | magnitude as u32
    }
}
