//! The callee side of the `struct_size` rule, the one piece of code in this
//! crate: the front and every Rust backend must apply the rule identically,
//! so it is written once, next to the types it governs.

/// Copies `value` into `*dst`, writing only the bytes that fit in the
/// caller's `dst->struct_size` (and never past this version's size), and
/// leaving the caller's `struct_size` as it was.
///
/// # Safety
/// `T` must be an extensible struct whose first field is `size_t
/// struct_size`, and `dst` must be valid for writes of `(*dst).struct_size`
/// bytes (the caller's declared size).
pub unsafe fn write_sized<T: Copy>(dst: *mut T, value: &T) {
    // SAFETY: every extensible struct starts with its `size_t struct_size`.
    let caller_size = unsafe { *(dst as *const usize) };
    let head = core::mem::size_of::<usize>();
    let len = caller_size.min(core::mem::size_of::<T>());
    if len > head {
        // SAFETY: both ranges hold at least `len` bytes: `value` is a whole
        // `T`, `dst` holds `caller_size >= len` bytes by the contract.
        unsafe {
            core::ptr::copy_nonoverlapping(
                (value as *const T as *const u8).add(head),
                (dst as *mut u8).add(head),
                len - head,
            )
        };
    }
}
