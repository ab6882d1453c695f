//! The executor: a fixed pool of worker threads serving every stream of the
//! process. A stream with work sits in one run queue (one per priority
//! level) until a worker, or a host thread waiting for it, takes it and
//! drains it. No stream owns a thread, so streams cost only memory.
use crate::launch::Launch;
use crate::stream::Stream;
use crossbeam_queue::SegQueue;
use std::sync::atomic::{fence, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

/// Number of priority levels; level 0 is served first.
pub(crate) const LEVELS: usize = 3;

/// How long an idle worker keeps looking for work before it sleeps: long
/// enough to catch the next item of a busy producer without a wake-up.
const SPIN: Duration = Duration::from_micros(50);

pub(crate) struct Executor {
    queues: [SegQueue<Arc<Stream>>; LEVELS],
    /// Kernel launches with blocks left for any idle worker to run.
    launches: SegQueue<Arc<Launch>>,
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
    workers: usize,
    started: OnceLock<()>,
}

impl Executor {
    pub fn new(workers: usize) -> Executor {
        Executor {
            queues: Default::default(),
            launches: SegQueue::new(),
            sleepers: AtomicUsize::new(0),
            lock: Mutex::new(()),
            wake: Condvar::new(),
            workers,
            started: OnceLock::new(),
        }
    }

    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Puts a stream whose state just became QUEUED into its run queue.
    pub fn schedule(&'static self, stream: Arc<Stream>) {
        self.started.get_or_init(|| self.start());
        self.queues[stream.level()].push(stream);
        self.wake_one();
    }

    /// Offers the remaining blocks of a launch to an idle worker.
    pub fn offer(&'static self, launch: Arc<Launch>) {
        self.started.get_or_init(|| self.start());
        self.launches.push(launch);
        self.wake_one();
    }

    fn wake_one(&self) {
        // Pairs with the fence in `park`: either the sleeper sees the new
        // item, or we see the sleeper.
        fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.wake.notify_one();
        }
    }

    fn start(&'static self) {
        for index in 0..self.workers {
            let spawned = std::thread::Builder::new().name(format!("xdal-fake-{index}")).spawn(move || self.work());
            // A worker that cannot be spawned leaves the others; host threads
            // that wait also run streams, so work still progresses.
            drop(spawned);
        }
    }

    fn pop(&self) -> Option<Arc<Stream>> {
        self.queues.iter().find_map(|q| q.pop())
    }

    fn has_work(&self) -> bool {
        !self.launches.is_empty() || self.queues.iter().any(|q| !q.is_empty())
    }

    fn work(&'static self) {
        loop {
            // Blocks of a running launch first: its stream is waiting on them.
            if let Some(launch) = self.launches.pop() {
                launch.help();
                continue;
            }
            if let Some(stream) = self.pop() {
                stream.run_if_queued();
                continue;
            }
            let deadline = std::time::Instant::now() + SPIN;
            while !self.has_work() && std::time::Instant::now() < deadline {
                std::hint::spin_loop();
            }
            if !self.has_work() {
                self.park();
            }
        }
    }

    fn park(&self) {
        let guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if !self.has_work() {
            drop(self.wake.wait(guard).unwrap_or_else(|e| e.into_inner()));
        }
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }
}
