//! Memory a capture's `xdal_malloc_async` reserved: it belongs to the graph
//! until `xdal_graph_destroy` (and every exec made from it is gone), so
//! replays find it at the same addresses, and no free from outside the
//! graph may take it.
use crate::backend::{call, Backend, DeviceIndex};
use crate::lock::IgnorePoison;
use crate::registry::REGISTRY;
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering::*};
use std::sync::Mutex;

static RESERVED: Mutex<Option<HashSet<usize>>> = Mutex::new(None);
/// Entries of `RESERVED`: frees check the set only when it has any.
static COUNT: AtomicUsize = AtomicUsize::new(0);

/// Marks `addr` as graph memory.
pub(crate) fn reserve(addr: usize) {
    let mut reserved = RESERVED.lock().ignore_poison();
    let set = reserved.get_or_insert_with(HashSet::new);
    set.insert(addr);
    COUNT.store(set.len(), Release);
}

/// Whether `addr` is memory a graph owns.
#[inline]
pub(crate) fn is_reserved(addr: usize) -> bool {
    COUNT.load(Acquire) != 0 && RESERVED.lock().ignore_poison().as_ref().is_some_and(|set| set.contains(&addr))
}

/// Gives a graph's memory back: `(address, bytes)` pairs of `device`.
pub(crate) fn release(backend: &'static Backend, device: DeviceIndex, memory: &[(usize, usize)]) {
    if memory.is_empty() {
        return;
    }
    // Replays still queued may use it, as for `xdal_free`.
    let _ = crate::dispatch::device::synchronize(backend, device.get());
    let mut reserved = RESERVED.lock().ignore_poison();
    for &(addr, _) in memory {
        if let Some(set) = reserved.as_mut() {
            set.remove(&addr);
        }
        REGISTRY.remove_if(addr, |_| true);
        // Nothing to report to: the graph is gone. A failure would leak
        // one block.
        let _ = call!(backend, mem_free(device.get(), addr as *mut std::ffi::c_void));
    }
    COUNT.store(reserved.as_ref().map_or(0, HashSet::len), Release);
}
