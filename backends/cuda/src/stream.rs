//! Streams: one CUDA stream each, created non-blocking (the front gives
//! each device a default stream of its own and orders synchronous calls
//! after it, so the driver's legacy stream, which the backend's own
//! synchronous copies use, must not serialise with every stream).
use crate::driver::{CUstream, CUDA_ERROR_NOT_READY, CU_STREAM_NON_BLOCKING};
use crate::error::{failure, CuResult, Failure};
use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex};
use xdal_abi::xdal_host_fn_t;

pub(crate) struct Stream {
    pub device: usize,
    pub handle: CUstream,
    /// The first failure of work on the stream that the driver did not see
    /// (a built-in kernel's refusal), returned by every later query and
    /// synchronization, as a faulting kernel's error would be.
    error: Mutex<Option<Failure>>,
}

// SAFETY: CUDA streams may be used from any thread; the rest is behind a
// mutex.
unsafe impl Send for Stream {}
// SAFETY: as above.
unsafe impl Sync for Stream {}

impl Stream {
    /// A new stream on `device` with `priority` (within the device's range:
    /// the front checks).
    pub fn create(device: usize, priority: c_int) -> CuResult<Arc<Stream>> {
        let dev = crate::cuda().device(device);
        dev.enter()?;
        let mut handle: CUstream = std::ptr::null_mut();
        // SAFETY: a valid output; the device's context is current.
        let code = unsafe { (crate::api().stream_create_with_priority)(&mut handle, CU_STREAM_NON_BLOCKING, priority) };
        dev.check("cuStreamCreateWithPriority", code)?;
        let stream = Arc::new(Stream { device, handle, error: Mutex::new(None) });
        let mut streams = dev.streams.lock().unwrap_or_else(|p| p.into_inner());
        streams.retain(|s| s.strong_count() > 0);
        streams.push(Arc::downgrade(&stream));
        drop(streams);
        Ok(stream)
    }

    /// Makes the stream's device current, refusing a lost one.
    pub fn enter(&self) -> CuResult<()> {
        crate::cuda().device(self.device).enter()
    }

    /// A driver call's result on the stream's device.
    pub fn check(&self, what: &str, code: crate::driver::CUresult) -> CuResult<()> {
        crate::cuda().device(self.device).check(what, code)
    }

    /// The stream's sticky error, if it has one.
    pub fn sticky(&self) -> CuResult<()> {
        match &*self.error.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(failure) => Err(failure.clone()),
            None => Ok(()),
        }
    }

    /// Makes `failure` the stream's error, unless it has one.
    pub fn fail(&self, failure: Failure) {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(failure);
    }

    pub fn query(&self) -> CuResult<()> {
        self.sticky()?;
        self.enter()?;
        // SAFETY: a live stream of the current context.
        match unsafe { (crate::api().stream_query)(self.handle) } {
            CUDA_ERROR_NOT_READY => Err(failure!(XDAL_ERROR_NOT_READY, "xdal_stream_query: work pending")),
            code => self.check("cuStreamQuery", code).inspect(|()| crate::timing::settle(self.device)),
        }
    }

    pub fn synchronize(&self) -> CuResult<()> {
        self.enter()?;
        // SAFETY: a live stream of the current context.
        let code = unsafe { (crate::api().stream_synchronize)(self.handle) };
        self.check("cuStreamSynchronize", code)?;
        crate::timing::settle(self.device);
        self.sticky()
    }

    /// Runs `func(user_data)` once the work enqueued so far is done; work
    /// enqueued later waits for it to return. The driver runs it on a
    /// thread of its own, where it must make no CUDA call (the driver
    /// refuses them there: `CUDA_ERROR_NOT_PERMITTED`).
    pub fn launch_host_func(&self, func: xdal_host_fn_t, user_data: *mut c_void) -> CuResult<()> {
        self.enter()?;
        // SAFETY: a live stream; `xdal_host_fn_t` and `CUhostFn` are the
        // same C function pointer type; the caller keeps `user_data` valid
        // until the function has run.
        let code = unsafe { (crate::api().launch_host_func)(self.handle, func, user_data) };
        self.check("cuLaunchHostFunc", code)
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // Pending work still completes: the driver releases the stream
        // once it is done (cuStreamDestroy does not wait).
        if self.enter().is_ok() {
            // SAFETY: the stream is this object's, and no longer used.
            let _ = unsafe { (crate::api().stream_destroy)(self.handle) };
        }
    }
}
