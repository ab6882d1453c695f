//! The timing loop and its statistics.
//!
//! A measurement is a closure `batch(n)` that runs `n` operations and
//! returns how long they took (it times itself, so set-up can stay out).
//! `Timing::measure` warms it up once, sizes `n` so that one batch takes
//! about `Timing::batch`, then runs `reps` batches; each batch gives one
//! per-operation time, and the report shows the median, min and max of
//! those.
use crate::api::Res;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The most operations one batch may hold, whatever the calibration says.
const MAX_OPS: u64 = 1 << 32;

/// How long measurements run.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// Batches measured per figure (after the warm-up and the sizing runs).
    pub reps: usize,
    /// What one batch should take.
    pub batch: Duration,
}

impl Timing {
    /// Full mode: 9 batches of ~60 ms; `--quick`: 3 batches of ~5 ms.
    pub fn new(quick: bool, reps: Option<usize>) -> Timing {
        let (default_reps, batch) = if quick { (3, Duration::from_millis(5)) } else { (9, Duration::from_millis(60)) };
        Timing { reps: reps.unwrap_or(default_reps).max(1), batch }
    }

    /// Sizes a batch for `batch`: `n` grows until one batch takes at least
    /// half the target, then is set so that it takes about the target.
    /// The first call (one operation) is the warm-up.
    fn calibrate(&self, batch: &mut impl FnMut(u64) -> Res<Duration>) -> Res<u64> {
        batch(1)?;
        let mut n = 1u64;
        loop {
            let took = batch(n)?.as_secs_f64();
            let target = self.batch.as_secs_f64();
            if took >= target / 2.0 || n >= MAX_OPS {
                return Ok(n);
            }
            let per_op = took / n as f64;
            let want = if per_op > 0.0 { (target / per_op).ceil() as u64 } else { n.saturating_mul(100) };
            n = want.clamp(n.saturating_mul(2), n.saturating_mul(100)).min(MAX_OPS);
        }
    }

    /// Measures one closure: warm-up, sizing, then `reps` batches.
    pub fn measure(&self, mut batch: impl FnMut(u64) -> Res<Duration>) -> Res<Samples> {
        let n = self.calibrate(&mut batch)?;
        let mut per_op = Vec::with_capacity(self.reps);
        for _ in 0..self.reps {
            per_op.push(batch(n)?.as_secs_f64() / n as f64);
        }
        Ok(Samples { per_op, ops: n, pair: None })
    }

    /// Measures two closures with their batches interleaved (a, b, a, b,
    /// ...), so that drift in the machine's speed hits both alike: for
    /// figures compared by their difference.
    pub fn measure_pair(
        &self,
        mut a: impl FnMut(u64) -> Res<Duration>,
        mut b: impl FnMut(u64) -> Res<Duration>,
    ) -> Res<(Samples, Samples)> {
        static PAIRS: AtomicU64 = AtomicU64::new(0);
        let (na, nb) = (self.calibrate(&mut a)?, self.calibrate(&mut b)?);
        let (mut sa, mut sb) = (Vec::with_capacity(self.reps), Vec::with_capacity(self.reps));
        for _ in 0..self.reps {
            sa.push(a(na)?.as_secs_f64() / na as f64);
            sb.push(b(nb)?.as_secs_f64() / nb as f64);
        }
        let pair = Some(PAIRS.fetch_add(1, Ordering::Relaxed));
        Ok((Samples { per_op: sa, ops: na, pair }, Samples { per_op: sb, ops: nb, pair }))
    }
}

/// Times `f`.
#[inline]
pub fn timed(f: impl FnOnce() -> Res<()>) -> Res<Duration> {
    let start = Instant::now();
    f()?;
    Ok(start.elapsed())
}

/// Per-operation times (seconds) of the measured batches.
#[derive(Clone, Debug)]
pub struct Samples {
    pub per_op: Vec<f64>,
    /// Operations per batch.
    pub ops: u64,
    /// The `measure_pair` call that measured these batches, each one
    /// beside the other side's batch of the same index (None: measured
    /// alone).
    pub pair: Option<u64>,
}

impl Samples {
    /// One figure taken once (no repetition): min = median = max.
    pub fn single(value_per_op: f64) -> Samples {
        Samples::alone(vec![value_per_op])
    }

    /// Batches measured alone.
    pub fn alone(per_op: Vec<f64>) -> Samples {
        Samples { per_op, ops: 1, pair: None }
    }

