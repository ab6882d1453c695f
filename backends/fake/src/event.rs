//! Events: each record makes a new `Marker`, a point in one stream. Waits
//! hold on to the marker they were given, so re-recording the event later
//! never changes what an earlier wait waits for.
use crate::error::{failure, FakeResult};
use crate::lock::IgnorePoison;
use crate::stream::{Op, Stream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub(crate) struct Marker {
    pub stream: Arc<Stream>,
    pub seq: u64,
    timing: bool,
    /// Nanoseconds since the process epoch at which the stream got here.
    time_ns: AtomicU64,
}

impl Marker {
    pub fn stamp(&self) {
        if self.timing {
            self.time_ns.store(now_ns(), Ordering::Release);
        }
    }

    pub fn passed(&self) -> bool {
        self.stream.passed(self.seq)
    }

    /// SUCCESS, NOT_READY, or the sticky error of the stream if it failed
    /// at or before this point.
    pub fn status(&self) -> FakeResult<()> {
        if let Some(failure) = self.stream.error_at(self.seq) {
            return Err(failure);
        }
        if self.passed() {
            Ok(())
        } else {
            Err(failure!(XDAL_ERROR_NOT_READY, "event not reached yet"))
        }
    }
}

use xdal_backend_support::clock::monotonic_ns as now_ns;

pub(crate) struct Event {
    pub timing: bool,
    /// The device it was created on.
    pub device: usize,
    point: Mutex<Option<Arc<Marker>>>,
}

impl Event {
    pub fn new(device: usize, timing: bool) -> Event {
        Event { timing, device, point: Mutex::new(None) }
    }

    /// The point of the latest record, if any.
    pub fn point(&self) -> Option<Arc<Marker>> {
        self.point.lock().ignore_poison().clone()
    }

    pub fn record(&self, stream: &Arc<Stream>) {
        let timing = self.timing;
        if !timing {
            // Nothing to stamp: the queue needs only a place in order, and
            // the marker, held by nobody else once the record it belonged to
            // is replaced (waits hold theirs), can be reused.
            let seq = stream.idle_point().unwrap_or_else(|| stream.enqueue(Op::Point));
            let mut point = self.point.lock().ignore_poison();
            match point.as_mut().and_then(Arc::get_mut) {
                Some(marker) => {
                    if !Arc::ptr_eq(&marker.stream, stream) {
                        marker.stream = stream.clone();
                    }
                    marker.seq = seq;
                }
                None => {
                    *point = Some(Arc::new(Marker { stream: stream.clone(), seq, timing, time_ns: AtomicU64::new(0) }))
                }
            }
            return;
        }
        if let Some(seq) = stream.idle_point() {
            // Nothing pending: the stream is at this point now.
            let time_ns = AtomicU64::new(if timing { now_ns() } else { 0 });
            let marker = Arc::new(Marker { stream: stream.clone(), seq, timing, time_ns });
            *self.point.lock().ignore_poison() = Some(marker);
            return;
        }
        let mut marker = None;
        stream.enqueue_with(|seq| {
            let m = Arc::new(Marker { stream: stream.clone(), seq, timing, time_ns: AtomicU64::new(0) });
            marker = Some(m.clone());
            Op::Mark(m)
        });
        *self.point.lock().ignore_poison() = marker;
    }

    pub fn query(&self) -> FakeResult<()> {
        self.point().map_or(Ok(()), |m| m.status())
    }

    pub fn synchronize(&self) -> FakeResult<()> {
        let Some(marker) = self.point() else {
            return Ok(());
        };
        marker.stream.wait_for(marker.seq);
        marker.status()
    }

    /// Milliseconds from `start`'s point to `end`'s.
    pub fn elapsed_ms(start: &Event, end: &Event) -> FakeResult<f32> {
        if !start.timing || !end.timing {
            return Err(failure!(XDAL_ERROR_INVALID_VALUE, "an event was created with XDAL_EVENT_DISABLE_TIMING"));
        }
        let (Some(a), Some(b)) = (start.point(), end.point()) else {
            return Err(failure!(XDAL_ERROR_INVALID_VALUE, "an event was never recorded"));
        };
        a.status()?;
        b.status()?;
        let (ta, tb) = (a.time_ns.load(Ordering::Acquire), b.time_ns.load(Ordering::Acquire));
        Ok((tb as f64 - ta as f64) as f32 / 1.0e6)
    }
}
