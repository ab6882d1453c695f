//! The strided kernels' index space as the fake's `layout::Walk` validates
//! and simplifies it (dimensions of size 1 dropped, neighbours that are
//! one run on every side merged), for the host's checks and plan; the
//! kernels walk the shape as given, which reaches the same elements in the
//! same order.
use super::ArgValues;

/// The most dimensions (`XDAL_STRIDED_MAX_DIMS`).
pub(super) const MAX_DIMS: usize = xdal_abi::XDAL_STRIDED_MAX_DIMS as usize;

/// A validated, simplified shape over `SIDES` arrays (source then
/// destination, or the destination alone).
#[derive(Clone, Copy, Debug)]
pub(super) struct Walk<const SIDES: usize> {
    ndim: usize,
    sizes: [usize; MAX_DIMS],
    strides: [[isize; MAX_DIMS]; SIDES],
    count: usize,
}

impl ArgValues<'_> {
    /// Argument `i` as sixteen native-endian 64-bit words.
    pub fn words(&self, i: usize) -> [u64; MAX_DIMS] {
        std::array::from_fn(|k| u64::from_ne_bytes(self.0[i][8 * k..8 * k + 8].try_into().expect("8 bytes")))
    }
}

impl<const SIDES: usize> Walk<SIDES> {
    /// `ndim` above 16, an element count or a stride beyond the address
    /// space are refused.
    pub fn new(ndim: u64, sizes: &[u64; MAX_DIMS], strides: [&[u64; MAX_DIMS]; SIDES]) -> Result<Self, String> {
        let ndim = usize::try_from(ndim)
            .ok()
            .filter(|&d| d <= MAX_DIMS)
            .ok_or_else(|| format!("ndim is {ndim}, above {MAX_DIMS}"))?;
        let too_many = || format!("the sizes {:?} overflow the address space", &sizes[..ndim]);
        // An empty view is empty whatever its other sizes.
        let mut count = usize::from(!sizes[..ndim].contains(&0));
        for &size in &sizes[..ndim] {
            count = count.checked_mul(usize::try_from(size).map_err(|_| too_many())?).ok_or_else(too_many)?;
        }
        let mut walk = Walk { ndim: 0, sizes: [0; MAX_DIMS], strides: [[0; MAX_DIMS]; SIDES], count };
        if count == 0 {
            return Ok(walk);
        }
        for k in 0..ndim {
            let size = sizes[k] as usize;
            if size == 1 {
                continue;
            }
            let mut stride = [0isize; SIDES];
            for (s, side) in stride.iter_mut().zip(&strides) {
                // Strides travel as int64_t bits.
                *s = isize::try_from(side[k] as i64).map_err(|_| format!("stride {} is too large", side[k] as i64))?;
            }
            let d = walk.ndim;
            let merges = d > 0
                && (0..SIDES).all(|side| stride[side].checked_mul(size as isize) == Some(walk.strides[side][d - 1]));
            let at = if merges { d - 1 } else { d };
            walk.sizes[at] = if merges { walk.sizes[at] * size } else { size };
            for (side, &s) in stride.iter().enumerate() {
                walk.strides[side][at] = s;
            }
            walk.ndim = at + 1;
        }
        Ok(walk)
    }

    pub fn count(&self) -> usize {
        self.count
    }

    /// Whether `side` alone is contiguous from offset 0 in logical order:
    /// logical index i is element i.
    pub fn is_row_major(&self, side: usize) -> bool {
        let mut step = 1isize;
        for k in (0..self.ndim).rev() {
            if self.strides[side][k] != step {
                return false;
            }
            step = step.wrapping_mul(self.sizes[k] as isize);
        }
        true
    }

    /// Whether every stride of `side` is even (no two of its packed
    /// elements share a byte).
    pub fn all_even(&self, side: usize) -> bool {
        self.strides[side][..self.ndim].iter().all(|s| s % 2 == 0)
    }

    /// The lowest and highest offsets `side` reaches (count not 0).
    pub fn span(&self, side: usize) -> Result<(i128, i128), String> {
        let (mut lo, mut hi) = (0i128, 0i128);
        let overflow = || "the offsets overflow".to_string();
        for k in 0..self.ndim {
            let reach =
                (self.strides[side][k] as i128).checked_mul((self.sizes[k] - 1) as i128).ok_or_else(overflow)?;
            if reach < 0 {
                lo = lo.checked_add(reach).ok_or_else(overflow)?;
            } else {
                hi = hi.checked_add(reach).ok_or_else(overflow)?;
            }
        }
        Ok((lo, hi))
    }

    /// Whether `side` steps 0 along a dimension (of size 2 or more).
    pub fn broadcasts(&self, side: usize) -> bool {
        self.strides[side][..self.ndim].contains(&0)
    }

    /// Whether no two elements of `side` can coincide, by the fake's
    /// sufficient test: by stride magnitude, each stride steps past all
    /// that the smaller ones reach.
    pub fn is_one_to_one(&self, side: usize) -> bool {
        let mut dims: [(u128, u128); MAX_DIMS] = [(0, 0); MAX_DIMS];
        for (k, dim) in dims[..self.ndim].iter_mut().enumerate() {
            *dim = (self.strides[side][k].unsigned_abs() as u128, self.sizes[k] as u128 - 1);
        }
        let dims = &mut dims[..self.ndim];
        dims.sort_unstable();
        let mut reach: u128 = 0;
        for &(stride, steps) in dims.iter() {
            if stride <= reach {
                return false;
            }
            reach = reach.saturating_add(stride.saturating_mul(steps));
        }
        true
    }

    /// Whether sides `a` and `b` put every element at the same offset.
    pub fn same_offsets(&self, a: usize, b: usize) -> bool {
        self.strides[a][..self.ndim] == self.strides[b][..self.ndim]
    }
}
