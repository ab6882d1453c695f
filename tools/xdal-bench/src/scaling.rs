//! Scaling over streams: 64 B async copy throughput with 1, 8, 64 and 1024
//! streams (round-robin enqueue, then every stream synchronized), from one
//! and from two producer threads; and the resident memory of an idle
//! stream. Reference: the same with one stream and as many producers.
use crate::api::{check, DeviceMem, Res, Stream, H2D};
use crate::report::{Goal, Row, Unit};
use crate::stats::{timed, Samples, Timing};
use std::ffi::c_void;
use xdal::abi::xdal_stream_t;
use xdal::*;

const GROUP: &str = "scaling: 64 B async copies over streams";
const STREAMS: [usize; 4] = [1, 8, 64, 1024];
const PRODUCERS: [usize; 2] = [1, 2];
/// Streams created to measure the memory of one.
const IDLE_STREAMS: usize = 10_000;

/// What every producer needs, as plain addresses so that it can cross
/// into the producer threads.
#[derive(Clone, Copy)]
struct Work<'a> {
    streams: &'a [usize],
    /// Device memory with one 64 B slot per stream.
    slots: usize,
    src: usize,
    producers: usize,
}

impl Work<'_> {
    /// Producer `p`'s share of `n` copies: copy j of the batch goes to
    /// stream j mod the stream count, its slot as the destination (so no
    /// two streams write the same bytes); producer p enqueues the j with
    /// j mod producers == p.
    fn produce(&self, p: usize, n: u64) -> Res<()> {
        let (count, producers) = (self.streams.len(), self.producers as u64);
        let share = n / producers + u64::from((p as u64) < n % producers);
        for i in 0..share {
            let j = (i * producers + p as u64) as usize % count;
            let dst = (self.slots + j * 64) as *mut c_void;
            let stream = self.streams[j] as xdal_stream_t;
            check(xdal_memcpy_async(dst, self.src as *const c_void, 64, H2D, stream), "xdal_memcpy_async")?;
        }
        Ok(())
    }

    fn batch(&self, n: u64) -> Res<std::time::Duration> {
        timed(|| {
            if self.producers == 1 {
                self.produce(0, n)?;
            } else {
                std::thread::scope(|scope| {
                    let threads: Vec<_> =
                        (0..self.producers).map(|p| scope.spawn(move || self.produce(p, n))).collect();
                    threads.into_iter().try_for_each(|t| t.join().map_err(|_| "a producer thread panicked")?)
                })?;
            }
            self.streams
                .iter()
                .try_for_each(|&s| check(xdal_stream_synchronize(s as xdal_stream_t), "xdal_stream_synchronize"))
        })
    }
}

pub fn run(timing: &Timing, rows: &mut Vec<Row>, idle_memory: Option<Row>) -> Res<()> {
    let max = STREAMS[STREAMS.len() - 1];
    let streams: Vec<Stream> = (0..max).map(|_| Stream::new()).collect::<Res<_>>()?;
    let addresses: Vec<usize> = streams.iter().map(|s| s.0 as usize).collect();
    let slots = DeviceMem::touched(max * 64)?;
    let src = [9u8; 64];
    for producers in PRODUCERS {
        let mut one_stream: Option<Samples> = None;
        for count in STREAMS {
            let work =
                Work { streams: &addresses[..count], slots: slots.ptr as usize, src: src.as_ptr() as usize, producers };
            let samples = timing.measure(|n| work.batch(n))?;
            let name = format!("{count} stream{}, {producers} producer{}", plural(count), plural(producers));
            let mut row = Row::new(GROUP, name, Unit::MopsPerSec, &samples);
            match &one_stream {
                None => one_stream = Some(samples),
                Some(reference) => {
                    row = row.vs(format!("1 stream, {producers} producer{}", plural(producers)), reference);
                    if count == 64 {
                        row = row.goal(Goal::RatioAtLeast(0.8));
                    }
                }
            }
            rows.push(row);
        }
    }
    rows.extend(idle_memory);
    Ok(())
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Resident memory per idle stream: RSS (from /proc/self/statm) before and
/// after creating 10,000 streams. Run first, before the other groups have
/// grown and freed the heap, so that new streams need new pages. One
/// measurement, not repeated: a second would reuse the first one's pages.
pub fn idle_stream_memory() -> Res<Option<Row>> {
    let Some(page) = page_size() else { return Ok(None) };
    let mut streams = Vec::with_capacity(IDLE_STREAMS);
    let before = resident_pages()?;
    for _ in 0..IDLE_STREAMS {
        streams.push(Stream::new()?);
    }
    let after = resident_pages()?;
    drop(streams);
    let bytes = after.saturating_sub(before) as f64 * page as f64 / IDLE_STREAMS as f64;
    let name = format!("resident memory per idle stream ({IDLE_STREAMS} created)");
    Ok(Some(Row::new(GROUP, name, Unit::BytesPerStream, &Samples::single(bytes))))
}

/// Resident pages of this process (the second field of /proc/self/statm).
fn resident_pages() -> Res<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").map_err(|e| format!("/proc/self/statm: {e}"))?;
    statm
        .split_whitespace()
        .nth(1)
        .and_then(|field| field.parse().ok())
        .ok_or_else(|| format!("/proc/self/statm: unexpected contents {statm:?}"))
}

#[cfg(target_os = "linux")]
fn page_size() -> Option<u64> {
    extern "C" {
        fn sysconf(name: std::ffi::c_int) -> std::ffi::c_long;
    }
    /// `_SC_PAGESIZE` on Linux (glibc and musl alike).
    const SC_PAGESIZE: std::ffi::c_int = 30;
    // SAFETY: sysconf takes any name and only reads system configuration.
    let page = unsafe { sysconf(SC_PAGESIZE) };
    u64::try_from(page).ok().filter(|&p| p > 0)
}

#[cfg(not(target_os = "linux"))]
fn page_size() -> Option<u64> {
    None
}
