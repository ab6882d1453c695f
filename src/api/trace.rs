//! Tracing and profiling (since 1.2): tracers, correlation ids, the clock.
use crate::error::{bail, boundary, err, Out};
use crate::objects::insert_handle;
use crate::trace::{TracerObj, TRACERS};
use std::mem::{offset_of, size_of};
use std::sync::Arc;
use xdal_abi::*;

/// Since 1.2. Creates a tracer: from now on `desc->api` (if not NULL) gets
/// a record of every xdal call after it returned, on the calling thread,
/// and `desc->activity` (if not NULL) gets records of the work the calls
/// enqueued (of the kinds in `desc->activity_mask`; 0: all) once it
/// completed, on whichever thread delivers them: at `xdal_tracer_flush`,
/// at `xdal_tracer_destroy`, and whenever enough have completed. Several
/// tracers may be live; each gets every record. Callbacks must not call
/// xdal functions that wait. `desc->struct_size` below the fields up to
/// `activity_mask` is `XDAL_ERROR_INVALID_VALUE`.
#[no_mangle]
pub extern "C" fn xdal_tracer_create(tracer: *mut xdal_tracer_t, desc: *const xdal_tracer_desc_t) -> xdal_status_t {
    boundary(c"xdal_tracer_create", || {
        let out = Out::new(tracer, "tracer")?;
        crate::error::require(desc, "desc")?;
        // SAFETY: non-NULL; `struct_size` is the first field of every
        // version of the struct.
        let size = unsafe { (*desc).struct_size };
        let needed = offset_of!(xdal_tracer_desc_t, activity_mask) + size_of::<u64>();
        if size < needed {
            bail!(XDAL_ERROR_INVALID_VALUE, "desc->struct_size is {size}; at least {needed} bytes are needed");
        }
        crate::backend::backend()?;
        // SAFETY: the caller's struct has at least `needed` bytes, which
        // hold every field read here.
        let object = TracerObj::new(unsafe { &*desc });
        let handle = insert_handle(&TRACERS, Arc::new(object), "tracers")?;
        crate::trace::tracers_changed();
        out.write(handle as xdal_tracer_t);
        Ok(())
    })
}

/// Since 1.2. Delivers every activity completed so far (to every tracer),
/// and rewrites the `XDAL_TRACE` file if one is being written.
#[no_mangle]
pub extern "C" fn xdal_tracer_flush(tracer: xdal_tracer_t) -> xdal_status_t {
    boundary(c"xdal_tracer_flush", || {
        TRACERS.get(tracer as usize).ok_or_else(|| not_a_tracer(tracer))?;
        crate::trace::flush();
        Ok(())
    })
}

/// Since 1.2. Flushes, then destroys a tracer: its callbacks are not
/// called once this returns, on any thread (it waits for those under way
/// on other threads, so its user data may be freed then). A callback may
/// destroy its own tracer; one that waits for the destroying thread
/// deadlocks.
#[no_mangle]
pub extern "C" fn xdal_tracer_destroy(tracer: xdal_tracer_t) -> xdal_status_t {
    boundary(c"xdal_tracer_destroy", || {
        let object = TRACERS.get(tracer as usize).ok_or_else(|| not_a_tracer(tracer))?;
        crate::trace::flush();
        TRACERS.remove(tracer as usize).ok_or_else(|| not_a_tracer(tracer))?;
        crate::trace::tracers_changed();
        // Other threads may still be in its callbacks, or about to start
        // one from a list taken before the change.
        object.retire();
        Ok(())
    })
}

fn not_a_tracer(tracer: xdal_tracer_t) -> crate::error::Error {
    err!(XDAL_ERROR_INVALID_HANDLE, "{tracer:p} is not a live tracer (destroyed, or not a tracer handle)")
}

/// Since 1.2. Pushes `id` on the calling thread's stack of external
/// correlation ids: API records of this thread's calls carry the top one as
/// `external_id` until it is popped (a framework's operator id, say).
#[no_mangle]
pub extern "C" fn xdal_correlation_push_external(id: u64) -> xdal_status_t {
    boundary(c"xdal_correlation_push_external", || {
        crate::trace::push_external(id);
        Ok(())
    })
}

/// Since 1.2. Pops the calling thread's top external correlation id into
/// `id` (optional). An empty stack is `XDAL_ERROR_INVALID_VALUE`.
#[no_mangle]
pub extern "C" fn xdal_correlation_pop_external(id: *mut u64) -> xdal_status_t {
    boundary(c"xdal_correlation_pop_external", || {
        let Some(top) = crate::trace::pop_external() else {
            bail!(XDAL_ERROR_INVALID_VALUE, "this thread has no external correlation id pushed");
        };
        if !id.is_null() {
            Out::new(id, "id")?.write(top);
        }
        Ok(())
    })
}

/// Since 1.2. Writes the time in nanoseconds on the clock of every
/// timestamp in API and activity records (`CLOCK_MONOTONIC`).
#[no_mangle]
pub extern "C" fn xdal_get_timestamp_ns(ns: *mut u64) -> xdal_status_t {
    boundary(c"xdal_get_timestamp_ns", || {
        Out::new(ns, "ns")?.write(crate::trace::now_ns());
        Ok(())
    })
}
