//! The state of the machine the figures come from: how long one cache line
//! takes to go from one core to another and back. On a shared 2-core
//! virtual machine this moves by a factor of five from minute to minute
//! (the host places the two virtual CPUs near or far apart), and with it
//! every figure in which two threads hand work to each other. Printed with
//! the run, taken at its start and its end, so a table can be read for
//! what the machine was doing.
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::time::{Duration, Instant};

/// How long one measurement runs at most: on a machine busy with other
/// work a spinning thread can lose its core for a whole time slice.
const TIME: Duration = Duration::from_millis(20);

/// Round trips between two looks at the clock.
const PER_LOOK: u64 = 1024;

/// What the measuring thread writes to end the other one's loop.
const STOP: u64 = u64::MAX;

/// Nanoseconds per round trip of one cache line between two threads, each
/// spinning until the other has written its turn: the median of three.
pub fn core_round_trip_ns() -> f64 {
    let mut samples: Vec<f64> = (0..3).map(|_| once()).collect();
    samples.sort_by(f64::total_cmp);
    samples[1]
}

fn once() -> f64 {
    let turn = AtomicU64::new(0);
    std::thread::scope(|scope| {
        // Answers every odd turn with the next even one, until STOP.
        scope.spawn(|| {
            let mut answered = 0;
            loop {
                let seen = turn.load(Acquire);
                if seen == STOP {
                    return;
                }
                if seen % 2 == 1 && seen > answered {
                    answered = seen + 1;
                    turn.store(answered, Release);
                } else {
                    std::hint::spin_loop();
                }
            }
        });
        let start = Instant::now();
        let mut round_trips = 0u64;
        while round_trips % PER_LOOK != 0 || start.elapsed() < TIME {
            let mine = 2 * round_trips + 1;
            turn.store(mine, Release);
            while turn.load(Acquire) != mine + 1 {
                std::hint::spin_loop();
            }
            round_trips += 1;
        }
        let took = start.elapsed();
        turn.store(STOP, Release);
        took.as_secs_f64() * 1e9 / round_trips as f64
    })
}
