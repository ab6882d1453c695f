//! Devices: count, current device, properties, synchronization, memory info.
use crate::backend::{backend, call};
use crate::error::{bail, boundary, Out, XResult};
use crate::threads::{current_device, set_current_device};
use std::ffi::c_int;
use xdal_abi::*;

/// Writes the number of devices the backend offers.
#[no_mangle]
pub extern "C" fn xdal_device_get_count(count: *mut c_int) -> xdal_status_t {
    boundary(c"xdal_device_get_count", || {
        let count = Out::new(count, "count")?;
        count.write(backend()?.device_count);
        Ok(())
    })
}

/// Makes `device` the calling thread's current device. Out of range is
/// `XDAL_ERROR_INVALID_DEVICE`, and the current device stays as it was.
#[no_mangle]
pub extern "C" fn xdal_device_set(device: c_int) -> xdal_status_t {
    boundary(c"xdal_device_set", || {
        set_current_device(backend()?.device(device)?.get());
        Ok(())
    })
}

/// Writes the calling thread's current device (0 in a new thread).
#[no_mangle]
pub extern "C" fn xdal_device_get(device: *mut c_int) -> xdal_status_t {
    boundary(c"xdal_device_get", || {
        let device = Out::new(device, "device")?;
        backend()?;
        device.write(current_device());
        Ok(())
    })
}

/// Checks the caller's `struct_size` of an extensible output struct.
pub(crate) fn check_struct_size<T>(out: &Out<T>, what: &str) -> XResult<()> {
    // SAFETY: `out` is non-NULL, and every extensible struct starts with the
    // caller-set `size_t struct_size`.
    let size = unsafe { *(out.as_ptr() as *const usize) };
    if size < std::mem::size_of::<usize>() {
        bail!(XDAL_ERROR_INVALID_VALUE, "{what}->struct_size is {size}: set it to sizeof({what})");
    }
    Ok(())
}

/// Fills `props` with what `device` is and can do. The caller sets
/// `props->struct_size`; only the fields that fit are written.
#[no_mangle]
pub extern "C" fn xdal_device_get_properties(device: c_int, props: *mut xdal_device_properties_t) -> xdal_status_t {
    boundary(c"xdal_device_get_properties", || {
        let props = Out::new(props, "props")?;
        check_struct_size(&props, "props")?;
        let backend = backend()?;
        backend.device(device)?;
        // SAFETY: all-zero bytes are a valid xdal_device_properties_t.
        let mut value: xdal_device_properties_t = unsafe { std::mem::zeroed() };
        value.struct_size = std::mem::size_of::<xdal_device_properties_t>();
        call!(backend, device_get_properties(device, &mut value))?;
        // SAFETY: the caller's struct holds `struct_size` bytes, checked above.
        unsafe { write_sized(props.as_ptr(), &value) };
        Ok(())
    })
}

/// Waits for all work of every stream of the current device; returns the
/// first sticky stream error found.
#[no_mangle]
pub extern "C" fn xdal_device_synchronize() -> xdal_status_t {
    boundary(c"xdal_device_synchronize", || {
        let backend = backend()?;
        let device = backend.device(current_device())?;
        crate::threads::refuse_wait_in_callback("xdal_device_synchronize")?;
        crate::graph::capture::check_device_wait(device, "xdal_device_synchronize")?;
        crate::dispatch::device::synchronize(backend, device.get())
    })
}

/// Writes the range of stream priorities of the current device: `least`
/// (the default) and `greatest`; numerically lower is more urgent.
#[no_mangle]
pub extern "C" fn xdal_device_get_stream_priority_range(least: *mut c_int, greatest: *mut c_int) -> xdal_status_t {
    boundary(c"xdal_device_get_stream_priority_range", || {
        let (least, greatest) = (Out::new(least, "least")?, Out::new(greatest, "greatest")?);
        let backend = backend()?;
        least.write(backend.priority_least);
        greatest.write(backend.priority_greatest);
        Ok(())
    })
}

/// Writes 1 to `can_access` if `device` can address `peer`'s memory
/// directly, else 0 (a device is not its own peer).
#[no_mangle]
pub extern "C" fn xdal_device_can_access_peer(can_access: *mut c_int, device: c_int, peer: c_int) -> xdal_status_t {
    boundary(c"xdal_device_can_access_peer", || {
        let can_access = Out::new(can_access, "can_access")?;
        let backend = backend()?;
        backend.device(device)?;
        backend.device(peer)?;
        can_access.write(crate::dispatch::device::can_access_peer(backend, device, peer)?);
        Ok(())
    })
}

/// Writes the free and total memory of the current device, in bytes.
#[no_mangle]
pub extern "C" fn xdal_mem_get_info(free_bytes: *mut usize, total_bytes: *mut usize) -> xdal_status_t {
    boundary(c"xdal_mem_get_info", || {
        let (free_out, total_out) = (Out::new(free_bytes, "free_bytes")?, Out::new(total_bytes, "total_bytes")?);
        let backend = backend()?;
        let device = backend.device(current_device())?;
        let (free, total) = crate::dispatch::device::mem_info(backend, device)?;
        free_out.write(free);
        total_out.write(total);
        Ok(())
    })
}
