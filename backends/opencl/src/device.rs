//! Finding the devices: the first OpenCL platform with devices that offer
//! coarse-grained buffer SVM, split into sub-devices where more xdal
//! devices are wanted than it has, and one context over all of them.
use crate::config::Config;
use crate::error::{ClCall, ClResult, Failure};
use crate::event::ClEvent;
use crate::stream::Stream;
use cl3::device::{
    CL_DEVICE_GLOBAL_MEM_SIZE, CL_DEVICE_LOCAL_MEM_SIZE, CL_DEVICE_MAX_COMPUTE_UNITS, CL_DEVICE_MAX_MEM_ALLOC_SIZE,
    CL_DEVICE_MAX_WORK_GROUP_SIZE, CL_DEVICE_MAX_WORK_ITEM_SIZES, CL_DEVICE_NAME, CL_DEVICE_PARTITION_EQUALLY,
    CL_DEVICE_PARTITION_PROPERTIES, CL_DEVICE_SVM_CAPABILITIES, CL_DEVICE_SVM_COARSE_GRAIN_BUFFER, CL_DEVICE_TYPE_ALL,
};
use cl3::error_codes::{CL_DEVICE_NOT_FOUND, CL_PLATFORM_NOT_FOUND_KHR, DLOPEN_RUNTIME_LOAD_FAILED};
use cl3::types::{cl_command_queue, cl_context, cl_device_id, cl_platform_id};
use std::ffi::c_void;
use std::ptr;
use std::sync::{Arc, Mutex, Weak};

/// What the front needs to know of a device, asked once.
pub(crate) struct Properties {
    pub name: String,
    pub global_memory: u64,
    pub max_allocation: u64,
    pub compute_units: u32,
    pub max_work_group: usize,
    pub max_work_item_sizes: [usize; 3],
    pub local_memory: u64,
}

/// One xdal device: an OpenCL device (or sub-device) and the in-order queue
/// the backend's own synchronous copies and fills use.
pub(crate) struct ClDevice {
    pub id: cl_device_id,
    pub properties: Properties,
    /// Whether queues take priority hints (`cl_khr_priority_hints`).
    pub priority_hints: bool,
    /// For synchronous operations, which the front has ordered after the
    /// device's default stream already.
    pub queue: cl_command_queue,
    /// The device's streams, for device synchronization: the live ones, and
    /// the queues of destroyed ones with the last command they were given
    /// (their pending work still completes, and a device synchronization
    /// waits for it, as on CUDA).
    pub streams: Mutex<Vec<Weak<Stream>>>,
    pub retired: Mutex<Vec<Retired>>,
}

impl ClDevice {
    /// Waits for the work of every stream of the device, destroyed ones too.
    pub fn synchronize(&self) -> ClResult<()> {
        let live: Vec<Arc<Stream>> = {
            let mut streams = self.streams.lock().unwrap_or_else(|p| p.into_inner());
            streams.retain(|s| s.strong_count() > 0);
            streams.iter().filter_map(Weak::upgrade).collect()
        };
        let retired = std::mem::take(&mut *self.retired.lock().unwrap_or_else(|p| p.into_inner()));
        for (queue, _) in &retired {
            cl3::command_queue::finish(queue.0).cl("clFinish")?;
        }
        live.iter().try_for_each(|s| s.synchronize())
    }

    /// Forgets destroyed streams whose last command has completed.
    pub fn prune_retired(&self) {
        self.retired
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(_, last)| last.as_ref().is_some_and(|e| e.status().is_ok_and(|s| s > 0)));
    }
}

/// A destroyed stream's queue, and the last command it was given.
pub(crate) type Retired = (Arc<Queue>, Option<ClEvent>);

/// A command queue this backend holds one reference to.
pub(crate) struct Queue(pub cl_command_queue);
// SAFETY: OpenCL queues are thread-safe by the specification.
unsafe impl Send for Queue {}
// SAFETY: as above.
unsafe impl Sync for Queue {}

impl Drop for Queue {
    fn drop(&mut self) {
        // SAFETY: the reference is this object's; pending commands still
        // complete after the release.
        let _ = unsafe { cl3::command_queue::release_command_queue(self.0) };
    }
}

// SAFETY: OpenCL objects are thread-safe by the specification (every API
// call but clSetKernelArg may be made from any thread).
unsafe impl Send for ClDevice {}
// SAFETY: as above.
unsafe impl Sync for ClDevice {}

/// The context over every xdal device.
pub(crate) struct Context(pub cl_context);
// SAFETY: OpenCL contexts are thread-safe by the specification.
unsafe impl Send for Context {}
// SAFETY: as above.
unsafe impl Sync for Context {}

