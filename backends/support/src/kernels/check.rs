//! The array checks of the fake's kernels (builtin/memory.rs `Array`),
//! made on the host before a launch: an OpenCL kernel cannot refuse.
use super::dtype::DType;

/// The bytes an array argument covers, once checked.
#[derive(Clone, Copy, Debug)]
pub(super) struct Span {
    pub base: usize,
    pub bytes: usize,
}

impl Span {
    /// `n` elements of `t` at `base` (`what` names the argument): NULL
    /// with elements to touch, a size or end beyond the address space, or
    /// a base misaligned for an unpacked `t` are refused, as the fake
    /// refuses them (alignment even when `n` is 0).
    pub fn new(what: &str, base: u64, n: u64, t: DType) -> Result<Span, String> {
        let bytes = t.bytes_for(n).ok_or_else(|| format!("{what}: {n} elements do not fit the address space"))?;
        if bytes > 0 && base == 0 {
            return Err(format!("{what} is NULL"));
        }
        let base = usize::try_from(base).map_err(|_| format!("{what} is beyond the address space"))?;
        if base.checked_add(bytes).is_none() {
            return Err(format!("{what}: {n} elements from {base:#x} run past the address space"));
        }
        if !t.is_packed() && base % t.align() != 0 {
            return Err(format!("{what} ({base:#x}) is not aligned to {} bytes", t.align()));
        }
        Ok(Span { base, bytes })
    }

    /// The array holding the element offsets `lo..=hi` (possibly negative)
    /// from `base`, as the fake's `Array::spanning`: for packed types it
    /// starts on the byte holding offset `lo`.
    pub fn spanning(what: &str, base: u64, lo: i128, hi: i128, t: DType) -> Result<Span, String> {
        debug_assert!(lo <= hi);
        if base == 0 {
            return Err(format!("{what} is NULL"));
        }
        let reach = || format!("{what}: offsets {lo}..={hi} from {base:#x} leave the address space");
        let first = if t.is_packed() { lo.div_euclid(2) * 2 } else { lo };
        let offset = first.checked_mul(i128::from(t.bits)).ok_or_else(reach)? / 8;
        let start = i128::from(base).checked_add(offset).ok_or_else(reach)?;
        let count = hi.checked_sub(first).and_then(|c| u64::try_from(c).ok()?.checked_add(1)).ok_or_else(reach)?;
        isize::try_from(-first).map_err(|_| reach())?;
        let start = usize::try_from(start).map_err(|_| reach())?;
        Span::new(what, start as u64, count, t)
    }

    /// Whether the two share a byte.
    pub fn overlaps(&self, other: &Span) -> bool {
        self.bytes > 0 && other.bytes > 0 && self.base < other.base + other.bytes && other.base < self.base + self.bytes
    }
}
