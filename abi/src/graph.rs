//! Graphs (since 1.2): work captured from streams, instantiated once and
//! replayed many times at a fraction of the cost of enqueuing it again.
use crate::{xdal_dim3_t, xdal_host_fn_t, xdal_kernel_arg_t, xdal_memcpy_kind_t};
use core::ffi::{c_int, c_void};

/// The object behind an `xdal_graph_t`. Never defined: only pointed to.
pub struct xdal_graph_s {
    _opaque: [u8; 0],
}
/// A captured graph (since 1.2): the work a stream capture recorded, as
/// nodes and their dependencies. Made by `xdal_stream_end_capture`,
/// destroyed by `xdal_graph_destroy`.
pub type xdal_graph_t = *mut xdal_graph_s;

/// The object behind an `xdal_graph_exec_t`. Never defined: only pointed to.
pub struct xdal_graph_exec_s {
    _opaque: [u8; 0],
}
/// An instantiated graph (since 1.2): checked and prepared once, launched
/// with `xdal_graph_launch` as often as wanted, destroyed by
/// `xdal_graph_exec_destroy`.
pub type xdal_graph_exec_t = *mut xdal_graph_exec_s;

/// How a stream capture restricts calls that are not captured (since 1.2).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum xdal_capture_mode {
    /// While the capture is active, `xdal_malloc`, `xdal_free` and
    /// synchronous copies and sets from any thread are refused with
    /// `XDAL_ERROR_CAPTURE_UNSUPPORTED` and invalidate the capture.
    XDAL_CAPTURE_MODE_GLOBAL = 0,
    /// As GLOBAL, but only from the thread that began the capture.
    XDAL_CAPTURE_MODE_THREAD_LOCAL = 1,
    /// Those calls are not restricted.
    XDAL_CAPTURE_MODE_RELAXED = 2,
}
/// See `enum xdal_capture_mode`.
pub type xdal_capture_mode_t = xdal_capture_mode;
/// A capture mode as it crosses the ABI from C: any value, checked before
/// use. The headers spell it `xdal_capture_mode_t`.
pub type xdal_capture_mode_raw = u32;

impl xdal_capture_mode {
    /// The mode with raw value `raw`, if there is one.
    pub fn from_raw(raw: xdal_capture_mode_raw) -> Option<xdal_capture_mode> {
        match raw {
            0 => Some(xdal_capture_mode::XDAL_CAPTURE_MODE_GLOBAL),
            1 => Some(xdal_capture_mode::XDAL_CAPTURE_MODE_THREAD_LOCAL),
            2 => Some(xdal_capture_mode::XDAL_CAPTURE_MODE_RELAXED),
            _ => None,
        }
    }
}

/// Whether a stream is capturing (since 1.2).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum xdal_capture_status {
    /// Not capturing: work runs.
    XDAL_CAPTURE_STATUS_NONE = 0,
    /// Capturing: work is recorded.
    XDAL_CAPTURE_STATUS_ACTIVE = 1,
    /// Capturing, but an illegal call broke the capture: work is refused
    /// and `xdal_stream_end_capture` will fail.
    XDAL_CAPTURE_STATUS_INVALIDATED = 2,
}
/// See `enum xdal_capture_status`.
pub type xdal_capture_status_t = xdal_capture_status;

/// The object behind a backend's native graph exec; defined by the backend.
pub struct xdal_backend_graph_exec_s {
    _opaque: [u8; 0],
}
/// A backend's native instantiated graph (since 1.2).
pub type xdal_backend_graph_exec_t = *mut xdal_backend_graph_exec_s;

/// What a graph node does (since 1.2).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum xdal_backend_graph_node_kind {
    /// Nothing: it only orders (a memory node, whose memory the front keeps
    /// reserved for the graph's life).
    XDAL_BACKEND_GRAPH_NODE_EMPTY = 0,
    /// A kernel launch: `function`, `grid`, `block`, `shared_mem_bytes`,
    /// `args`, `num_args`.
    XDAL_BACKEND_GRAPH_NODE_KERNEL = 1,
    /// A copy: `dst`, `src`, `bytes`, `copy_kind`.
    XDAL_BACKEND_GRAPH_NODE_COPY = 2,
    /// A set: `dst`, `value`, `bytes`.
    XDAL_BACKEND_GRAPH_NODE_SET = 3,
    /// A host function: `host_func`, `user_data`.
    XDAL_BACKEND_GRAPH_NODE_HOST_FUNC = 4,
}

/// One node of a graph the front hands a backend to instantiate (since
/// 1.2). Nodes come in an order where each follows its dependencies;
/// only the fields of its kind mean anything. Every argument was checked
/// when it was captured, as for the eager call.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct xdal_backend_graph_node {
    /// What the node does.
    pub kind: xdal_backend_graph_node_kind,
    /// Indices (into the node array) of the nodes this one waits for, all
    /// below its own.
    pub deps: *const usize,
    /// Entries of `deps`.
    pub num_deps: usize,
    /// KERNEL: the function (live for the exec's life).
    pub function: crate::xdal_backend_function_t,
    /// KERNEL: the grid.
    pub grid: xdal_dim3_t,
    /// KERNEL: the block.
    pub block: xdal_dim3_t,
    /// KERNEL: shared memory bytes per block.
    pub shared_mem_bytes: usize,
    /// KERNEL: the argument values, valid during the call only (copy them).
    pub args: *const xdal_kernel_arg_t,
    /// KERNEL: entries of `args`.
    pub num_args: usize,
    /// COPY, SET: the destination.
    pub dst: *mut c_void,
    /// COPY: the source.
    pub src: *const c_void,
    /// COPY, SET: bytes (> 0).
    pub bytes: usize,
    /// COPY: the resolved direction (never DEFAULT).
    pub copy_kind: xdal_memcpy_kind_t,
    /// SET: the byte value, in the low 8 bits.
    pub value: c_int,
    /// HOST_FUNC: the function (non-NULL).
    pub host_func: xdal_host_fn_t,
    /// HOST_FUNC: its argument.
    pub user_data: *mut c_void,
}
/// See `struct xdal_backend_graph_node`.
pub type xdal_backend_graph_node_t = xdal_backend_graph_node;
