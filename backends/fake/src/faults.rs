//! Fault injection: `XDAL_FAKE_FAULTS=<spec>` at start, or
//! `xdal_debug_set_faults(spec)` at any time, so that consumers can test
//! their error paths. The spec is a comma-separated list of clauses:
//!
//! | clause       | effect |
//! | ---          | --- |
//! | `alloc@N`    | the Nth device allocation (`xdal_malloc`, `xdal_malloc_async`) fails with `XDAL_ERROR_OUT_OF_MEMORY` |
//! | `launch@N`   | the Nth kernel launch fails when it runs: its stream's error becomes `XDAL_ERROR_LAUNCH_FAILED` (sticky) |
//! | `copy@N`     | the Nth copy fails: an async copy as a launch does (sticky on its stream), a synchronous one returns `XDAL_ERROR_LAUNCH_FAILED` |
//! | `lost:D@N`   | device D is lost after N more calls touching it: from then on every call touching D returns `XDAL_ERROR_DEVICE_LOST`; other devices keep working |
//!
//! `N` counts from 1 and from the moment the spec is installed; `alloc`,
//! `launch` and `copy` take a trailing `+` for "the Nth and every later
//! one" (`alloc@1+`: every allocation fails). Counts are process-wide,
//! over all devices. Installing a spec restarts every count; a lost
//! device stays lost for the life of the process.
use crate::error::{failure, Failure, FakeResult};
use crate::lock::IgnorePoison;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::Mutex;

/// What a spec asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Spec {
    alloc: Option<Nth>,
    launch: Option<Nth>,
    copy: Option<Nth>,
    /// (device, calls touching it before it is lost)
    lost: Vec<(usize, u64)>,
}

/// The Nth event, or every one from the Nth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Nth {
    n: u64,
    onwards: bool,
}

impl Nth {
    fn hits(self, count: u64) -> bool {
        count == self.n || (self.onwards && count > self.n)
    }
}

impl Spec {
    /// Parses a spec ("" is the empty one). An error points at the clause.
    pub fn parse(text: &str, devices: usize) -> Result<Spec, String> {
        let mut spec = Spec::default();
        for clause in text.split(',').map(str::trim).filter(|c| !c.is_empty()) {
            let bad = |why: &str| {
                format!("fault clause {clause:?}: {why} (expected alloc@N, launch@N, copy@N, each with an optional +, or lost:D@N)")
            };
            let (what, count) = clause.split_once('@').ok_or_else(|| bad("no '@'"))?;
            let (count, onwards) = match count.strip_suffix('+') {
                Some(count) => (count, true),
                None => (count, false),
            };
            let n: u64 = count.parse().map_err(|_| bad(&format!("{count:?} is not a count")))?;
            let nth = || -> Result<Nth, String> {
                if n == 0 {
                    return Err(bad("the count starts at 1"));
                }
                Ok(Nth { n, onwards })
            };
            match what {
                "alloc" => spec.alloc = Some(nth()?),
                "launch" => spec.launch = Some(nth()?),
                "copy" => spec.copy = Some(nth()?),
                _ => {
                    let device = what.strip_prefix("lost:").ok_or_else(|| bad(&format!("{what:?} is not a fault")))?;
                    let device: usize =
                        device.parse().map_err(|_| bad(&format!("{device:?} is not a device index")))?;
                    if device >= devices {
                        return Err(bad(&format!("device {device} does not exist ({devices} devices)")));
                    }
                    if onwards {
                        return Err(bad("a device is lost once: no '+'"));
                    }
                    spec.lost.push((device, n));
                }
            }
        }
        Ok(spec)
    }
}

/// The installed spec and its counts. With no spec, every check is one
/// relaxed load.
pub(crate) struct Faults {
    armed: AtomicBool,
    state: Mutex<State>,
    /// Devices lost so far, one bit each (at most 64 devices).
    lost: AtomicU64,
}

#[derive(Default)]
struct State {
    spec: Spec,
    allocs: u64,
    launches: u64,
    copies: u64,
    /// Calls touching each device since the spec was installed.
    touches: Vec<u64>,
}

/// An operation that a spec may make fail.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Op {
    Alloc,
    Launch,
    Copy,
}

impl Faults {
    pub fn new(spec: Spec) -> Faults {
        let faults =
            Faults { armed: AtomicBool::new(false), state: Mutex::new(State::default()), lost: AtomicU64::new(0) };
        faults.install(spec);
        faults
    }

    /// Replaces the spec and restarts the counts.
    pub fn install(&self, spec: Spec) {
        let mut state = self.state.lock().ignore_poison();
        let armed = spec != Spec::default();
        *state = State { spec, ..State::default() };
        self.armed.store(armed || self.lost.load(Relaxed) != 0, Release);
    }

    /// Counts one `op`; a failure when the spec says this one fails.
    #[inline]
    pub fn check(&self, op: Op) -> FakeResult<()> {
        if !self.armed.load(Relaxed) {
            return Ok(());
        }
        self.check_armed(op)
    }

