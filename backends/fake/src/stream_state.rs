//! Who owns a stream right now: the one state machine of the scheduler.
//!
//! A stream's state is one atomic byte. Whoever moves it to `Running` owns
//! the stream and is the only thread that pops and runs its operations;
//! every other state says where the stream is to be found, so that exactly
//! one thread takes it next.
//!
//! ```text
//!  from      to        method                 taken by
//!  Idle    → Queued    try_queue_on_enqueue   a producer, after its push
//!  Idle    → Queued    try_requeue_released   the owner that just released it,
//!                                             seeing work enqueued meanwhile
//!  Queued  → Running   try_claim              a worker popping a run queue, or
//!                                             a host thread waiting for it
//!  Hot     → Running   try_claim              the worker polling its hot set, or
//!                                             a host thread waiting for it
//!  Hot     → Running   try_unpark_hot         the hot set's worker letting it go
//!                                             (then on to Idle or Queued)
//!  Running → Idle      release_idle           the owner, with nothing left
//!  Running → Queued    hand_back              a waiting host thread, its point done
//!  Running → Blocked   block                  the owner, its next op a wait
//!  Running → Hot       park_hot               a worker that drained it
//!  Blocked → Queued    wake_blocked           the runner of the stream passing
//!                                             the awaited point
//! ```
//!
//! The transitions, by whom and why:
//!
//! - **Idle → Queued**, a producer's enqueue (`try_queue_on_enqueue`):
//!   nobody looks at an idle stream, so the first operation after a quiet
//!   spell must put it in a run queue. Several producers may race; the
//!   compare-exchange lets one of them schedule it.
//! - **Queued → Running**, a worker that popped it from a run queue, or a
//!   host thread waiting for one of its points (`try_claim`): the stream
//!   may be in a queue and wanted by a waiter at once (or in a queue twice,
//!   if it went idle and was queued again); the compare-exchange gives it to
//!   one, and a worker that loses drops the queue entry it popped.
//! - **Running → Idle**, the owner (`release_idle`): it has nothing left to
//!   run. Then the owner checks for work enqueued meanwhile, and takes
//!   **Idle → Queued** itself (`try_requeue_released`) unless the producer
//!   got there first: either the producer saw Idle, or the owner sees its
//!   operation.
//! - **Running → Queued**, a waiting host thread whose point is done while
//!   others keep enqueueing (`hand_back`): the rest goes to the workers, so
//!   a synchronize cannot be held forever by a busy producer. Only the
//!   owner writes, so a store suffices.
//! - **Running → Blocked**, the owner, when its next operation waits for
//!   another stream's point (`block`): it frees its thread instead of
//!   waiting. Stored under the other stream's waiter lock, after the stream
//!   registered there.
//! - **Blocked → Queued**, the thread completing the awaited point (the
//!   other stream's runner, `wake_blocked`): only it knows when the wait is
//!   over. Taken under the same waiter lock, so it always follows the
//!   `block` store; nobody else writes a blocked stream, so a store
//!   suffices.
//! - **Running → Hot**, a worker that drained the stream (`park_hot`): it
//!   keeps the stream in its hot set and polls it, so the next enqueue only
//!   pushes (no state change, run-queue push or wake-up).
//! - **Hot → Running**, whoever takes it to run it (`try_claim`): the worker
//!   polling its hot set when work shows up, or a host thread waiting for
//!   the stream, which then runs it itself.
//! - **Hot → Running**, the hot-set owner letting the stream go
//!   (`try_unpark_hot`) before something that may take long, or once the
//!   set went quiet; it then releases it (to Idle, or Queued with work).
//!   A compare-exchange, as a waiting host thread may have claimed it
//!   meanwhile; then that thread owns it and the worker just drops it.
//!
//! All transitions are SeqCst: each pairs with loads of other atomics
//! (`enqueued`, `completed`, the executor's counters) in the store-then-load
//! patterns described where they are used. Failure orderings are Relaxed:
//! a caller whose compare-exchange fails touches nothing the stream guards.
use std::sync::atomic::{AtomicU8, Ordering::*};

/// The states; see the module doc for who moves a stream between them.
#[repr(u8)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum StreamState {
    /// No work, nobody looks at the stream: the next enqueue schedules it.
    Idle = 0,
    /// In a run queue, waiting for a worker or a waiting host thread.
    Queued = 1,
    /// Owned by one thread, which runs its operations.
    Running = 2,
    /// Waiting for another stream's point; the waker queues it again.
    Blocked = 3,
    /// In a worker's hot set (see `hot`): polled, so an enqueue schedules
    /// nothing; whoever claims it runs it.
    Hot = 4,
}

use StreamState::*;

/// A stream's state, changed only through the named transitions below.
pub(crate) struct AtomicStreamState(AtomicU8);

impl AtomicStreamState {
    /// A new stream: idle, so its first enqueue schedules it.
    pub fn new() -> AtomicStreamState {
        AtomicStreamState(AtomicU8::new(Idle as u8))
    }

    /// Idle → Queued by a producer that just enqueued; true if this caller
    /// must put the stream in a run queue. Reads before trying: a stream
    /// that is running or hot (the usual case under load) then costs a
    /// shared read, not a cache line taken from its runner.
    #[inline]
    pub fn try_queue_on_enqueue(&self) -> bool {
        self.0.load(SeqCst) == Idle as u8 && self.queue_from_idle()
    }

