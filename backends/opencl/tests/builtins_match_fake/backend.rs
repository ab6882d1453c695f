//! One backend reached through its table, as the front reaches it: device
//! 0's memory, a stream, the built-in module, and launches of a case with
//! every buffer read back afterwards.
use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::Mutex;
use xdal_abi::*;

/// A launch argument: a buffer's address plus a byte offset, or bytes.
#[derive(Clone, Debug)]
pub enum Arg {
    /// Buffer `index`, `offset` bytes in (the pointer a kernel receives).
    Buffer(usize, usize),
    /// Bytes passed as they are (counts, scalars, shapes, raw pointers).
    Bytes(Vec<u8>),
}

/// A launch: the buffers' initial bytes and the arguments.
#[derive(Clone, Debug, Default)]
pub struct Case {
    pub buffers: Vec<Vec<u8>>,
    pub args: Vec<Arg>,
}

/// What a launch gave: whether it ran (not refused), and every buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub ran: bool,
    pub buffers: Vec<Vec<u8>>,
}

/// The `xdal_backend_get_v1` signature.
type Getter = unsafe extern "C" fn(u32, u32, *mut *const xdal_backend_v1_t) -> xdal_status_raw;

/// One backend, its built-in module and functions.
pub struct Backend {
    pub name: &'static str,
    table: &'static xdal_backend_v1_t,
    module: usize,
    functions: Mutex<HashMap<String, usize>>,
}

fn ok(status: xdal_status_raw) -> bool {
    status == xdal_status::XDAL_SUCCESS as xdal_status_raw
}

impl Backend {
    /// The backend behind `getter`, or why it cannot run here.
    pub fn start(name: &'static str, getter: Getter) -> Result<Backend, String> {
        let mut table: *const xdal_backend_v1_t = std::ptr::null();
        // SAFETY: `table` is writable storage for one pointer.
        let status = unsafe { getter(XDAL_ABI_VERSION_MAJOR, XDAL_ABI_VERSION_MINOR, &mut table) };
        if !ok(status) || table.is_null() {
            return Err(format!("{name}: the getter returned {status}"));
        }
        // SAFETY: a backend's table is static.
        let table: &'static xdal_backend_v1_t = unsafe { &*table };
        let mut count = 0;
        // SAFETY: a required entry, given writable storage.
        let status = unsafe { (table.device_get_count.expect("required"))(&mut count) };
        if !ok(status) || count == 0 {
            return Err(format!("{name}: no device ({status}): {}", last_message(table)));
        }
        let mut module: xdal_backend_module_t = std::ptr::null_mut();
        // SAFETY: as above.
        let status = unsafe { (table.module_get_builtin.expect("built-ins"))(&mut module) };
        assert!(ok(status), "{name}: module_get_builtin: {}", last_message(table));
        Ok(Backend { name, table, module: module as usize, functions: Mutex::new(HashMap::new()) })
    }

    /// Whether the built-in module has a kernel called `kernel`.
    pub fn has(&self, kernel: &str) -> bool {
        self.function(kernel).is_some()
    }

    fn function(&self, kernel: &str) -> Option<usize> {
        let mut functions = self.functions.lock().unwrap();
        if let Some(&f) = functions.get(kernel) {
            return Some(f);
        }
        let c_name = CString::new(kernel).unwrap();
        let mut function: xdal_backend_function_t = std::ptr::null_mut();
        // SAFETY: a live module, a C string, writable storage.
        let status = unsafe {
            (self.table.module_get_function.expect("required"))(
                self.module as xdal_backend_module_t,
                c_name.as_ptr(),
                &mut function,
            )
        };
        if !ok(status) {
            return None;
        }
        functions.insert(kernel.to_string(), function as usize);
        Some(function as usize)
    }

