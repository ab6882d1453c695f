//! A worker's hot set: the streams it drained recently and keeps polling
//! for a while instead of letting them go idle.
//!
//! A stream that goes idle must be scheduled again by the next enqueue (a
//! state change, a run-queue push, a wake-up check, each a cache line taken
//! from the worker), and a producer that spreads its work over many
//! streams pays that on every operation. A stream in a hot set stays in
//! state Hot: its producer only pushes, and the worker finds the work by
//! polling. The set is per worker thread and released, back to the usual
//! idle/run-queue protocol, whenever the worker starts something that may
//! take long (a host function, a kernel, a large copy, blocks of another
//! launch) and when nothing has come for `HOT_SET_LINGER`: a hot stream
//! never waits behind a busy worker, and an idle one costs nothing for long.
use crate::stream::Stream;
use crate::tuning::{HOT_SET_LINGER, HOT_SET_POLLS_PER_CLOCK_READ};
use std::cell::RefCell;
use std::sync::Arc;
use std::time::Instant;

#[derive(Default)]
struct HotSet {
    streams: Vec<Arc<Stream>>,
    /// Where the next poll starts, so that every stream gets its turn.
    cursor: usize,
    /// Since when the polls have found nothing.
    idle_since: Option<Instant>,
    empty_polls: u32,
}

thread_local! {
    static HOT: RefCell<HotSet> = RefCell::new(HotSet::default());
}

/// Keeps a stream the calling worker just ran (and parked as Hot).
pub(crate) fn keep(stream: Arc<Stream>) {
    // `try_with` runs the closure only where the set is there: a thread
    // past its end (its thread-locals destroyed) keeps nothing, and lets
    // the stream go back to the usual protocol at once.
    let mut stream = Some(stream);
    let _ = HOT.try_with(|hot| hot.borrow_mut().streams.extend(stream.take()));
    if let Some(stream) = stream {
        stream.release_hot();
    }
}

/// Whether the calling thread holds no hot stream.
pub(crate) fn is_empty() -> bool {
    HOT.try_with(|hot| hot.borrow().streams.is_empty()).unwrap_or(true)
}

/// A hot stream with work pending, taken out of the set; the caller claims
/// it. Streams that someone else took meanwhile (a host thread waiting for
/// one, another worker) leave the set: their new owner follows the usual
/// protocol.
pub(crate) fn next_ready() -> Option<Arc<Stream>> {
    HOT.try_with(|hot| {
        let mut hot = hot.borrow_mut();
        let mut looked = 0;
        while looked < hot.streams.len() {
            let at = hot.cursor % hot.streams.len();
            let stream = &hot.streams[at];
            if !stream.is_hot() {
                hot.streams.swap_remove(at);
                continue;
            }
            if stream.has_pending() {
                hot.cursor = at;
                hot.idle_since = None;
                hot.empty_polls = 0;
                return Some(hot.streams.swap_remove(at));
            }
            hot.cursor = at + 1;
            looked += 1;
        }
        None
    })
    .ok()
    .flatten()
}

/// Called after a poll that found nothing: whether the worker should keep
/// polling (its hot set is not empty and not stale yet).
pub(crate) fn keep_polling() -> bool {
    HOT.try_with(|hot| {
        let mut hot = hot.borrow_mut();
        if hot.streams.is_empty() {
            return false;
        }
        hot.empty_polls += 1;
        if hot.empty_polls % HOT_SET_POLLS_PER_CLOCK_READ != 1 {
            return true;
        }
        let now = Instant::now();
        let since = *hot.idle_since.get_or_insert(now);
        now.duration_since(since) < HOT_SET_LINGER
    })
    .unwrap_or(false)
}

/// Lets every hot stream of the calling thread go back to the usual
/// protocol: idle, or into the run queue if work came meanwhile.
pub(crate) fn release_all() {
    let streams = HOT
        .try_with(|hot| {
            let mut hot = hot.borrow_mut();
            hot.idle_since = None;
            hot.empty_polls = 0;
            std::mem::take(&mut hot.streams)
        })
        .unwrap_or_default();
    for stream in streams {
        stream.release_hot();
    }
}
