//! A graph node: one captured operation, its arguments checked and copied
//! at capture time, and the nodes it waits for.
use crate::objects::FunctionObj;
use std::ffi::{c_int, c_void};
use std::sync::Arc;
use xdal_abi::*;

/// What a node does.
pub(crate) enum Op {
    Kernel(KernelNode),
    Copy {
        dst: usize,
        src: usize,
        bytes: usize,
        kind: xdal_memcpy_kind,
    },
    Set {
        dst: usize,
        value: c_int,
        bytes: usize,
    },
    Host {
        func: unsafe extern "C" fn(*mut c_void),
        data: usize,
    },
    /// `xdal_malloc_async` in the capture: the memory is reserved for the
    /// graph's life, so replays find it at the same address.
    MemAlloc {
        addr: usize,
        bytes: usize,
    },
    /// `xdal_free_async` of graph memory in the capture.
    MemFree {
        addr: usize,
    },
}

/// A kernel launch with its own copy of the argument bytes.
pub(crate) struct KernelNode {
    pub function: Arc<FunctionObj>,
    pub grid: xdal_dim3_t,
    pub block: xdal_dim3_t,
    pub shared_mem_bytes: usize,
    /// The argument bytes, each argument 16-aligned; `args` points into it.
    _storage: Box<[u128]>,
    pub args: Vec<xdal_kernel_arg_t>,
}

// SAFETY: `args` points into `_storage`, which the node owns and never
// changes; the function handle is shared as the front shares it everywhere.
unsafe impl Send for KernelNode {}
// SAFETY: as above: nothing is mutated after construction.
unsafe impl Sync for KernelNode {}

impl KernelNode {
    /// Copies `args` (checked by the caller: each value non-NULL with
    /// `size` readable bytes).
    pub fn new(
        function: Arc<FunctionObj>,
        grid: xdal_dim3_t,
        block: xdal_dim3_t,
        shared_mem_bytes: usize,
        args: &[xdal_kernel_arg_t],
    ) -> KernelNode {
        let words: usize = args.iter().map(|a| a.size.div_ceil(16)).sum();
        let mut storage = vec![0u128; words].into_boxed_slice();
        let base = storage.as_mut_ptr() as *mut u8;
        let mut offset = 0;
        let mut copied = Vec::with_capacity(args.len());
        for arg in args {
            // SAFETY: the caller's contract for `arg.value`; the storage has
            // room for every argument rounded up to 16 bytes.
            unsafe { std::ptr::copy_nonoverlapping(arg.value as *const u8, base.add(offset), arg.size) };
            // SAFETY: inside the storage, as above.
            copied.push(xdal_kernel_arg_t { value: unsafe { base.add(offset) } as *const c_void, size: arg.size });
            offset += arg.size.div_ceil(16) * 16;
        }
        KernelNode { function, grid, block, shared_mem_bytes, _storage: storage, args: copied }
    }
}

/// A node and the earlier nodes it waits for.
pub(crate) struct Node {
    pub op: Op,
    pub deps: Vec<usize>,
}

// SAFETY: the addresses in `Op` are plain numbers; the host function
// pointer and its argument are the caller's, who gave them to be run on
// some thread, as `xdal_launch_host_func` does.
unsafe impl Send for Node {}
// SAFETY: as above; nodes are not mutated once captured.
unsafe impl Sync for Node {}

impl Node {
    /// A short description, for `xdal_graph_debug_dump`.
    pub fn label(&self) -> String {
        match &self.op {
            Op::Kernel(k) => format!(
                "kernel {}\\ngrid {}x{}x{} block {}x{}x{}",
                k.function.name(),
                k.grid.x,
                k.grid.y,
                k.grid.z,
                k.block.x,
                k.block.y,
                k.block.z
            ),
            Op::Copy { bytes, kind, .. } => format!("memcpy {}\\n{bytes} bytes", copy_direction(*kind)),
            Op::Set { bytes, value, .. } => format!("memset {:#04x}\\n{bytes} bytes", value & 0xFF),
            Op::Host { func, .. } => format!("host function {:p}", *func as *const c_void),
            Op::MemAlloc { addr, bytes } => format!("mem alloc {addr:#x}\\n{bytes} bytes"),
            Op::MemFree { addr } => format!("mem free {addr:#x}"),
        }
    }
}

/// "HtoD" and the like: how profilers name a copy's direction.
pub(crate) fn copy_direction(kind: xdal_memcpy_kind) -> &'static str {
    match kind {
        xdal_memcpy_kind::XDAL_MEMCPY_HOST_TO_HOST => "HtoH",
        xdal_memcpy_kind::XDAL_MEMCPY_HOST_TO_DEVICE => "HtoD",
        xdal_memcpy_kind::XDAL_MEMCPY_DEVICE_TO_HOST => "DtoH",
        xdal_memcpy_kind::XDAL_MEMCPY_DEVICE_TO_DEVICE => "DtoD",
        xdal_memcpy_kind::XDAL_MEMCPY_DEFAULT => "default",
    }
}
