//! Events. An xdal event may be recorded on a stream of any device, while
//! a CUDA event belongs to one context: an xdal event holds one CUDA event
//! per device it was recorded on (made at its first record there), and
//! remembers which one holds the latest recorded point.
use crate::driver::{CUevent, CUDA_ERROR_NOT_READY, CU_EVENT_DISABLE_TIMING};
use crate::error::{failure, CuResult, Failure};
use crate::stream::Stream;
use std::sync::Mutex;

pub(crate) struct Event {
    timing: bool,
    state: Mutex<State>,
}

struct State {
    /// The CUDA event of each device (NULL until recorded there).
    per_device: Vec<CUevent>,
    /// The device whose event holds the last recorded point.
    recorded: Option<usize>,
    /// The sticky error of the stream at the last record: work before the
    /// recorded point failed, which the event's query and synchronization
    /// report, as the stream's do.
    failed: Option<Failure>,
}

// SAFETY: CUDA events may be used from any thread; the state is behind a
// mutex.
unsafe impl Send for Event {}
// SAFETY: as above.
unsafe impl Sync for Event {}

impl Event {
    pub fn new(timing: bool) -> Event {
        let devices = crate::cuda().devices.len();
        Event {
            timing,
            state: Mutex::new(State { per_device: vec![std::ptr::null_mut(); devices], recorded: None, failed: None }),
        }
    }

    /// The device and CUDA event of the last recorded point.
    fn point(&self) -> Option<(usize, CUevent)> {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.recorded.map(|d| (d, state.per_device[d]))
    }

    pub fn record(&self, stream: &Stream) -> CuResult<()> {
        stream.enter()?;
        let api = crate::api();
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.per_device[stream.device].is_null() {
            let flags = if self.timing { 0 } else { CU_EVENT_DISABLE_TIMING };
            let mut event: CUevent = std::ptr::null_mut();
            // SAFETY: a valid output; the stream's context is current.
            stream.check("cuEventCreate", unsafe { (api.event_create)(&mut event, flags) })?;
            state.per_device[stream.device] = event;
        }
        // SAFETY: an event and a stream of the current context.
        stream.check("cuEventRecord", unsafe { (api.event_record)(state.per_device[stream.device], stream.handle) })?;
        state.recorded = Some(stream.device);
        state.failed = stream.sticky().err();
        Ok(())
    }

    /// The failure of work before the recorded point, if any.
    fn failed(&self) -> CuResult<()> {
        match &self.state.lock().unwrap_or_else(|p| p.into_inner()).failed {
            Some(failure) => Err(failure.clone()),
            None => Ok(()),
        }
    }

    pub fn query(&self) -> CuResult<()> {
        let Some((device, event)) = self.point() else { return Ok(()) };
        let dev = crate::cuda().device(device);
        dev.enter()?;
        // SAFETY: a live event of the current context.
        match unsafe { (crate::api().event_query)(event) } {
            CUDA_ERROR_NOT_READY => Err(failure!(XDAL_ERROR_NOT_READY, "xdal_event_query: not reached")),
            code => {
                dev.check("cuEventQuery", code)?;
                crate::timing::settle(device);
                self.failed()
            }
        }
    }

    pub fn synchronize(&self) -> CuResult<()> {
        let Some((device, event)) = self.point() else { return Ok(()) };
        let dev = crate::cuda().device(device);
        dev.enter()?;
        // SAFETY: a live event of the current context.
        dev.check("cuEventSynchronize", unsafe { (crate::api().event_synchronize)(event) })?;
        crate::timing::settle(device);
        self.failed()
    }

    /// Makes `stream`'s later work wait for the recorded point (of any
    /// device: the driver waits across contexts).
    pub fn make_wait(&self, stream: &Stream) -> CuResult<()> {
        let Some((_, event)) = self.point() else { return Ok(()) };
        stream.enter()?;
        // SAFETY: a live stream and event; flags must be 0.
        stream.check("cuStreamWaitEvent", unsafe { (crate::api().stream_wait_event)(stream.handle, event, 0) })
    }

    pub fn elapsed_ms(start: &Event, end: &Event) -> CuResult<f32> {
        let (Some((d0, a)), Some((d1, b))) = (start.point(), end.point()) else {
            return Err(failure!(XDAL_ERROR_INVALID_VALUE, "an event was never recorded"));
        };
        if !start.timing || !end.timing {
            return Err(failure!(XDAL_ERROR_INVALID_VALUE, "an event was created with XDAL_EVENT_DISABLE_TIMING"));
        }
        if d0 != d1 {
            return Err(failure!(
                XDAL_ERROR_NOT_SUPPORTED,
                "the events were last recorded on devices {d0} and {d1}: CUDA times only events of one device"
            ));
        }
        let dev = crate::cuda().device(d0);
        dev.enter()?;
        let mut ms = 0f32;
        // SAFETY: a valid output; two live events of the current context.
        match unsafe { (crate::api().event_elapsed_time)(&mut ms, a, b) } {
            CUDA_ERROR_NOT_READY => Err(failure!(XDAL_ERROR_NOT_READY, "xdal_event_elapsed_time: an event is pending")),
            code => dev.check("cuEventElapsedTime", code).map(|()| ms),
        }
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        for (device, &event) in state.per_device.iter().enumerate() {
            if !event.is_null() && crate::cuda().device(device).enter().is_ok() {
                // SAFETY: the event is this object's; a pending record still
                // completes (the driver releases it then).
                let _ = unsafe { (crate::api().event_destroy)(event) };
            }
        }
    }
}
