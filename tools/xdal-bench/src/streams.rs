//! One stream: how fast work is enqueued and executed, and what a round
//! trip to the stream costs.
//!
//! Enqueue + execute: n operations are enqueued, then one
//! `xdal_stream_synchronize`; the figure is n / the time of the whole
//! batch. Reference: n messages sent through a `std::sync::mpsc` channel to
//! a worker thread that receives them, then one round trip to learn it is
//! done: the cost of handing work to another thread at all.
//!
//! Round trips: one operation then a wait, repeated. Reference where it
//! applies: a ping-pong with a worker thread over two channels.
use crate::api::{check, check_query, empty_function, empty_host_fn, DeviceMem, Event, Res, Stream, H2D, ONE};
use crate::report::{Goal, Row, Unit};
use crate::stats::{timed, Timing};
use std::hint::black_box;
use std::ptr::{null, null_mut};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::JoinHandle;
use xdal::abi::*;
use xdal::*;

const ENQUEUE: &str = "enqueue + execute, one stream";
const ROUND_TRIP: &str = "round trips";

enum Msg {
    Item(u64),
    Ping,
    Stop,
}

/// A worker thread fed through a channel.
struct Worker {
    tx: Sender<Msg>,
    done: Receiver<()>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    fn new() -> Worker {
        let (tx, rx) = channel();
        let (done_tx, done) = channel();
        let thread = std::thread::spawn(move || {
            let mut sum = 0u64;
            for msg in rx {
                match msg {
                    Msg::Item(v) => sum = sum.wrapping_add(black_box(v)),
                    Msg::Ping => {
                        if done_tx.send(()).is_err() {
                            break;
                        }
                    }
                    Msg::Stop => break,
                }
            }
            black_box(sum);
        });
        Worker { tx, done, thread: Some(thread) }
    }

    fn round_trip(&self) -> Res<()> {
        self.tx.send(Msg::Ping).map_err(|_| "the reference worker thread is gone")?;
        self.done.recv().map_err(|_| "the reference worker thread is gone".to_string())
    }

    /// `n` items handed over, then a round trip: they have all been received.
    fn one_way(&self, n: u64) -> Res<std::time::Duration> {
        timed(|| {
            for i in 0..n {
                self.tx.send(Msg::Item(i)).map_err(|_| "the reference worker thread is gone")?;
            }
            self.round_trip()
        })
    }

    fn ping_pong(&self, n: u64) -> Res<std::time::Duration> {
        timed(|| (0..n).try_for_each(|_| self.round_trip()))
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Stop);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// n operations enqueued by `enqueue`, then one synchronize.
fn enqueue_batch(stream: &Stream, n: u64, mut enqueue: impl FnMut() -> Res<()>) -> Res<std::time::Duration> {
    timed(|| {
        for _ in 0..n {
            enqueue()?;
        }
        stream.sync()
    })
}

pub fn enqueue(timing: &Timing, rows: &mut Vec<Row>) -> Res<()> {
    let worker = Worker::new();
    let reference = timing.measure(|n| worker.one_way(n))?;
    let reference_name = "std mpsc to a thread, n then ping";
    let stream = Stream::new()?;
    let s = stream.0;
    let dev = DeviceMem::touched(64)?;
    let src = [7u8; 64];
    let copies = timing.measure(|n| {
        enqueue_batch(&stream, n, || {
            check(xdal_memcpy_async(dev.ptr, src.as_ptr().cast(), 64, H2D, s), "xdal_memcpy_async")
        })
    })?;
    rows.push(
        Row::new(ENQUEUE, "64 B xdal_memcpy_async H2D, n then sync", Unit::MopsPerSec, &copies)
            .vs(reference_name, &reference)
            .goal(Goal::AtLeast(5.0)),
    );
    let host_fns = timing.measure(|n| {
        enqueue_batch(&stream, n, || {
            check(xdal_launch_host_func(s, Some(empty_host_fn), null_mut()), "xdal_launch_host_func")
        })
    })?;
    rows.push(
        Row::new(ENQUEUE, "empty xdal_launch_host_func, n then sync", Unit::MopsPerSec, &host_fns)
            .vs(reference_name, &reference),
    );
    let function = empty_function()?;
    let kernels = timing.measure(|n| {
        enqueue_batch(&stream, n, || {
            check(xdal_launch_kernel(function, ONE, ONE, 0, s, null(), 0), "xdal_launch_kernel")
        })
    })?;
    rows.push(
        Row::new(ENQUEUE, "empty kernel 1x1x1 xdal_launch_kernel, n then sync", Unit::MopsPerSec, &kernels)
            .vs(reference_name, &reference)
            .goal(Goal::AtLeast(1.0)),
    );
    Ok(())
}

pub fn round_trips(timing: &Timing, rows: &mut Vec<Row>) -> Res<()> {
    let worker = Worker::new();
    let ping_pong = timing.measure(|n| worker.ping_pong(n))?;
    let ping_pong_name = "ping-pong with a thread (std mpsc)";
    let stream = Stream::new()?;
    let s = stream.0;
    for (flags, label) in [(XDAL_EVENT_DISABLE_TIMING, "timing disabled"), (XDAL_EVENT_DEFAULT, "timing enabled")] {
        let event = Event::new(flags)?;
        let e = event.0;
        let samples = timing.measure(|n| {
            timed(|| {
                for _ in 0..n {
                    check(xdal_event_record(e, s), "xdal_event_record")?;
                    check_query(xdal_event_query(e), "xdal_event_query")?;
                    check(xdal_event_synchronize(e), "xdal_event_synchronize")?;
                }
                Ok(())
            })
        })?;
        rows.push(
            Row::new(ROUND_TRIP, format!("event record + query + synchronize, {label}"), Unit::NsPerOp, &samples)
                .vs(ping_pong_name, &ping_pong)
                .goal(Goal::Below(2000.0)),
        );
    }
    let idle = timing.measure(|n| timed(|| (0..n).try_for_each(|_| stream.sync())))?;
    rows.push(
        Row::new(ROUND_TRIP, "xdal_stream_synchronize, idle stream", Unit::NsPerOp, &idle).goal(Goal::Below(500.0)),
    );
    let create_destroy = timing.measure(|n| {
        timed(|| {
            for _ in 0..n {
                let mut created = null_mut();
                check(xdal_stream_create(&mut created, XDAL_STREAM_DEFAULT, 0), "xdal_stream_create")?;
                check(xdal_stream_destroy(created), "xdal_stream_destroy")?;
            }
            Ok(())
        })
    })?;
    rows.push(
        Row::new(ROUND_TRIP, "xdal_stream_create + xdal_stream_destroy", Unit::NsPerOp, &create_destroy)
            .goal(Goal::Below(2000.0)),
    );
    let function = empty_function()?;
    let launch_sync = timing.measure(|n| {
        timed(|| {
            for _ in 0..n {
                check(xdal_launch_kernel(function, ONE, ONE, 0, s, null(), 0), "xdal_launch_kernel")?;
                stream.sync()?;
            }
            Ok(())
        })
    })?;
    rows.push(
        Row::new(ROUND_TRIP, "empty kernel launch + xdal_stream_synchronize", Unit::NsPerOp, &launch_sync)
            .vs(ping_pong_name, &ping_pong),
    );
    Ok(())
}
