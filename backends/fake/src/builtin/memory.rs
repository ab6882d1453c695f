//! Array arguments of the built-in kernels: validation (NULL, alignment,
//! size), overlap tests, element access for every type including the packed
//! ones, and slices for the fast loops.
//!
//! Blocks of one launch run on several threads at once; every kernel only
//! forms `&mut` slices over its own block's share, and shares of packed
//! types start on whole bytes, so no two blocks ever touch the same byte.
use crate::dtype::Elem;
use std::marker::PhantomData;
use std::mem::{align_of, size_of};
use std::ops::Range;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
use xdal_abi::xdal_status;

/// `n` elements of `E` at `base`, checked for use.
#[derive(Clone, Copy)]
pub(crate) struct Array<E> {
    base: *mut u8,
    n: usize,
    bytes: usize,
    elem: PhantomData<E>,
}

impl<E: Elem> Array<E> {
    /// Checks an array argument: NULL with `n > 0` is
    /// `XDAL_ERROR_NULL_POINTER`; a size that overflows, or a base not
    /// aligned for `E`, is `XDAL_ERROR_INVALID_VALUE`.
    pub fn new(base: *mut u8, n: u64) -> Result<Self, xdal_status> {
        let bytes = E::DTYPE.bytes_for(n).ok_or(xdal_status::XDAL_ERROR_INVALID_VALUE)?;
        if bytes > 0 && base.is_null() {
            return Err(xdal_status::XDAL_ERROR_NULL_POINTER);
        }
        if (base as usize).checked_add(bytes).is_none() {
            return Err(xdal_status::XDAL_ERROR_INVALID_VALUE);
        }
        if !E::DTYPE.is_packed() {
            // The value types of unpacked types have their storage layout.
            debug_assert_eq!(size_of::<E>() * 8, E::DTYPE.bits() as usize);
            if base as usize % align_of::<E>() != 0 {
                return Err(xdal_status::XDAL_ERROR_INVALID_VALUE);
            }
        }
        Ok(Array { base, n: n as usize, bytes, elem: PhantomData })
    }

    /// The array that holds the elements at offsets `lo..=hi` (in elements,
    /// possibly negative) from `base`, for strided access, and the index in
    /// it of the element at `base` (what an offset is added to). For packed
    /// types the array starts on the byte holding offset `lo`. NULL `base`
    /// is `XDAL_ERROR_NULL_POINTER`; a span that leaves the address space,
    /// or a misaligned `base`, is `XDAL_ERROR_INVALID_VALUE`.
    pub fn spanning(base: *mut u8, lo: i128, hi: i128) -> Result<(Self, isize), xdal_status> {
        debug_assert!(lo <= hi);
        if base.is_null() {
            return Err(xdal_status::XDAL_ERROR_NULL_POINTER);
        }
        let invalid = xdal_status::XDAL_ERROR_INVALID_VALUE;
        // The first element of the array: `lo`, or for packed types the
        // low nibble of the byte holding `lo`.
        let first = if E::DTYPE.is_packed() { lo.div_euclid(2) * 2 } else { lo };
        let width = i128::from(E::DTYPE.bits());
        let offset = first.checked_mul(width).ok_or(invalid)? / 8;
        let start = (base as usize as i128).checked_add(offset).ok_or(invalid)?;
        let count = hi.checked_sub(first).and_then(|c| u64::try_from(c).ok()?.checked_add(1)).ok_or(invalid)?;
        let origin = isize::try_from(-first).map_err(|_| invalid)?;
        let start = usize::try_from(start).map_err(|_| invalid)?;
        // `new` checks the end against the address space and the alignment
        // (the same as `base`'s, `first` being whole elements).
        Ok((Self::new(start as *mut u8, count)?, origin))
    }

    /// Element count.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether the two arrays share a byte.
    pub fn overlaps<F: Elem>(&self, other: &Array<F>) -> bool {
        let (a, b) = (self.base as usize, other.base as usize);
        self.bytes > 0 && other.bytes > 0 && a < b + other.bytes && b < a + self.bytes
    }

    /// Whether the two arrays are the same memory element for element
    /// (same start, same element width), the one overlap elementwise
    /// kernels accept.
    pub fn is_same<F: Elem>(&self, other: &Array<F>) -> bool {
        self.base == other.base && E::DTYPE.bits() == F::DTYPE.bits()
    }

    /// Element `i`.
    ///
    /// # Safety
    /// `i < len()`, and no other thread writes that element meanwhile.
    #[inline(always)]
    pub unsafe fn get(&self, i: usize) -> E {
        debug_assert!(i < self.n);
        if E::DTYPE.is_packed() {
            // SAFETY: element `i` lives in byte `i / 2`, inside the array.
            let byte = unsafe { self.base.add(i / 2).read() };
            E::from_bits(u64::from(byte >> ((i & 1) * 4)))
        } else {
            // SAFETY: inside the array, aligned (checked in `new`).
            unsafe { self.base.cast::<E>().add(i).read() }
        }
    }

    /// Sets element `i`; for packed types the other nibble of its byte is
    /// kept.
    ///
    /// # Safety
    /// `i < len()`, and no other thread reads or writes that element's
    /// byte meanwhile.
    #[inline(always)]
    pub unsafe fn set(&self, i: usize, value: E) {
        debug_assert!(i < self.n);
        if E::DTYPE.is_packed() {
            let shift = (i & 1) * 4;
            let nibble = (value.to_bits() as u8 & 0xF) << shift;
            // SAFETY: element `i` lives in byte `i / 2`, inside the array,
            // which no other thread uses meanwhile.
            unsafe {
                let p = self.base.add(i / 2);
                p.write((p.read() & !(0xF << shift)) | nibble);
            }
        } else {
            // SAFETY: inside the array, aligned (checked in `new`).
            unsafe { self.base.cast::<E>().add(i).write(value) }
        }
    }