    /// Queued or Hot → Running: the caller now owns the stream; false if it
    /// is not waiting to be taken (idle, blocked, or someone else runs it).
    #[inline]
    pub fn try_claim(&self) -> bool {
        let state = self.0.load(SeqCst);
        (state == Queued as u8 || state == Hot as u8)
            && self.0.compare_exchange(state, Running as u8, SeqCst, Relaxed).is_ok()
    }

    /// Running → Idle by the owner, which has nothing left to run.
    #[inline]
    pub fn release_idle(&self) {
        self.0.store(Idle as u8, SeqCst);
    }

    /// Idle → Queued by the owner that just released the stream and then
    /// saw work enqueued meanwhile; true if the caller must schedule it
    /// (false: that producer took this transition first).
    #[inline]
    pub fn try_requeue_released(&self) -> bool {
        self.queue_from_idle()
    }

    /// Idle → Queued for both takers: a compare-exchange, as the producer
    /// and the releasing owner may race for it.
    #[inline]
    fn queue_from_idle(&self) -> bool {
        self.0.compare_exchange(Idle as u8, Queued as u8, SeqCst, Relaxed).is_ok()
    }

    /// Running → Queued by a waiting host thread handing the rest of the
    /// stream back to the workers; the caller then schedules it.
    #[inline]
    pub fn hand_back(&self) {
        self.0.store(Queued as u8, SeqCst);
    }

    /// Running → Blocked by the owner, registered as a waiter of another
    /// stream's point and holding that stream's waiter lock.
    #[inline]
    pub fn block(&self) {
        self.0.store(Blocked as u8, SeqCst);
    }

    /// Blocked → Queued by the thread that passed the awaited point, under
    /// the same waiter lock; the caller then schedules the stream.
    #[inline]
    pub fn wake_blocked(&self) {
        self.0.store(Queued as u8, SeqCst);
    }

    /// Running → Hot by the worker that drained the stream and keeps it in
    /// its hot set.
    #[inline]
    pub fn park_hot(&self) {
        self.0.store(Hot as u8, SeqCst);
    }

    /// Hot → Running by the hot-set owner letting the stream go; false if
    /// someone claimed it meanwhile (then it is theirs).
    #[inline]
    pub fn try_unpark_hot(&self) -> bool {
        self.0.compare_exchange(Hot as u8, Running as u8, SeqCst, Relaxed).is_ok()
    }

    /// Whether the stream sits in a hot set, unclaimed. Relaxed: a hint for
    /// the hot set's owner, which claims before it runs anything.
    #[inline]
    pub fn is_hot(&self) -> bool {
        self.0.load(Relaxed) == Hot as u8
    }

    /// Whether the stream sits in a run queue, unclaimed: a sleeping host
    /// thread then wakes to help run it.
    #[inline]
    pub fn is_queued(&self) -> bool {
        self.0.load(SeqCst) == Queued as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state reached through legal transitions only.
    fn at(state: StreamState) -> AtomicStreamState {
        let s = AtomicStreamState::new();
        if state == Idle {
            return s;
        }
        assert!(s.try_queue_on_enqueue());
        match state {
            Queued => {}
            Running => assert!(s.try_claim()),
            Blocked => {
                assert!(s.try_claim());
                s.block();
            }
            Hot => {
                assert!(s.try_claim());
                s.park_hot();
            }
            Idle => unreachable!(),
        }
        s
    }

    #[test]
    fn only_queued_and_hot_streams_can_be_claimed() {
        for (state, claimable) in [(Idle, false), (Queued, true), (Running, false), (Blocked, false), (Hot, true)] {
            let s = at(state);
            assert_eq!(s.try_claim(), claimable, "{state:?}");
            // Whoever claimed it owns it: nobody else can.
            assert!(!s.try_claim(), "{state:?} claimed twice");
        }
    }

    #[test]
    fn only_an_idle_stream_is_queued_by_its_producer() {
        for state in [Idle, Queued, Running, Blocked, Hot] {
            assert_eq!(at(state).try_queue_on_enqueue(), state == Idle, "{state:?}");
        }
        // Of a producer and the releasing owner, only one schedules.
        let s = at(Running);
        s.release_idle();
        assert!(s.try_queue_on_enqueue());
        assert!(!s.try_requeue_released());
        assert!(s.is_queued());
    }

    #[test]
    fn a_hot_stream_is_let_go_only_if_nobody_claimed_it() {
        let s = at(Hot);
        assert!(s.is_hot());
        assert!(s.try_claim());
        assert!(!s.is_hot());
        assert!(!s.try_unpark_hot());
        let s = at(Hot);
        assert!(s.try_unpark_hot());
        assert!(!s.try_claim(), "unparked: the hot set's worker owns it");
    }

    #[test]
    fn blocked_and_handed_back_streams_are_queued_again() {
        let s = at(Blocked);
        assert!(!s.is_queued());
        s.wake_blocked();
        assert!(s.is_queued() && s.try_claim());
        s.hand_back();
        assert!(s.is_queued() && s.try_claim());
    }
}
