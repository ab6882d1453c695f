//! The devices: every device the driver reports, each with its primary
//! context (the one the CUDA runtime uses too, so memory and streams are
//! shared with a runtime user in the same process), made current on the
//! calling thread before a driver call that needs it. Peer access is
//! enabled at start between every pair of devices that can have it, so a
//! kernel reaches another device's memory as on the other backends.
//!
//! A device whose context met an error the driver never recovers from (a
//! kernel that faulted: `CUDA_ERROR_ILLEGAL_ADDRESS` and the like) is lost:
//! every later call that touches it is `XDAL_ERROR_DEVICE_LOST`, while the
//! other devices go on working.
use crate::driver::{attribute, Api, CUcontext, CUdevice, CUresult, Driver, CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED};
use crate::error::{check, cuda_failure, failure, is_context_fatal, CuResult, Failure};
use crate::stream::Stream;
use std::ffi::{c_char, c_int, CStr};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// What the front needs to know of a device, asked once.
pub(crate) struct Properties {
    pub name: String,
    pub total_memory: u64,
    pub compute_units: u32,
    pub max_threads_per_block: u32,
    pub max_block_dim: [u32; 3],
    pub max_grid_dim: [u32; 3],
    pub shared_mem_per_block: u64,
    pub warp_size: u32,
    /// Compute capability (major, minor).
    pub capability: (i32, i32),
    /// Whether the device has stream-ordered memory pools.
    pub memory_pools: bool,
}

/// A primary context this backend retained (for the life of the process).
pub(crate) struct Context(pub CUcontext);
// SAFETY: CUDA contexts may be made current on, and used from, any thread.
unsafe impl Send for Context {}
// SAFETY: as above.
unsafe impl Sync for Context {}

/// One xdal device.
pub(crate) struct Device {
    /// Its xdal index, which is its CUDA ordinal.
    pub index: usize,
    pub handle: CUdevice,
    pub context: Context,
    pub properties: Properties,
    /// The stream priorities, as (least, greatest); a lower number is more
    /// urgent.
    pub priorities: (c_int, c_int),
    /// `peers[j]`: whether this device's kernels reach device j's memory.
    pub peers: Vec<bool>,
    /// The device's streams, whose sticky errors a device synchronization
    /// reports too.
    pub streams: Mutex<Vec<Weak<Stream>>>,
    /// Why the device was lost, once it is.
    lost: OnceLock<String>,
}

impl Device {
    /// Makes the device's context current on this thread; refused once the
    /// device is lost.
    pub fn enter(&self) -> CuResult<()> {
        if let Some(why) = self.lost.get() {
            return Err(failure!(
                XDAL_ERROR_DEVICE_LOST,
                "device {} ({}) is lost to this process: {why}",
                self.index,
                self.properties.name
            ));
        }
        make_current(crate::api(), self.context.0)
    }

    /// A driver call's result on this device: a context-fatal error loses
    /// the device.
    pub fn check(&self, what: &str, code: CUresult) -> CuResult<()> {
        if code == 0 {
            return Ok(());
        }
        let failure = cuda_failure(what, code);
        if is_context_fatal(code) {
            let _ = self.lost.set(failure.message.clone());
            return Err(failure!(
                XDAL_ERROR_DEVICE_LOST,
                "{}; device {} ({}) is lost to this process",
                failure.message,
                self.index,
                self.properties.name
            ));
        }
        Err(failure)
    }

    /// Waits for the work of every stream of the device, destroyed ones
    /// too; then reports the first sticky error of a live stream, as the
    /// streams' own synchronizations would.
    pub fn synchronize(&self) -> CuResult<()> {
        self.enter()?;
        // SAFETY: the device's context is current.
        self.check("cuCtxSynchronize", unsafe { (crate::api().ctx_synchronize)() })?;
        crate::timing::settle(self.index);
        let live: Vec<Arc<Stream>> = {
            let mut streams = self.streams.lock().unwrap_or_else(|p| p.into_inner());
            streams.retain(|s| s.strong_count() > 0);
            streams.iter().filter_map(Weak::upgrade).collect()
        };
        live.iter().try_for_each(|s| s.sticky())
    }
}

/// Makes `context` current on this thread, unless it is already.
pub(crate) fn make_current(api: &Api, context: CUcontext) -> CuResult<()> {
    let mut current: CUcontext = std::ptr::null_mut();
    // SAFETY: a valid output.
    check("cuCtxGetCurrent", unsafe { (api.ctx_get_current)(&mut current) })?;
    if current != context {
        // SAFETY: a primary context this backend retained.
        check("cuCtxSetCurrent", unsafe { (api.ctx_set_current)(context) })?;
    }
    Ok(())
}

/// The device whose context is current on this thread, or else device 0
/// (made current): for calls that name no device (synchronous copies and
/// fills, whose addresses any context reaches).
pub(crate) fn current_or_first() -> CuResult<&'static Device> {
    let cuda = crate::cuda();
    let mut current: CUcontext = std::ptr::null_mut();
    // SAFETY: a valid output.
    check("cuCtxGetCurrent", unsafe { (cuda.driver.api.ctx_get_current)(&mut current) })?;
    let device = cuda.devices.iter().find(|d| d.context.0 == current).unwrap_or(&cuda.devices[0]);
    device.enter()?;
    Ok(device)
}