    /// Sets element `i` while other threads may be setting other elements
    /// of the same byte (packed types, strided): the nibble is updated with
    /// atomic operations on its byte. Unpacked types write as `set` does.
    ///
    /// # Safety
    /// `i < len()`; no other thread uses element `i` meanwhile, and every
    /// other access to its byte meanwhile goes through this method.
    #[inline(always)]
    pub unsafe fn set_shared(&self, i: usize, value: E) {
        debug_assert!(i < self.n);
        if E::DTYPE.is_packed() {
            let shift = (i & 1) * 4;
            let nibble = (value.to_bits() as u8 & 0xF) << shift;
            // SAFETY: the byte lies inside the array and is only accessed
            // atomically meanwhile (per the contract), so an `AtomicU8`
            // over it is sound.
            let byte = unsafe { AtomicU8::from_ptr(self.base.add(i / 2)) };
            // Only this thread changes these four bits: clearing them, then
            // setting the new ones, leaves the other nibble's updates alone.
            byte.fetch_and(!(0xF << shift), Relaxed);
            byte.fetch_or(nibble, Relaxed);
        } else {
            // SAFETY: per the contract, as in `set`.
            unsafe { self.set(i, value) }
        }
    }

    /// Elements `range` of an unpacked array as a slice.
    ///
    /// # Safety
    /// `range` inside `0..len()`; nobody writes those elements while the
    /// slice lives.
    #[inline]
    pub unsafe fn slice<'a>(&self, range: Range<usize>) -> &'a [E] {
        debug_assert!(!E::DTYPE.is_packed() && range.start <= range.end && range.end <= self.n);
        // SAFETY: aligned, inside the array, and any bit pattern is a
        // valid value of these types (`Bool` is a byte, not `bool`).
        unsafe { std::slice::from_raw_parts(self.base.cast::<E>().add(range.start), range.len()) }
    }

    /// Elements `range` of an unpacked array as a mutable slice.
    ///
    /// # Safety
    /// As `slice`, and nobody else reads them either.
    #[inline]
    pub unsafe fn slice_mut<'a>(&self, range: Range<usize>) -> &'a mut [E] {
        debug_assert!(!E::DTYPE.is_packed() && range.start <= range.end && range.end <= self.n);
        // SAFETY: as in `slice`, and exclusive per the contract.
        unsafe { std::slice::from_raw_parts_mut(self.base.cast::<E>().add(range.start), range.len()) }
    }

    /// Elements `range` (`range.start` even) of a packed array as the whole
    /// bytes they fill, plus the index of the last element when it sits
    /// alone in the low nibble of the next byte (`range.end` odd).
    ///
    /// # Safety
    /// As `slice_mut`.
    #[inline]
    pub unsafe fn packed_mut<'a>(&self, range: Range<usize>) -> (&'a mut [u8], Option<usize>) {
        debug_assert!(E::DTYPE.is_packed() && range.start % 2 == 0 && range.end <= self.n);
        let whole = range.len() / 2;
        let tail = (range.len() % 2 == 1).then(|| range.end - 1);
        // SAFETY: bytes `start/2 .. start/2 + whole` lie inside the array,
        // and `u8` has no alignment.
        let bytes = unsafe { std::slice::from_raw_parts_mut(self.base.add(range.start / 2), whole) };
        (bytes, tail)
    }

    /// Raw pointer to the unit (element, or byte for packed types) holding
    /// element `i` (even for packed types).
    #[inline]
    pub fn unit_ptr<U>(&self, i: usize) -> *mut U {
        let offset = if E::DTYPE.is_packed() { i / 2 } else { i * size_of::<E>() };
        self.base.wrapping_add(offset).cast::<U>()
    }
}

/// `out[i] = f(a[i], b[i])` for `len` units from the three starts, where
/// `out` may be exactly `a` and/or `b` (in place) but must not otherwise
/// overlap them. The loops run over slices so they vectorise.
///
/// # Safety
/// Each pointer must be valid for `len` units, aligned; no other thread
/// uses the `out` units, nor writes the `a` and `b` units, meanwhile.
#[inline(always)]
pub(crate) unsafe fn zip2<U: Copy>(a: *const U, b: *const U, out: *mut U, len: usize, f: impl Fn(U, U) -> U) {
    let same_a = std::ptr::eq(out, a);
    let same_b = std::ptr::eq(out, b);
    // SAFETY: per the contract; when `out` is `a` or `b` only the mutable
    // slice is formed over that memory, so no shared slice aliases it.
    unsafe {
        let o = std::slice::from_raw_parts_mut(out, len);
        match (same_a, same_b) {
            (true, true) => o.iter_mut().for_each(|x| *x = f(*x, *x)),
            (true, false) => {
                let b = std::slice::from_raw_parts(b, len);
                o.iter_mut().zip(b).for_each(|(x, &y)| *x = f(*x, y));
            }
            (false, true) => {
                let a = std::slice::from_raw_parts(a, len);
                o.iter_mut().zip(a).for_each(|(x, &y)| *x = f(y, *x));
            }
            (false, false) => {
                let a = std::slice::from_raw_parts(a, len);
                let b = std::slice::from_raw_parts(b, len);
                o.iter_mut().zip(a.iter().zip(b)).for_each(|(x, (&p, &q))| *x = f(p, q));
            }
        }
    }
}