    /// Runs `case` with kernel `kernel` on a stream of its own (a refused
    /// launch leaves its stream failed) and reads every buffer back.
    pub fn run(&self, kernel: &str, case: &Case) -> Outcome {
        let t = self.table;
        let function = self.function(kernel).unwrap_or_else(|| panic!("{}: no kernel {kernel}", self.name));
        // SAFETY: table entries called with live handles, device pointers
        // from `mem_alloc` used within their sizes, host buffers of the
        // sizes given.
        unsafe {
            let mut stream: xdal_backend_stream_t = std::ptr::null_mut();
            assert!(ok((t.stream_create.expect("required"))(0, 0, 0, &mut stream)), "{}", last_message(t));
            let device: Vec<*mut c_void> = case
                .buffers
                .iter()
                .map(|bytes| {
                    let mut p: *mut c_void = std::ptr::null_mut();
                    let status = (t.mem_alloc.expect("required"))(0, bytes.len().max(1), &mut p);
                    assert!(ok(status), "{}: mem_alloc: {}", self.name, last_message(t));
                    self.copy(p, bytes.as_ptr() as *const c_void, bytes.len(), XDAL_MEMCPY_HOST_TO_DEVICE);
                    p
                })
                .collect();
            let values: Vec<Vec<u8>> = case
                .args
                .iter()
                .map(|arg| match arg {
                    Arg::Buffer(i, offset) => ((device[*i] as usize + offset) as u64).to_ne_bytes().to_vec(),
                    Arg::Bytes(bytes) => bytes.clone(),
                })
                .collect();
            let args: Vec<xdal_kernel_arg_t> = values
                .iter()
                .map(|v| xdal_kernel_arg_t { value: v.as_ptr() as *const c_void, size: v.len() })
                .collect();
            let one = xdal_dim3_t { x: 1, y: 1, z: 1 };
            let grid = xdal_dim3_t { x: 4, y: 1, z: 1 };
            let launched = (t.launch_kernel.expect("required"))(
                function as xdal_backend_function_t,
                grid,
                one,
                0,
                stream,
                args.as_ptr(),
                args.len(),
            );
            let synced = (t.stream_synchronize.expect("required"))(stream);
            let ran = ok(launched) && ok(synced);
            let buffers = case
                .buffers
                .iter()
                .zip(&device)
                .map(|(bytes, &p)| {
                    let mut out = vec![0u8; bytes.len()];
                    self.copy(out.as_mut_ptr() as *mut c_void, p, bytes.len(), XDAL_MEMCPY_DEVICE_TO_HOST);
                    assert!(ok((t.mem_free.expect("required"))(0, p)), "{}", last_message(t));
                    out
                })
                .collect();
            assert!(ok((t.stream_destroy.expect("required"))(stream)), "{}", last_message(t));
            Outcome { ran, buffers }
        }
    }

    /// A synchronous copy of `bytes` (none: nothing).
    ///
    /// # Safety
    /// Both sides valid for `bytes` bytes of the kind given.
    unsafe fn copy(&self, dst: *mut c_void, src: *const c_void, bytes: usize, kind: xdal_memcpy_kind_t) {
        if bytes == 0 {
            return;
        }
        // SAFETY: per the contract.
        let status = unsafe { (self.table.mem_copy.expect("required"))(dst, src, bytes, kind) };
        assert!(ok(status), "{}: mem_copy: {}", self.name, last_message(self.table));
    }
}

use xdal_memcpy_kind::{XDAL_MEMCPY_DEVICE_TO_HOST, XDAL_MEMCPY_HOST_TO_DEVICE};

/// The backend's message for the calling thread's last failure.
fn last_message(table: &xdal_backend_v1_t) -> String {
    let Some(entry) = table.last_error_message else { return String::new() };
    // SAFETY: the entry returns NULL or a C string valid until the next
    // backend call of this thread.
    let p: *const c_char = unsafe { entry() };
    if p.is_null() {
        String::new()
    } else {
        // SAFETY: as above.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}
