//! Native handles (`xdal_backend_stream_t` and the like) that are an
//! `Arc<T>` turned raw: the front holds one reference per handle it gave out.
use std::mem::ManuallyDrop;
use std::sync::Arc;

/// The handle of a new object; the front owns the reference.
pub fn arc_into_handle<T, H>(object: Arc<T>) -> *mut H {
    Arc::into_raw(object) as *mut H
}

/// Borrows the object behind a live handle, leaving its count untouched.
///
/// # Safety
/// `handle` must come from [`arc_into_handle`] with the same `T` and not
/// have been given back (the front checks handles before every call).
pub unsafe fn arc_ref<T, H>(handle: *mut H) -> ManuallyDrop<Arc<T>> {
    // SAFETY: per the contract above, the Arc behind it is alive.
    ManuallyDrop::new(unsafe { Arc::from_raw(handle as *const T) })
}

/// Takes back the front's reference (when it destroys the handle).
///
/// # Safety
/// As for [`arc_ref`]; the front gives each handle back exactly once.
pub unsafe fn arc_from_handle<T, H>(handle: *mut H) -> Arc<T> {
    // SAFETY: per the contract above.
    unsafe { Arc::from_raw(handle as *const T) }
}
