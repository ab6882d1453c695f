//! The index space of the strided built-in kernels (`copy_strided_<t>`,
//! `cast_strided_<s>_<d>`, `fill_strided_<t>`): up to 16 dimensions, sizes
//! and per-side strides in elements, walked in row-major order of the
//! sizes (the "logical" order, by which work is split). Every backend's
//! built-ins validate and plan with this one, so that they refuse the same
//! shapes: the fake's kernels walk it, the OpenCL backend's host side
//! checks and plans with it.
//!
//! `Walk::new` validates the shape and simplifies it without changing which
//! element goes where: dimensions of size 1 are dropped, and neighbours that
//! are one run in memory on every side are merged, so a contiguous copy
//! becomes one dimension with stride 1 (the dense path) and a strided one
//! walks long innermost runs. Nothing here allocates.
use std::ops::Range;
use xdal_abi::XDAL_STRIDED_MAX_DIMS;

/// The most dimensions a strided kernel takes (`XDAL_STRIDED_MAX_DIMS`).
pub const MAX_DIMS: usize = XDAL_STRIDED_MAX_DIMS as usize;
/// The byte size of a sizes or strides argument: `MAX_DIMS` 64-bit entries.
pub const DIMS_BYTES: usize = MAX_DIMS * 8;

/// A validated, simplified strided index space shared by `SIDES` arrays
/// (2 for a copy: source then destination; 1 for a fill).
#[derive(Clone, Copy, Debug)]
pub struct Walk<const SIDES: usize> {
    /// Dimensions left after simplification (0 for a single element).
    ndim: usize,
    /// Their sizes, each at least 2.
    sizes: [usize; MAX_DIMS],
    /// Their strides in elements, per side.
    strides: [[isize; MAX_DIMS]; SIDES],
    /// Elements in all (the product of the sizes given, which may be 0).
    count: usize,
}