    /// The same batches counted as `parts` operations each (a graph of
    /// `parts` nodes launched as one).
    pub fn per_node(&self, parts: u64) -> Samples {
        Samples {
            per_op: self.per_op.iter().map(|s| s / parts as f64).collect(),
            ops: self.ops * parts,
            pair: self.pair,
        }
    }

    /// The statistics of `figure(per_op)` over the batches.
    pub fn stat(&self, figure: impl Fn(f64) -> f64) -> Stat {
        let mut values: Vec<f64> = self.per_op.iter().map(|&s| figure(s)).collect();
        values.sort_by(f64::total_cmp);
        Stat {
            median: median(&values),
            min: values.first().copied().unwrap_or(f64::NAN),
            max: values.last().copied().unwrap_or(f64::NAN),
            reps: values.len(),
            ops_per_batch: self.ops,
        }
    }

    /// Batch by batch against `other`, if the two were measured as one
    /// pair: the statistics of `compare(figure(mine), figure(other's))`
    /// over the batches. Each comparison sees the machine as it was for
    /// both batches, so its median drifts less with the machine's speed
    /// than the comparison of the two medians does.
    pub fn paired(
        &self,
        other: &Samples,
        figure: impl Fn(f64) -> f64,
        compare: impl Fn(f64, f64) -> f64,
    ) -> Option<Stat> {
        if self.pair.is_none() || self.pair != other.pair || self.per_op.len() != other.per_op.len() {
            return None;
        }
        let each: Vec<f64> =
            self.per_op.iter().zip(&other.per_op).map(|(&a, &b)| compare(figure(a), figure(b))).collect();
        Some(Samples { per_op: each, ops: self.ops, pair: None }.stat(|c| c))
    }
}

/// Median of sorted values (mean of the middle two for an even count).
fn median(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// Median, min and max of one figure, in its unit.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Stat {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Batches the figure is taken over.
    pub reps: usize,
    /// Operations per batch.
    pub ops_per_batch: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_min_max() {
        let samples = Samples::alone(vec![3.0, 1.0, 2.0]);
        let stat = samples.stat(|s| s * 2.0);
        assert_eq!((stat.median, stat.min, stat.max), (4.0, 2.0, 6.0));
        let even = Samples::alone(vec![4.0, 1.0, 2.0, 3.0]);
        assert_eq!(even.stat(|s| s).median, 2.5);
    }

    #[test]
    fn rates_flip_min_and_max() {
        let samples = Samples::alone(vec![1.0, 2.0, 4.0]);
        let stat = samples.stat(|s| 1.0 / s);
        assert_eq!((stat.median, stat.min, stat.max), (0.5, 0.25, 1.0));
    }

    #[test]
    fn a_pair_compares_batch_by_batch_and_nothing_else_pairs() {
        let timing = Timing { reps: 3, batch: Duration::from_millis(1) };
        // The machine slows down batch after batch: each pair sees it
        // alike, and xdal takes 1.1 times the reference in every pair.
        let slowdown = std::cell::Cell::new(0u64);
        let (xdal, reference) = timing
            .measure_pair(
                |n| {
                    slowdown.set(slowdown.get() + 1);
                    Ok(Duration::from_nanos(n * 1100 * slowdown.get()))
                },
                |n| Ok(Duration::from_nanos(n * 1000 * slowdown.get())),
            )
            .unwrap();
        let ratio = xdal.paired(&reference, |s| s, |a, b| a / b).unwrap();
        assert!((ratio.median - 1.1).abs() < 1e-9 && (ratio.max - ratio.min).abs() < 1e-9, "{ratio:?}");
        let (other, _) = timing.measure_pair(|n| Ok(Duration::from_nanos(n)), |n| Ok(Duration::from_nanos(n))).unwrap();
        assert!(xdal.paired(&other, |s| s, |a, b| a / b).is_none(), "batches of another measurement");
        assert!(Samples::alone(vec![1.0; 3]).paired(&Samples::alone(vec![1.0; 3]), |s| s, |a, b| a / b).is_none());
    }

    #[test]
    fn calibration_reaches_the_target() {
        let timing = Timing { reps: 3, batch: Duration::from_millis(10) };
        // An operation of 1 us, simulated.
        let samples = timing.measure(|n| Ok(Duration::from_micros(n))).unwrap();
        assert!(samples.ops >= 5_000, "{}", samples.ops);
        assert_eq!(samples.per_op.len(), 3);
    }
}
