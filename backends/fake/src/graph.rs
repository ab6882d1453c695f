//! Native graph execs: an instantiated graph is a prepared list. Kernel
//! launches are prepared once (arguments copied and translated), copies
//! and sets hold backend-side addresses, and a launch of the exec enqueues
//! one operation that runs every node in order on the stream's worker:
//! nothing is checked or allocated per node at replay.
use crate::error::FakeResult;
use crate::launch::Launch;
use std::ffi::c_void;
use std::sync::Arc;
use xdal_backend_support::callback::run_callback;

/// One prepared node.
pub(crate) enum Step {
    Kernel(Arc<Launch>),
    Copy { dst: usize, src: usize, len: usize },
    Set { dst: usize, value: u8, len: usize },
    Host { func: unsafe extern "C" fn(*mut c_void), data: usize },
}

pub(crate) struct FakeGraphExec {
    pub steps: Vec<Step>,
}

impl FakeGraphExec {
    /// Runs every node in order; the first failure ends the run and
    /// becomes the stream's error.
    pub fn run(&self) -> FakeResult<()> {
        for step in &self.steps {
            match *step {
                Step::Kernel(ref launch) => launch.rerun()?,
                // SAFETY: both ranges were checked when captured and are
                // backend-side (alias) addresses; overlap gives memmove's
                // result, as for an eager copy.
                Step::Copy { dst, src, len } => unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, len) },
                // SAFETY: as for a copy.
                Step::Set { dst, value, len } => unsafe { std::ptr::write_bytes(dst as *mut u8, value, len) },
                // SAFETY: the caller gave the function and its argument to be
                // run in stream order, once per replay; marked as a callback.
                Step::Host { func, data } => run_callback(|| unsafe { func(data as *mut c_void) }),
            }
        }
        Ok(())
    }
}
