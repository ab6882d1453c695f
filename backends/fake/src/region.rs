//! A device's address range. Users get addresses in the *view*; the backend
//! reads and writes through the *alias*. Without protect mode the two are
//! the same mapping. In protect mode the view is an inaccessible reservation
//! and the alias a separate read-write mapping at a fixed offset, so a host
//! dereference of a device pointer faults while every xdal operation works,
//! and no copy ever pays for toggling page protections.
use crate::error::{failure, FakeResult};
use std::ffi::c_void;

pub(crate) struct Region {
    view: usize,
    alias: usize,
    len: usize,
}

impl Region {
    /// Reserves `len` bytes of address space; physical memory comes lazily,
    /// page by page, as it is touched.
    pub fn reserve(len: usize, protect: bool) -> FakeResult<Region> {
        let alias = map(len, libc::PROT_READ | libc::PROT_WRITE)?;
        let view = if protect {
            match map(len, libc::PROT_NONE) {
                Ok(view) => view,
                Err(e) => {
                    unmap(alias, len);
                    return Err(e);
                }
            }
        } else {
            alias
        };
        Ok(Region { view, alias, len })
    }

    /// Whether a user address lies in this region.
    #[inline]
    pub fn contains(&self, addr: usize) -> bool {
        addr.wrapping_sub(self.view) < self.len
    }

    /// The user address of the byte at `offset`.
    #[inline]
    pub fn view_addr(&self, offset: usize) -> usize {
        self.view + offset
    }

    /// The offset of a user address inside the region.
    #[inline]
    pub fn offset_of(&self, addr: usize) -> usize {
        addr - self.view
    }

    /// The backend's accessible address for a user address of this region.
    #[inline]
    pub fn alias_of(&self, addr: usize) -> usize {
        addr - self.view + self.alias
    }

    /// Sets `len` bytes from `offset` to `byte`, through the alias.
    pub fn fill(&self, offset: usize, len: usize, byte: u8) {
        assert!(offset.checked_add(len).is_some_and(|end| end <= self.len), "a fill inside the region");
        // SAFETY: the range lies inside the alias mapping (checked above),
        // which is always readable and writable; the caller owns the block.
        unsafe { std::ptr::write_bytes((self.alias + offset) as *mut u8, byte, len) };
    }

    /// Returns the physical pages wholly inside `[offset, offset + len)` to
    /// the OS; they read as zero when touched again.
    pub fn release(&self, offset: usize, len: usize) {
        let page = page_size();
        let start = (self.alias + offset).next_multiple_of(page);
        let end = (self.alias + offset + len) / page * page;
        if end > start {
            // SAFETY: [start, end) lies inside the alias mapping and no live
            // allocation uses it (the caller just freed it).
            unsafe { libc::madvise(start as *mut c_void, end - start, libc::MADV_DONTNEED) };
        }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        if self.view != self.alias {
            unmap(self.view, self.len);
        }
        unmap(self.alias, self.len);
    }
}

pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096)
}

pub(crate) fn map(len: usize, prot: libc::c_int) -> FakeResult<usize> {
    // SAFETY: an anonymous private mapping at an address of the kernel's
    // choosing touches no existing memory.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            prot,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        let err = std::io::Error::last_os_error();
        return Err(failure!(XDAL_ERROR_OUT_OF_MEMORY, "cannot reserve {len} bytes of address space: {err}"));
    }
    Ok(ptr as usize)
}

pub(crate) fn unmap(addr: usize, len: usize) {
    // SAFETY: called only with a mapping this module created, once.
    unsafe { libc::munmap(addr as *mut c_void, len) };
}
