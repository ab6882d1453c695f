//! Unit tests of the executor, streams, events and the pool, below the
//! table (the C conformance suite covers the same ground through the ABI).
use crate::error::failure;
use crate::event::Event;
use crate::stream::{Op, Stream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn new_stream(device: usize) -> Arc<Stream> {
    let fake = crate::started().expect("fake backend starts");
    let id = fake.next_id.fetch_add(1, SeqCst);
    let stream = Arc::new(Stream::new(device, 2, id));
    fake.device(device).add_stream(&stream);
    stream
}

fn task(f: impl FnOnce() + Send + 'static) -> Op {
    Op::Task(Box::new(move || {
        f();
        Ok(())
    }))
}

/// A gate a task blocks on until the test opens it.
fn gate() -> (Arc<AtomicBool>, impl FnOnce() + Send + 'static) {
    let open = Arc::new(AtomicBool::new(false));
    let flag = open.clone();
    (open, move || {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !flag.load(SeqCst) && Instant::now() < deadline {
            std::thread::yield_now();
        }
    })
}

#[test]
fn work_runs_in_order_and_query_sees_the_running_op() {
    let stream = new_stream(0);
    let order = Arc::new(Mutex::new(Vec::new()));
    let (open, wait) = gate();
    stream.enqueue(task(wait));
    for i in 0..100 {
        let order = order.clone();
        stream.enqueue(task(move || order.lock().unwrap().push(i)));
    }
    assert!(stream.query().is_err(), "NOT_READY while the first op still runs");
    open.store(true, SeqCst);
    stream.synchronize().unwrap();
    assert!(stream.query().is_ok());
    assert_eq!(*order.lock().unwrap(), (0..100).collect::<Vec<_>>());
}

#[test]
fn a_blocked_stream_does_not_hold_up_another() {
    let (a, b) = (new_stream(0), new_stream(1));
    let (open, wait) = gate();
    a.enqueue(task(wait));
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = ran.clone();
    b.enqueue(task(move || {
        counter.fetch_add(1, SeqCst);
    }));
    b.synchronize().unwrap();
    assert_eq!(ran.load(SeqCst), 1);
    assert!(a.query().is_err());
    open.store(true, SeqCst);
    a.synchronize().unwrap();
}

#[test]
fn a_wait_keeps_the_point_it_was_given() {
    let (producer, consumer) = (new_stream(0), new_stream(0));
    let event = Event::new(0, true);
    let (first_open, first_wait) = gate();
    producer.enqueue(task(first_wait));
    event.record(&producer);
    consumer.enqueue(Op::Wait(event.point().unwrap()));
    let consumer_ran = Arc::new(AtomicBool::new(false));
    let flag = consumer_ran.clone();
    consumer.enqueue(task(move || flag.store(true, SeqCst)));
    // Re-record after a second blocking op: the consumer must not wait for it.
    let (second_open, second_wait) = gate();
    producer.enqueue(task(second_wait));
    event.record(&producer);
    std::thread::sleep(Duration::from_millis(20));
    assert!(!consumer_ran.load(SeqCst), "the consumer ran before the first point");
    first_open.store(true, SeqCst);
    consumer.synchronize().unwrap();
    assert!(consumer_ran.load(SeqCst));
    assert!(event.query().is_err(), "the re-recorded point is still pending");
    second_open.store(true, SeqCst);
    event.synchronize().unwrap();
}

#[test]
fn a_failed_op_is_sticky_and_stays_on_its_stream() {
    let (failing, healthy) = (new_stream(0), new_stream(0));
    failing.enqueue(Op::Task(Box::new(|| Err(failure!(XDAL_ERROR_LAUNCH_FAILED, "kernel failed")))));
    let later = Arc::new(AtomicBool::new(false));
    let flag = later.clone();
    failing.enqueue(task(move || flag.store(true, SeqCst)));
    healthy.enqueue(task(|| ()));
    let error = failing.synchronize().unwrap_err();
    assert_eq!(error.status, xdal_abi::xdal_status::XDAL_ERROR_LAUNCH_FAILED);
    assert!(failing.query().is_err(), "sticky");
    assert!(failing.synchronize().is_err(), "sticky");
    assert!(later.load(SeqCst), "later work still ran, so waits on it cannot hang");
    healthy.synchronize().unwrap();
}

#[test]
fn dropping_a_stream_lets_its_work_finish() {
    let stream = new_stream(0);
    let (open, wait) = gate();
    let done = Arc::new(AtomicBool::new(false));
    let flag = done.clone();
    stream.enqueue(task(wait));
    stream.enqueue(task(move || flag.store(true, SeqCst)));
    drop(stream);
    open.store(true, SeqCst);
    crate::fake().device(0).synchronize().unwrap();
    assert!(done.load(SeqCst));
}

#[test]
fn pooled_blocks_go_to_other_streams_only_after_the_free_completes() {
    let device = crate::started().unwrap().device(1);
    let (a, b) = (new_stream(1), new_stream(1));
    let (open, wait) = gate();
    a.enqueue(task(wait));
    let first = device.malloc_async(3000, &a).unwrap();
    device.free_async(first, &a).unwrap();
    let on_b = device.malloc_async(3000, &b).unwrap();
    assert_ne!(on_b, first, "stream b must not get a block a may still use");
    let on_a = device.malloc_async(3000, &a).unwrap();
    assert_eq!(on_a, first, "the same stream reuses it at once");
    open.store(true, SeqCst);
    a.synchronize().unwrap();
    device.free_async(on_a, &a).unwrap();
    device.free_async(on_b, &b).unwrap();
}

#[test]
fn a_synchronize_returns_while_another_thread_keeps_the_stream_busy() {
    let stream = new_stream(0);
    let (open, wait) = gate();
    stream.enqueue(task(wait));
    let target = stream.enqueue(task(|| ()));
    let stop = Arc::new(AtomicBool::new(false));
    let feeder = {
        let (stream, stop) = (stream.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(SeqCst) {
                stream.enqueue(task(|| ()));
            }
        })
    };
    open.store(true, SeqCst);
    // More than a budget's worth of work keeps arriving; the wait must end
    // once its own point is done.
    stream.wait_for(target);
    assert!(stream.passed(target));
    stop.store(true, SeqCst);
    feeder.join().unwrap();
    stream.synchronize().unwrap();
}

