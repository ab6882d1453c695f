//! Graphs (since 1.2): stream capture, instantiation and replay.
use crate::backend::backend;
use crate::error::{bail, boundary, err, require, Out, XResult};
use crate::graph::exec::GraphExecObj;
use crate::graph::{capture, GraphObj, EXECS, GRAPHS};
use crate::handles::Ref;
use crate::objects::insert_handle;
use crate::trace::activity::{self, Info};
use std::ffi::{c_char, CStr};
use std::sync::Arc;
use xdal_abi::*;

fn graph(handle: xdal_graph_t) -> XResult<Ref<GraphObj>> {
    GRAPHS.get(handle as usize).ok_or_else(|| {
        err!(XDAL_ERROR_INVALID_HANDLE, "{handle:p} is not a live graph (destroyed, or not a graph handle)")
    })
}

fn exec(handle: xdal_graph_exec_t) -> XResult<Ref<GraphExecObj>> {
    EXECS.get(handle as usize).ok_or_else(|| {
        err!(XDAL_ERROR_INVALID_HANDLE, "{handle:p} is not a live graph exec (destroyed, or not a graph exec handle)")
    })
}

/// Since 1.2. Starts capturing `stream`: until `xdal_stream_end_capture`,
/// work enqueued on it (kernel launches, async copies and sets, host
/// functions, event records and waits, `xdal_malloc_async` and
/// `xdal_free_async`) is checked as usual and recorded as graph nodes, not
/// run. Streams that wait on an event recorded in the capture join it
/// (fork), and must be waited on again by `stream` before the end (join).
/// `mode` says which calls that name no stream are refused meanwhile
/// (`xdal_capture_mode_t`). Synchronizing or querying a capturing stream,
/// or an event recorded in the capture, or the device, returns
/// `XDAL_ERROR_CAPTURE_UNSUPPORTED` and invalidates the capture. A stream
/// already capturing is `XDAL_ERROR_INVALID_VALUE`, as is an unknown mode.
#[no_mangle]
pub extern "C" fn xdal_stream_begin_capture(stream: xdal_stream_t, mode: xdal_capture_mode_raw) -> xdal_status_t {
    boundary(c"xdal_stream_begin_capture", || {
        let Some(mode) = xdal_capture_mode::from_raw(mode) else {
            bail!(XDAL_ERROR_INVALID_VALUE, "{mode} is not an xdal_capture_mode_t");
        };
        let stream = crate::objects::stream(stream)?;
        capture::begin(&stream, mode)
    })
}

/// Since 1.2. Ends the capture begun on `stream` and writes the graph of
/// what it recorded (possibly empty). Every stream that joined the capture
/// leaves it. `XDAL_ERROR_CAPTURE_INVALIDATED` (and no graph) when an
/// illegal call broke the capture, when a stream that joined was not
/// joined back, or when `stream` joined the capture rather than began it
/// (which invalidates it); `XDAL_ERROR_INVALID_VALUE` when `stream` is not
/// capturing.
#[no_mangle]
pub extern "C" fn xdal_stream_end_capture(stream: xdal_stream_t, graph: *mut xdal_graph_t) -> xdal_status_t {
    boundary(c"xdal_stream_end_capture", || {
        let out = Out::new(graph, "graph")?;
        let stream = crate::objects::stream(stream)?;
        let backend = backend()?;
        let captured = capture::end(backend, &stream)?;
        let handle = insert_handle(&GRAPHS, Arc::new(GraphObj::new(backend, captured)), "graphs")?;
        out.write(handle as xdal_graph_t);
        Ok(())
    })
}

/// Since 1.2. Writes whether `stream` captures (`status`) and, when
/// `capture_id` is not NULL, the capture's id (unique in the process; 0
/// when not capturing).
#[no_mangle]
pub extern "C" fn xdal_stream_get_capture_info(
    stream: xdal_stream_t,
    status: *mut xdal_capture_status_t,
    capture_id: *mut u64,
) -> xdal_status_t {
    boundary(c"xdal_stream_get_capture_info", || {
        let out = Out::new(status, "status")?;
        let stream = crate::objects::stream(stream)?;
        let capture = capture::of(&stream);
        out.write(capture.as_ref().map_or(xdal_capture_status::XDAL_CAPTURE_STATUS_NONE, |c| c.status()));
        if !capture_id.is_null() {
            Out::new(capture_id, "capture_id")?.write(capture.map_or(0, |c| c.id));
        }
        Ok(())
    })
}

