//! The executor: a fixed pool of worker threads serving every stream of the
//! process. A stream with work sits in one run queue (one per priority
//! level) until a worker, or a host thread waiting for it, takes it and
//! drains it. No stream owns a thread, so streams cost only memory.
use crate::launch::Launch;
use crate::lock::IgnorePoison;
use crate::stream::{Drained, Stream};
use crate::tuning::{EMPTIED_STREAM_LINGER_PAUSES, WORKER_IDLE_SPIN_PAUSES};
use crossbeam_queue::SegQueue;
use std::sync::atomic::{fence, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

/// Number of priority levels; level 0 is served first.
pub(crate) const LEVELS: usize = 3;

pub(crate) struct Executor {
    queues: [SegQueue<Arc<Stream>>; LEVELS],
    /// Kernel launches with blocks left for any idle worker to run.
    launches: SegQueue<Arc<Launch>>,
    sleepers: AtomicUsize,
    /// Idle workers looking for work without sleeping: at most one, so that
    /// on a small machine the threads producing work keep their cores.
    spinners: AtomicUsize,
    /// Workers running a stream or a launch's blocks, or polling their hot
    /// sets, right now.
    active: AtomicUsize,
    /// Threads inside an operation that may take long or block (a host
    /// function, a kernel, a large copy): while every active worker is in
    /// one, new work needs another worker woken.
    in_long_ops: AtomicUsize,
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
            spinners: AtomicUsize::new(0),
            active: AtomicUsize::new(0),
            in_long_ops: AtomicUsize::new(0),
            lock: Mutex::new(()),
            wake: Condvar::new(),
            workers,
            started: OnceLock::new(),
        }
    }

    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Puts a stream whose state just became Queued into its run queue.
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
        // A wake-up is a system call: needed only when nobody will look at
        // the queue soon, that is when no worker spins and every running
        // worker is inside an operation that may take long (or none runs).
        let nobody_looking = self.spinners.load(Ordering::SeqCst) == 0
            && self.active.load(Ordering::SeqCst) <= self.in_long_ops.load(Ordering::SeqCst);
        if nobody_looking && self.sleepers.load(Ordering::SeqCst) > 0 {
            let _guard = self.lock.lock().ignore_poison();
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

    /// Marks the calling thread as inside a possibly long operation until
    /// the guard drops, waking a worker for work already queued.
    pub fn long_op(&'static self) -> LongOp {
        // Hot streams must not wait for this operation: they go back to the
        // run queue, where another worker (woken below) finds them.
        crate::hot::release_all();
        self.in_long_ops.fetch_add(1, Ordering::SeqCst);
        if self.has_work() {
            self.wake_one();
        }
        LongOp(self)
    }

    fn pop(&self) -> Option<Arc<Stream>> {
        self.queues.iter().find_map(|q| q.pop())
    }

    pub fn has_work(&self) -> bool {
        !self.launches.is_empty() || self.queues.iter().any(|q| !q.is_empty())
    }

    fn work(&'static self) {
        // Whether this worker is counted in `active`: from the work it finds
        // until it stops looking (its hot set released) to spin or sleep.
        let mut counted = false;
        loop {
            // Blocks of a running launch first: its stream is waiting on them.
            if let Some(launch) = self.launches.pop() {
                self.count_active(&mut counted);
                crate::hot::release_all();
                launch.help();
                continue;
            }
            if let Some(stream) = self.pop().or_else(crate::hot::next_ready) {
                self.count_active(&mut counted);
                if stream.claim() {
                    run_claimed(stream);
                }
                continue;
            }
            if crate::hot::keep_polling() {
                std::hint::spin_loop();
                continue;
            }
            crate::hot::release_all();
            if counted {
                self.active.fetch_sub(1, Ordering::SeqCst);
                counted = false;
            }
            // Spin only where a core is left over: on two cores, one worker
            // running a stream and one producing work are all it can hold.
            let room = self.active.load(Ordering::Relaxed) + 1 < self.workers.max(2);
            if room && self.spinners.compare_exchange(0, 1, Ordering::SeqCst, Ordering::Relaxed).is_ok() {
                let mut rounds = 0;
                while !self.has_work() && rounds < WORKER_IDLE_SPIN_PAUSES {
                    std::hint::spin_loop();
                    rounds += 1;
                }
                // Pairs with the fence in `wake_one`: a producer that saw us
                // spinning did not wake anyone, so look once more.
                self.spinners.store(0, Ordering::SeqCst);
                fence(Ordering::SeqCst);
            }
            if !self.has_work() {
                self.park();
            }
        }
    }

    fn count_active(&self, counted: &mut bool) {
        if !*counted {
            self.active.fetch_add(1, Ordering::SeqCst);
            *counted = true;
        }
    }

    fn park(&self) {
        let guard = self.lock.lock().ignore_poison();
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if !self.has_work() {
            drop(self.wake.wait(guard).ignore_poison());
        }
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Runs a stream a worker claimed, and keeps it in the worker's hot set
/// unless it blocked or went back to the run queue.
fn run_claimed(stream: Arc<Stream>) {
    match stream.drain(None, EMPTIED_STREAM_LINGER_PAUSES) {
        Drained::Empty | Drained::Yielded => {
            stream.park_hot();
            crate::hot::keep(stream);
        }
        Drained::Blocked | Drained::HandedBack => {}
    }
}

/// See `Executor::long_op`.
pub(crate) struct LongOp(&'static Executor);

impl Drop for LongOp {
    fn drop(&mut self) {
        self.0.in_long_ops.fetch_sub(1, Ordering::SeqCst);
    }
}