    #[cold]
    fn check_armed(&self, op: Op) -> FakeResult<()> {
        let mut guard = self.state.lock().ignore_poison();
        let state = &mut *guard;
        let (count, nth) = match op {
            Op::Alloc => (&mut state.allocs, state.spec.alloc),
            Op::Launch => (&mut state.launches, state.spec.launch),
            Op::Copy => (&mut state.copies, state.spec.copy),
        };
        *count += 1;
        let count = *count;
        match nth {
            Some(nth) if nth.hits(count) => Err(match op {
                Op::Alloc => failure!(
                    XDAL_ERROR_OUT_OF_MEMORY,
                    "injected fault: device allocation #{count} (XDAL_FAKE_FAULTS alloc@{})",
                    nth.n
                ),
                Op::Launch => failure!(
                    XDAL_ERROR_LAUNCH_FAILED,
                    "injected fault: kernel launch #{count} (XDAL_FAKE_FAULTS launch@{})",
                    nth.n
                ),
                Op::Copy => failure!(
                    XDAL_ERROR_LAUNCH_FAILED,
                    "injected fault: copy #{count} (XDAL_FAKE_FAULTS copy@{})",
                    nth.n
                ),
            }),
            _ => Ok(()),
        }
    }

    /// Counts a call touching `device`: `XDAL_ERROR_DEVICE_LOST` once the
    /// device is lost.
    #[inline]
    pub fn touch(&self, device: usize) -> FakeResult<()> {
        if !self.armed.load(Relaxed) {
            return Ok(());
        }
        self.touch_armed(device)
    }

    #[cold]
    fn touch_armed(&self, device: usize) -> FakeResult<()> {
        let bit = 1u64 << (device % 64);
        if self.lost.load(Acquire) & bit != 0 {
            return Err(lost(device));
        }
        let mut state = self.state.lock().ignore_poison();
        let Some(&(_, after)) = state.spec.lost.iter().find(|(d, _)| *d == device) else { return Ok(()) };
        if state.touches.len() <= device {
            state.touches.resize(device + 1, 0);
        }
        if state.touches[device] >= after {
            self.lost.fetch_or(bit, Release);
            return Err(lost(device));
        }
        state.touches[device] += 1;
        Ok(())
    }
}

fn lost(device: usize) -> Failure {
    failure!(XDAL_ERROR_DEVICE_LOST, "device {device} is lost (injected fault: XDAL_FAKE_FAULTS lost:{device}@N)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use xdal_abi::xdal_status;

    #[test]
    fn specs_parse_and_bad_clauses_are_named() {
        assert_eq!(Spec::parse("", 2), Ok(Spec::default()));
        let spec = Spec::parse(" alloc@3, launch@1+ ,copy@2,lost:1@10", 2).unwrap();
        assert_eq!(spec.alloc, Some(Nth { n: 3, onwards: false }));
        assert_eq!(spec.launch, Some(Nth { n: 1, onwards: true }));
        assert_eq!(spec.copy, Some(Nth { n: 2, onwards: false }));
        assert_eq!(spec.lost, [(1, 10)]);
        for (bad, part) in [
            ("alloc", "\"alloc\""),
            ("alloc@x", "\"x\" is not a count"),
            ("alloc@0", "starts at 1"),
            ("oom@1", "\"oom\" is not a fault"),
            ("lost:7@1", "device 7 does not exist"),
            ("lost:a@1", "\"a\" is not a device index"),
            ("lost:0@1+", "lost once"),
            ("alloc@1,bogus@2", "\"bogus@2\""),
        ] {
            let err = Spec::parse(bad, 2).unwrap_err();
            assert!(err.contains(part), "{bad}: {err}");
        }
    }

    #[test]
    fn the_nth_and_onwards_fail_and_a_new_spec_restarts_the_counts() {
        let faults = Faults::new(Spec::parse("alloc@2,launch@2+", 1).unwrap());
        assert!(faults.check(Op::Alloc).is_ok());
        assert_eq!(faults.check(Op::Alloc).unwrap_err().status, xdal_status::XDAL_ERROR_OUT_OF_MEMORY);
        assert!(faults.check(Op::Alloc).is_ok(), "only the second");
        assert!(faults.check(Op::Launch).is_ok());
        assert!(faults.check(Op::Launch).is_err());
        assert!(faults.check(Op::Launch).is_err(), "and every later one");
        assert!(faults.check(Op::Copy).is_ok());
        faults.install(Spec::parse("alloc@1", 1).unwrap());
        assert!(faults.check(Op::Alloc).is_err(), "counts restart");
        faults.install(Spec::default());
        assert!(faults.check(Op::Alloc).is_ok());
    }

    #[test]
    fn a_lost_device_stays_lost_and_others_work() {
        let faults = Faults::new(Spec::parse("lost:1@2", 2).unwrap());
        assert!(faults.touch(1).is_ok());
        assert!(faults.touch(1).is_ok());
        assert!(faults.touch(0).is_ok());
        assert_eq!(faults.touch(1).unwrap_err().status, xdal_status::XDAL_ERROR_DEVICE_LOST);
        faults.install(Spec::default());
        assert!(faults.touch(1).is_err(), "lost for good");
        assert!(faults.touch(0).is_ok());
    }
}