/// Since 1.2. Prepares `graph` for launches and writes the exec. The exec
/// does not depend on the graph handle: destroying the graph leaves it
/// working (the graph's memory is kept until both are gone).
#[no_mangle]
pub extern "C" fn xdal_graph_instantiate(exec: *mut xdal_graph_exec_t, graph: xdal_graph_t) -> xdal_status_t {
    boundary(c"xdal_graph_instantiate", || {
        let out = Out::new(exec, "exec")?;
        let graph = self::graph(graph)?;
        let object = GraphExecObj::instantiate(backend()?, Arc::clone(&graph))?;
        let handle = insert_handle(&EXECS, Arc::new(object), "graph execs")?;
        out.write(handle as xdal_graph_exec_t);
        Ok(())
    })
}

/// Since 1.2. Enqueues one run of the whole graph on `stream` (NULL: the
/// current device's default stream), which must be of the graph's device
/// (else `XDAL_ERROR_INVALID_VALUE`). Nodes run in dependency order; no
/// argument is checked again. Launches of one exec run one after the
/// other, on whichever streams. A node that fails makes `stream`'s error
/// sticky (`XDAL_ERROR_LAUNCH_FAILED`). Into a capturing stream:
/// `XDAL_ERROR_CAPTURE_UNSUPPORTED`.
#[no_mangle]
pub extern "C" fn xdal_graph_launch(exec: xdal_graph_exec_t, stream: xdal_stream_t) -> xdal_status_t {
    boundary(c"xdal_graph_launch", || {
        let exec = self::exec(exec)?;
        let stream = crate::objects::stream(stream)?;
        capture::check_stream_wait(&stream, "xdal_graph_launch into a capturing stream")?;
        let spans_commands = !exec.is_native();
        let info = || Info { spans_commands, ..Info::new(xdal_activity_kind::XDAL_ACTIVITY_GRAPH, c"graph") };
        activity::traced(backend()?, &stream, info, || exec.launch(&stream))
    })
}

/// Since 1.2. Destroys an exec; launches already enqueued still run.
#[no_mangle]
pub extern "C" fn xdal_graph_exec_destroy(exec: xdal_graph_exec_t) -> xdal_status_t {
    boundary(c"xdal_graph_exec_destroy", || {
        if self::exec(exec)?.graph_owns_memory() {
            crate::threads::refuse_wait_in_callback("xdal_graph_exec_destroy of a graph with memory of its own")?;
        }
        EXECS.remove(exec as usize).map(drop).ok_or_else(|| {
            err!(XDAL_ERROR_INVALID_HANDLE, "{exec:p} is not a live graph exec (destroyed, or not a graph exec handle)")
        })
    })
}

/// Since 1.2. Destroys a graph. Its reserved memory is given back once no
/// exec made from it is left.
#[no_mangle]
pub extern "C" fn xdal_graph_destroy(graph: xdal_graph_t) -> xdal_status_t {
    boundary(c"xdal_graph_destroy", || {
        // Giving a graph's memory back waits for the device's work.
        if self::graph(graph)?.owns_memory() {
            crate::threads::refuse_wait_in_callback("xdal_graph_destroy of a graph with memory of its own")?;
        }
        GRAPHS.remove(graph as usize).map(drop).ok_or_else(|| {
            err!(XDAL_ERROR_INVALID_HANDLE, "{graph:p} is not a live graph (destroyed, or not a graph handle)")
        })
    })
}

/// Since 1.2. Writes the number of nodes of `graph`: one per captured
/// kernel launch, copy, set, host function, `xdal_malloc_async` and
/// `xdal_free_async` (event records and waits are edges, not nodes).
#[no_mangle]
pub extern "C" fn xdal_graph_get_node_count(graph: xdal_graph_t, count: *mut usize) -> xdal_status_t {
    boundary(c"xdal_graph_get_node_count", || {
        let out = Out::new(count, "count")?;
        out.write(self::graph(graph)?.nodes.len());
        Ok(())
    })
}

/// Since 1.2. Writes `graph` to the file `path` in Graphviz's DOT language
/// (`dot -Tsvg`), a box per node and an arrow per dependency. A file that
/// cannot be written is `XDAL_ERROR_INVALID_VALUE` with the system's reason.
#[no_mangle]
pub extern "C" fn xdal_graph_debug_dump(graph: xdal_graph_t, path: *const c_char) -> xdal_status_t {
    boundary(c"xdal_graph_debug_dump", || {
        require(path, "path")?;
        let graph = self::graph(graph)?;
        // SAFETY: non-NULL (checked above); the caller passes a
        // NUL-terminated string, borrowed only for this call.
        let path = xdal_backend_support::user_path::from_c(unsafe { CStr::from_ptr(path) });
        crate::output_file::write(path, graph.dot().as_bytes())
            .map_err(|e| err!(XDAL_ERROR_INVALID_VALUE, "cannot write the graph to {path:?}: {e}"))
    })
}