fn info_text(id: cl_device_id, what: u32) -> String {
    cl3::device::get_device_info(id, what).map(String::from).unwrap_or_default().trim_end_matches('\0').to_string()
}

fn info_u64(id: cl_device_id, what: u32) -> ClResult<u64> {
    Ok(cl3::device::get_device_info(id, what).cl("clGetDeviceInfo")?.into())
}

fn info_u32(id: cl_device_id, what: u32) -> ClResult<u32> {
    Ok(cl3::device::get_device_info(id, what).cl("clGetDeviceInfo")?.into())
}

fn has_svm(id: cl_device_id) -> bool {
    cl3::device::get_device_info(id, CL_DEVICE_SVM_CAPABILITIES)
        .map(|caps| u64::from(caps) & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER != 0)
        .unwrap_or(false)
}

fn can_split_equally(id: cl_device_id) -> bool {
    cl3::device::get_device_info(id, CL_DEVICE_PARTITION_PROPERTIES)
        .map(|p| Vec::<isize>::from(p).contains(&CL_DEVICE_PARTITION_EQUALLY))
        .unwrap_or(false)
}

fn properties(id: cl_device_id, sub_device: Option<usize>) -> ClResult<Properties> {
    let sizes: Vec<usize> =
        cl3::device::get_device_info(id, CL_DEVICE_MAX_WORK_ITEM_SIZES).cl("clGetDeviceInfo")?.into();
    let mut max_work_item_sizes = [1usize; 3];
    for (dst, src) in max_work_item_sizes.iter_mut().zip(sizes) {
        *dst = src;
    }
    let name = info_text(id, CL_DEVICE_NAME);
    Ok(Properties {
        name: match sub_device {
            Some(i) => format!("{name} (sub-device {i})"),
            None => name,
        },
        global_memory: info_u64(id, CL_DEVICE_GLOBAL_MEM_SIZE)?,
        max_allocation: info_u64(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE)?,
        compute_units: info_u32(id, CL_DEVICE_MAX_COMPUTE_UNITS)?,
        max_work_group: cl3::device::get_device_info(id, CL_DEVICE_MAX_WORK_GROUP_SIZE).cl("clGetDeviceInfo")?.into(),
        max_work_item_sizes,
        local_memory: info_u64(id, CL_DEVICE_LOCAL_MEM_SIZE)?,
    })
}

/// `cl_khr_priority_hints`: the queue property and its high level.
const CL_QUEUE_PRIORITY_KHR: u64 = 0x1096;
const CL_QUEUE_PRIORITY_HIGH_KHR: u64 = 1 << 0;

/// The stream priorities offered, CUDA's way (a lower number is a higher
/// priority), as (least, greatest): two levels where every device takes
/// `cl_khr_priority_hints` (0, the default, is the runtime's default medium
/// hint; -1 asks for its high hint), else the single level 0. (A low hint
/// is not offered: the default stream would rank above it, and CUDA's
/// default priority is the least.)
pub(crate) fn priority_range(devices: &[ClDevice]) -> (i32, i32) {
    if !devices.is_empty() && devices.iter().all(|d| d.priority_hints) {
        (0, -1)
    } else {
        (0, 0)
    }
}

/// The priority hint of a queue for an xdal stream priority (the front has
/// checked it lies in the range above).
fn priority_hint(priority: i32, hints: bool) -> Option<u64> {
    (hints && priority < 0).then_some(CL_QUEUE_PRIORITY_HIGH_KHR)
}

/// An in-order queue on `device`, with profiling (events carry timestamps)
/// and the priority hint of `priority`.
pub(crate) fn create_queue(context: cl_context, device: &ClDevice, priority: i32) -> ClResult<cl_command_queue> {
    create_queue_on(context, device.id, priority_hint(priority, device.priority_hints))
}

fn create_queue_on(context: cl_context, device: cl_device_id, hint: Option<u64>) -> ClResult<cl_command_queue> {
    let mut properties =
        vec![cl3::command_queue::CL_QUEUE_PROPERTIES as u64, cl3::command_queue::CL_QUEUE_PROFILING_ENABLE];
    if let Some(hint) = hint {
        properties.extend([CL_QUEUE_PRIORITY_KHR, hint]);
    }
    properties.push(0);
    // SAFETY: the property list is zero-terminated; context and device are live.
    unsafe { cl3::command_queue::create_command_queue_with_properties(context, device, properties.as_ptr()) }
        .cl("clCreateCommandQueueWithProperties")
}