impl<const SIDES: usize> Walk<SIDES> {
    /// The walk over `sizes[..ndim]` with `strides[side][..ndim]`; entries
    /// past `ndim` are ignored. `ndim` beyond 16, an element count or a
    /// stride that does not fit the address space: refused, with a message
    /// (the kernels' `XDAL_ERROR_INVALID_VALUE`).
    pub fn new(ndim: u64, sizes: &[u64; MAX_DIMS], strides: [&[i64; MAX_DIMS]; SIDES]) -> Result<Self, String> {
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
            // Every size is at least 1 here (the count is not 0).
            let size = sizes[k] as usize;
            if size == 1 {
                continue;
            }
            let mut stride = [0isize; SIDES];
            for (s, side) in stride.iter_mut().zip(&strides) {
                *s = isize::try_from(side[k]).map_err(|_| format!("stride {} is too large", side[k]))?;
            }
            // Merge into the previous dimension when, on every side, a step
            // of that one is exactly a full run of this one.
            let d = walk.ndim;
            let merges = d > 0
                && (0..SIDES).all(|side| stride[side].checked_mul(size as isize) == Some(walk.strides[side][d - 1]));
            if merges {
                walk.sizes[d - 1] *= size;
                for (side, &s) in stride.iter().enumerate() {
                    walk.strides[side][d - 1] = s;
                }
            } else {
                walk.sizes[d] = size;
                for (side, &s) in stride.iter().enumerate() {
                    walk.strides[side][d] = s;
                }
                walk.ndim += 1;
            }
        }
        Ok(walk)
    }

    /// Elements in all.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Whether every side is one contiguous run in logical order (a single
    /// element, or one dimension of stride 1): the dense loops apply.
    pub fn is_dense(&self) -> bool {
        self.ndim == 0 || (self.ndim == 1 && (0..SIDES).all(|side| self.strides[side][0] == 1))
    }

    /// The lowest and highest element offsets `side` reaches (not empty:
    /// the count must not be 0); refused if they do not fit in 128 bits.
    pub fn span(&self, side: usize) -> Result<(i128, i128), String> {
        debug_assert!(self.count > 0);
        let overflow = || "the offsets overflow".to_string();
        let (mut lo, mut hi) = (0i128, 0i128);
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

    /// Whether `side` steps 0 along a dimension (of size 2 or more): its
    /// elements repeat, which a destination must not do.
    pub fn broadcasts(&self, side: usize) -> bool {
        self.strides[side][..self.ndim].contains(&0)
    }

    /// Whether no two elements of `side` can be at the same offset, proved
    /// by the usual sufficient test: ordered by stride magnitude, each
    /// stride steps past everything the smaller ones reach. (A `false`
    /// means "not proved": some layouts that fail it do not alias.)
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
            // At most 16 terms below 2^127 each: this cannot overflow
            // past the checks `span` made, but saturate to be safe.
            reach = reach.saturating_add(stride.saturating_mul(steps));
        }
        true
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

    /// Whether every stride of `side` is even (no two of its packed 4-bit
    /// elements share a byte).
    pub fn all_even(&self, side: usize) -> bool {
        self.strides[side][..self.ndim].iter().all(|s| s % 2 == 0)
    }

    /// Whether sides `a` and `b` put every element at the same offset.
    pub fn same_offsets(&self, a: usize, b: usize) -> bool {
        self.strides[a][..self.ndim] == self.strides[b][..self.ndim]
    }

    /// The innermost strides, one per side (0 for a single element), which
    /// every run `runs` reports advances by.
    pub fn inner_strides(&self) -> [isize; SIDES] {
        match self.ndim {
            0 => [0; SIDES],
            d => std::array::from_fn(|side| self.strides[side][d - 1]),
        }
    }

    /// Calls `run(offsets, len)` for the elements of `range` (logical
    /// indices, inside `0..count`) in order, one call per stretch along the
    /// innermost dimension: `offsets[side]` is the first element's offset
    /// on that side, and the next `len - 1` follow at `inner_strides`.
    pub fn runs(&self, range: Range<usize>, mut run: impl FnMut([isize; SIDES], usize)) {
        debug_assert!(range.end <= self.count);
        if range.is_empty() {
            return;
        }
        if self.ndim == 0 {
            run([0; SIDES], 1);
            return;
        }
        let last = self.ndim - 1;
        // The multi-index of `range.start`, and its offsets. Offsets are
        // computed wrapping: the true values fit (`span` checked them) and
        // wrapping arithmetic gets them right through any intermediate.
        let mut index = [0usize; MAX_DIMS];
        let mut offsets = [0isize; SIDES];
        let mut rest = range.start;
        for k in (0..self.ndim).rev() {
            index[k] = rest % self.sizes[k];
            rest /= self.sizes[k];
            for (side, offset) in offsets.iter_mut().enumerate() {
                *offset = offset.wrapping_add(self.strides[side][k].wrapping_mul(index[k] as isize));
            }
        }
        let mut position = range.start;
        loop {
            let len = (self.sizes[last] - index[last]).min(range.end - position);
            run(offsets, len);
            position += len;
            if position >= range.end {
                return;
            }
            // Back to the start of the row, then carry into the outer
            // dimensions (there is a next row: `position < count`).
            for (side, offset) in offsets.iter_mut().enumerate() {
                *offset = offset.wrapping_sub(self.strides[side][last].wrapping_mul(index[last] as isize));
            }
            index[last] = 0;
            let mut k = last;
            loop {
                k -= 1;
                index[k] += 1;
                for (side, offset) in offsets.iter_mut().enumerate() {
                    *offset = offset.wrapping_add(self.strides[side][k]);
                }
                if index[k] < self.sizes[k] {
                    break;
                }
                for (side, offset) in offsets.iter_mut().enumerate() {
                    *offset = offset.wrapping_sub(self.strides[side][k].wrapping_mul(self.sizes[k] as isize));
                }
                index[k] = 0;
            }
        }
    }
}
