//! Fills of large arrays with non-temporal stores. A plain store loop
//! first reads every cache line it writes (to own it), so a fill far larger
//! than the caches moves each byte twice; `memset` avoids that for large
//! sizes (glibc switches to streaming stores), and a fill kernel that did
//! not would run at half its speed on machines where memory bandwidth is
//! the limit (0.49x `memset` over 64 MiB on an AVX-512 Xeon).

/// Arrays of at least this many bytes are filled with streaming stores:
/// beyond the last-level cache share of a core on the machines measured,
/// so what a smaller fill leaves in cache for its reader stays there.
pub(crate) const STREAMING_FILL_BYTES: usize = 8 << 20;

/// `dst[i] = value` for every element, bypassing the caches where the
/// machine has streaming stores (SSE2, part of every x86-64), else a plain
/// fill. `E` is one of the 1-, 2-, 4- or 8-byte element types, whose value
/// is its bytes.
pub(super) fn fill_streaming<E: Copy>(dst: &mut [E], value: E) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_sfence, _mm_stream_si128};
        let size = size_of::<E>();
        if !(size.is_power_of_two() && size <= 16) {
            dst.fill(value);
            return;
        }
        let mut pattern = [0u8; 16];
        for chunk in pattern.chunks_exact_mut(size) {
            // SAFETY: `value` is `size` readable bytes of a plain element
            // type (no padding), copied into a chunk of exactly that size.
            unsafe { std::ptr::copy_nonoverlapping((&value as *const E).cast::<u8>(), chunk.as_mut_ptr(), size) };
        }
        // SAFETY: every bit pattern is a valid `__m128i`, and the element
        // types write their values as bytes: the middle part's 16-byte
        // units each hold 16 / size whole elements (it starts on an element
        // boundary, 16-aligned, and size divides 16), each `value`.
        let (head, middle, tail) = unsafe { dst.align_to_mut::<__m128i>() };
        head.fill(value);
        // SAFETY: `pattern` is 16 readable bytes.
        let unit = unsafe { std::ptr::read_unaligned(pattern.as_ptr().cast::<__m128i>()) };
        for m in middle.iter_mut() {
            // SAFETY: `m` is a 16-aligned, writable unit of `dst`.
            unsafe { _mm_stream_si128(m, unit) };
        }
        tail.fill(value);
        // SAFETY: a store fence, always available on x86-64: the
        // streaming stores are ordered before whatever this block's
        // completion publishes.
        unsafe { _mm_sfence() };
    }
    #[cfg(not(target_arch = "x86_64"))]
    dst.fill(value);
}

#[cfg(test)]
mod tests {
    use super::fill_streaming;

    #[test]
    fn every_element_gets_the_value_whatever_the_alignment() {
        for offset in 0..5 {
            for len in [0usize, 1, 3, 4, 5, 17, 1000] {
                let mut words = vec![0u32; len + 8];
                fill_streaming(&mut words[offset..offset + len], 0xdead_beef);
                for (i, w) in words.iter().enumerate() {
                    let inside = i >= offset && i < offset + len;
                    assert_eq!(*w, if inside { 0xdead_beef } else { 0 }, "offset {offset}, len {len}, at {i}");
                }
                let mut halves = vec![0u16; len + 8];
                fill_streaming(&mut halves[offset..offset + len], 0x3c00);
                assert!(halves[offset..offset + len].iter().all(|&h| h == 0x3c00));
                assert!(halves[..offset].iter().chain(&halves[offset + len..]).all(|&h| h == 0));
                let mut doubles = vec![0f64; len + 8];
                fill_streaming(&mut doubles[offset..offset + len], -1.5);
                assert!(doubles[offset..offset + len].iter().all(|&d| d == -1.5));
                assert!(doubles[..offset].iter().chain(&doubles[offset + len..]).all(|&d| d == 0.0));
            }
        }
    }
}
