//! Event timing for backends without `event_elapsed_time`: a host function
//! enqueued at each record notes the host time at which the stream got
//! there.
use crate::backend::{call, call_or, Backend};
use crate::dispatch::stream::enqueue;
use crate::error::{bail, XResult};
use crate::lock::IgnorePoison;
use crate::objects::{EventObj, StreamObj};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use xdal_abi::*;

use xdal_backend_support::clock::monotonic_ns as now_ns;

/// Records the event. With the fallback, a timed event also gets a stamp.
pub(crate) fn record(backend: &'static Backend, event: &EventObj, stream: &Arc<StreamObj>) -> XResult<()> {
    call!(backend, event_record(event.native, stream.native))?;
    if backend.table.event_elapsed_time.is_some() || event.flags & XDAL_EVENT_DISABLE_TIMING != 0 {
        return Ok(());
    }
    let stamp = Arc::new(AtomicU64::new(0));
    *event.stamp.lock().ignore_poison() = Some(stamp.clone());
    // 0 means "not reached yet", so a stamp is the time plus one.
    let stamp_when_reached = move || {
        stamp.store(now_ns() + 1, Ordering::Release);
        Ok(())
    };
    enqueue(backend, stream, Box::new(stamp_when_reached))
}

/// Milliseconds between two events.
pub(crate) fn elapsed_ms(backend: &'static Backend, start: &EventObj, end: &EventObj) -> XResult<f32> {
    let mut ms = 0.0f32;
    call_or!(backend, event_elapsed_time(&mut ms, start.native, end.native), {
        ms = elapsed_from_stamps(start, end)?;
        Ok(())
    })?;
    Ok(ms)
}

fn elapsed_from_stamps(start: &EventObj, end: &EventObj) -> XResult<f32> {
    if (start.flags | end.flags) & XDAL_EVENT_DISABLE_TIMING != 0 {
        bail!(XDAL_ERROR_INVALID_VALUE, "an event was created with XDAL_EVENT_DISABLE_TIMING");
    }
    let stamp = |event: &EventObj| event.stamp.lock().ignore_poison().clone();
    let (Some(a), Some(b)) = (stamp(start), stamp(end)) else {
        bail!(XDAL_ERROR_INVALID_VALUE, "an event was never recorded");
    };
    let (a, b) = (a.load(Ordering::Acquire), b.load(Ordering::Acquire));
    if a == 0 || b == 0 {
        bail!(XDAL_ERROR_NOT_READY, "an event is not reached yet");
    }
    // The ABI's float milliseconds: rounding to f32 is the intended result.
    #[allow(clippy::cast_possible_truncation)]
    let ns = (b as f64 - a as f64) as f32;
    Ok(ns / 1.0e6)
}