/// Enqueues a cheap op on `stream` and waits, without claiming the stream,
/// until a worker has run it: the stream then sits in that worker's hot set.
fn make_hot(stream: &Arc<Stream>, scratch: &mut [u8; 64]) {
    let dst = crate::stream::SendPtr(scratch.as_mut_ptr().cast());
    let seq = stream.enqueue(Op::Set { dst, value: 7, len: scratch.len() });
    while !stream.passed(seq) {
        std::hint::spin_loop();
    }
}

#[test]
fn a_hot_stream_runs_while_the_worker_holding_it_is_blocked() {
    // A worker that starts a long operation (here a host task waiting for
    // another stream) must not keep other streams parked in its hot set.
    let (a, b) = (new_stream(0), new_stream(0));
    let mut scratch = [0u8; 64];
    for _ in 0..20 {
        make_hot(&b, &mut scratch);
        make_hot(&a, &mut scratch);
        let flag = Arc::new(AtomicBool::new(false));
        let timed_out = Arc::new(AtomicBool::new(false));
        let (seen, late) = (flag.clone(), timed_out.clone());
        a.enqueue(task(move || {
            let deadline = Instant::now() + Duration::from_secs(10);
            while !seen.load(SeqCst) {
                if Instant::now() > deadline {
                    late.store(true, SeqCst);
                    return;
                }
                std::thread::yield_now();
            }
        }));
        // Nobody synchronizes b: only a worker can run this.
        b.enqueue(task(move || flag.store(true, SeqCst)));
        a.synchronize().unwrap();
        assert!(!timed_out.load(SeqCst), "b's work waited for the worker blocked on a");
        b.synchronize().unwrap();
    }
}

#[test]
fn many_streams_fed_round_robin_run_in_order_and_go_idle() {
    const STREAMS: usize = 64;
    const OPS: usize = 300;
    let streams: Vec<_> = (0..STREAMS).map(|_| new_stream(1)).collect();
    let logs: Vec<_> = (0..STREAMS).map(|_| Arc::new(Mutex::new(Vec::new()))).collect();
    let mut buffers = vec![[0u8; 64]; STREAMS];
    for i in 0..OPS {
        for (s, stream) in streams.iter().enumerate() {
            if i % 3 == 0 {
                let log = logs[s].clone();
                stream.enqueue(task(move || log.lock().unwrap().push(i)));
            } else {
                let dst = crate::stream::SendPtr(buffers[s].as_mut_ptr().cast());
                stream.enqueue(Op::Set { dst, value: i as u8, len: 64 });
            }
        }
    }
    for stream in &streams {
        stream.synchronize().unwrap();
    }
    for (s, log) in logs.iter().enumerate() {
        assert_eq!(*log.lock().unwrap(), (0..OPS).step_by(3).collect::<Vec<_>>(), "stream {s} ran out of order");
        assert_eq!(buffers[s], [(OPS - 1) as u8; 64], "stream {s}'s last set ran last");
    }
    // Hot streams are released once nothing comes: the device's busy count
    // (which lets an idle device synchronize in one load) returns to zero.
    // Device 1 is used by no other test here.
    let device = crate::fake().device(1);
    let deadline = Instant::now() + Duration::from_secs(5);
    while device.busy_streams.load(SeqCst) != 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(device.busy_streams.load(SeqCst), 0, "streams stayed counted busy after they went quiet");
}

#[test]
fn sleepers_waiting_for_different_points_all_wake() {
    // Host threads asleep on one stream for points far apart: each returns
    // once its own point is passed (completions before the lowest point
    // wake nobody; later ones must still reach the others).
    let stream = new_stream(0);
    let (open, wait) = gate();
    stream.enqueue(task(wait));
    let done = Arc::new(AtomicUsize::new(0));
    let points: Vec<u64> = (0..2000).map(|_| stream.enqueue(task(|| {}))).collect();
    let waiters: Vec<_> = [0usize, 10, 999, 1999]
        .into_iter()
        .map(|i| {
            let (stream, done, point) = (stream.clone(), done.clone(), points[i]);
            std::thread::spawn(move || {
                stream.wait_for(point);
                assert!(stream.passed(point));
                done.fetch_add(1, SeqCst);
            })
        })
        .collect();
    // Let them all fall asleep behind the gate.
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(done.load(SeqCst), 0);
    open.store(true, SeqCst);
    for waiter in waiters {
        waiter.join().unwrap();
    }
    assert_eq!(done.load(SeqCst), 4);
}