/// The platforms, or what is missing for there to be one.
fn platforms() -> Result<Vec<cl_platform_id>, String> {
    match cl3::platform::get_platform_ids() {
        Ok(p) if !p.is_empty() => Ok(p),
        Ok(_) | Err(CL_PLATFORM_NOT_FOUND_KHR) => Err("the OpenCL ICD loader found no platform: install an OpenCL \
                                                        implementation (on Debian: pocl-opencl-icd)"
            .to_string()),
        Err(DLOPEN_RUNTIME_LOAD_FAILED) => Err("no OpenCL ICD loader: libOpenCL.so.1 could not be loaded (on \
                                                Debian: ocl-icd-libopencl1, with an implementation such as \
                                                pocl-opencl-icd)"
            .to_string()),
        Err(code) => {
            Err(format!("clGetPlatformIDs failed: OpenCL error {code} ({})", cl3::error_codes::error_text(code)))
        }
    }
}

/// The xdal devices, as `config` asks, and their context.
pub(crate) fn discover(config: &Config) -> Result<(crate::device::Context, Vec<ClDevice>), String> {
    let mut seen = Vec::new();
    let mut chosen: Option<Vec<cl_device_id>> = None;
    for platform in platforms()? {
        let ids = match cl3::device::get_device_ids(platform, CL_DEVICE_TYPE_ALL) {
            Ok(ids) => ids,
            Err(CL_DEVICE_NOT_FOUND) => continue,
            Err(code) => return Err(format!("clGetDeviceIDs failed: OpenCL error {code}")),
        };
        seen.extend(ids.iter().map(|&id| info_text(id, CL_DEVICE_NAME)));
        let svm: Vec<_> = ids.into_iter().filter(|&id| has_svm(id)).collect();
        if !svm.is_empty() {
            chosen = Some(svm);
            break;
        }
    }
    let svm = chosen.ok_or_else(|| {
        if seen.is_empty() {
            "no OpenCL device: the platforms found have none".to_string()
        } else {
            format!(
                "no OpenCL device with shared virtual memory (coarse-grained buffer SVM, OpenCL 2.0): found {}",
                seen.join(", ")
            )
        }
    })?;
    let (ids, sub_devices) = choose(svm, config)?;
    let context = cl3::context::create_context(&ids, ptr::null(), None, ptr::null_mut::<c_void>())
        .map_err(|code| format!("clCreateContext failed: OpenCL error {code}"))?;
    let context = Context(context);
    let devices = ids
        .iter()
        .enumerate()
        .map(|(i, &id)| {
            let properties = properties(id, sub_devices.then_some(i))?;
            Ok(ClDevice {
                id,
                properties,
                priority_hints: info_text(id, cl3::device::CL_DEVICE_EXTENSIONS)
                    .split_whitespace()
                    .any(|e| e == "cl_khr_priority_hints"),
                queue: create_queue_on(context.0, id, None)?,
                streams: Mutex::new(Vec::new()),
                retired: Mutex::new(Vec::new()),
            })
        })
        .collect::<ClResult<Vec<_>>>()
        .map_err(Failure::into_message)?;
    Ok((context, devices))
}

/// The devices to offer: as many SVM devices as asked, or the first one
/// split equally; true when they are sub-devices.
fn choose(svm: Vec<cl_device_id>, config: &Config) -> Result<(Vec<cl_device_id>, bool), String> {
    let first = svm[0];
    let units = info_u32(first, CL_DEVICE_MAX_COMPUTE_UNITS).map_err(Failure::into_message)? as usize;
    let splittable = can_split_equally(first);
    let wanted = match config.device_count {
        Some(n) => n,
        None if svm.len() >= 2 || (splittable && units >= 2) => 2,
        None => 1,
    };
    if svm.len() >= wanted {
        return Ok((svm.into_iter().take(wanted).collect(), false));
    }
    if wanted == 1 {
        return Ok((vec![first], false));
    }
    if !splittable || units < wanted {
        return Err(format!(
            "XDAL_OPENCL_DEVICES={wanted}: the platform has {} SVM device(s), and the first ({}, {units} compute \
             units) cannot be split into {wanted}",
            svm.len(),
            info_text(first, CL_DEVICE_NAME)
        ));
    }
    let properties = [CL_DEVICE_PARTITION_EQUALLY, (units / wanted) as isize, 0];
    let subs = cl3::device::create_sub_devices(first, &properties)
        .map_err(|code| format!("clCreateSubDevices failed: OpenCL error {code}"))?;
    Ok((subs.into_iter().take(wanted).collect(), true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_negative_priority_asks_for_the_high_hint_and_only_with_hints() {
        assert_eq!(priority_hint(-1, true), Some(CL_QUEUE_PRIORITY_HIGH_KHR));
        assert_eq!(priority_hint(0, true), None, "the default priority keeps the runtime's default");
        assert_eq!(priority_hint(-1, false), None);
    }
}