fn attribute(api: &Api, device: CUdevice, which: c_int) -> Result<c_int, String> {
    let mut value = 0;
    // SAFETY: a valid output and device.
    let code = unsafe { (api.device_get_attribute)(&mut value, which, device) };
    check("cuDeviceGetAttribute", code).map_err(Failure::into_message)?;
    Ok(value)
}

fn properties(api: &Api, device: CUdevice) -> Result<Properties, String> {
    let get = |which| attribute(api, device, which);
    let unsigned = |which| get(which).map(|v| v.max(0) as u32);
    let mut name = [0 as c_char; 256];
    // SAFETY: the buffer holds 256 bytes; the driver NUL-terminates.
    check("cuDeviceGetName", unsafe { (api.device_get_name)(name.as_mut_ptr(), 256, device) })
        .map_err(Failure::into_message)?;
    // SAFETY: NUL-terminated by the driver (the last byte is never written
    // otherwise: it was 0).
    let name = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
    let mut total = 0usize;
    // SAFETY: a valid output and device.
    check("cuDeviceTotalMem_v2", unsafe { (api.device_total_mem)(&mut total, device) })
        .map_err(Failure::into_message)?;
    let dims = |first: c_int| -> Result<[u32; 3], String> {
        Ok([unsigned(first)?, unsigned(first + 1)?, unsigned(first + 2)?])
    };
    Ok(Properties {
        name,
        total_memory: total as u64,
        compute_units: unsigned(attribute::MULTIPROCESSOR_COUNT)?,
        max_threads_per_block: unsigned(attribute::MAX_THREADS_PER_BLOCK)?,
        max_block_dim: dims(attribute::MAX_BLOCK_DIM_X)?,
        max_grid_dim: dims(attribute::MAX_GRID_DIM_X)?,
        shared_mem_per_block: u64::from(unsigned(attribute::MAX_SHARED_MEMORY_PER_BLOCK)?),
        warp_size: unsigned(attribute::WARP_SIZE)?,
        capability: (get(attribute::COMPUTE_CAPABILITY_MAJOR)?, get(attribute::COMPUTE_CAPABILITY_MINOR)?),
        memory_pools: get(attribute::MEMORY_POOLS_SUPPORTED)? != 0,
    })
}

/// Every device of the driver, its primary context retained, and peer
/// access enabled where it can be.
pub(crate) fn discover(driver: &Driver) -> Result<Vec<Device>, String> {
    let api = &driver.api;
    let fail = |what: &str, code: CUresult| check(what, code).map_err(Failure::into_message);
    let mut devices = Vec::with_capacity(driver.device_count);
    for index in 0..driver.device_count {
        let mut handle: CUdevice = 0;
        // SAFETY: a valid output; the ordinal is below the device count.
        fail("cuDeviceGet", unsafe { (api.device_get)(&mut handle, index as c_int) })?;
        let properties = properties(api, handle)?;
        let mut context: CUcontext = std::ptr::null_mut();
        // SAFETY: a valid output and device. The context is kept for the
        // life of the process (never released: other users of the primary
        // context in the process may still need it at exit).
        fail("cuDevicePrimaryCtxRetain", unsafe { (api.primary_ctx_retain)(&mut context, handle) })?;
        make_current(api, context).map_err(Failure::into_message)?;
        let (mut least, mut greatest) = (0, 0);
        // SAFETY: valid outputs; the device's context is current.
        fail("cuCtxGetStreamPriorityRange", unsafe { (api.ctx_get_stream_priority_range)(&mut least, &mut greatest) })?;
        devices.push(Device {
            index,
            handle,
            context: Context(context),
            properties,
            priorities: (least, greatest),
            peers: vec![false; driver.device_count],
            streams: Mutex::new(Vec::new()),
            lost: OnceLock::new(),
        });
    }
    enable_peer_access(api, &mut devices)?;
    Ok(devices)
}

/// Enables access from each device to each other one that it can reach.
fn enable_peer_access(api: &Api, devices: &mut [Device]) -> Result<(), String> {
    let handles: Vec<(CUdevice, CUcontext)> = devices.iter().map(|d| (d.handle, d.context.0)).collect();
    for device in devices.iter_mut() {
        for (j, &(peer, peer_context)) in handles.iter().enumerate() {
            if j == device.index {
                continue;
            }
            let mut can = 0;
            // SAFETY: a valid output and devices.
            let code = unsafe { (api.device_can_access_peer)(&mut can, device.handle, peer) };
            check("cuDeviceCanAccessPeer", code).map_err(Failure::into_message)?;
            if can == 0 {
                continue;
            }
            make_current(api, device.context.0).map_err(Failure::into_message)?;
            // SAFETY: the peer's primary context; flags must be 0.
            let code = unsafe { (api.ctx_enable_peer_access)(peer_context, 0) };
            // A peer mapping the process made already (through the runtime)
            // is as good as one made here; one the driver refuses (too many
            // peers) leaves the pair without access, as can_access_peer says.
            device.peers[j] = code == 0 || code == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
        }
    }
    Ok(())
}
