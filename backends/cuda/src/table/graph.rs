//! Graph entries. A native exec handle is a `Box<GraphExec>` turned raw;
//! NULL where the front replays the graph (graph.rs says when).
use super::stream_ref;
use crate::error::entry;
use crate::graph::GraphExec;
use std::ffi::c_int;
use xdal_abi::*;

pub(super) unsafe extern "C" fn exec_create(
    device: c_int,
    nodes: *const xdal_backend_graph_node_t,
    num_nodes: usize,
    exec: *mut xdal_backend_graph_exec_t,
) -> xdal_status_raw {
    entry(|| {
        let nodes = if num_nodes == 0 {
            &[][..]
        } else {
            // SAFETY: the front passes `num_nodes` nodes, valid during the call.
            unsafe { std::slice::from_raw_parts(nodes, num_nodes) }
        };
        // SAFETY: per the table contract, as GraphExec::create requires.
        let made = unsafe { GraphExec::create(device as usize, nodes) }?;
        let handle = made.map_or(std::ptr::null_mut(), |e| Box::into_raw(Box::new(e)).cast());
        // SAFETY: the front passes a valid output pointer.
        unsafe { exec.write(handle) };
        Ok(())
    })
}

pub(super) unsafe extern "C" fn exec_launch(
    exec: xdal_backend_graph_exec_t,
    stream: xdal_backend_stream_t,
) -> xdal_status_raw {
    entry(|| {
        // SAFETY: a live exec from `exec_create` and a live stream (the
        // front checks both).
        let (exec, stream) = unsafe { (&*(exec as *const GraphExec), stream_ref(stream)) };
        crate::timing::around(&stream, || exec.launch(&stream))
    })
}

pub(super) unsafe extern "C" fn exec_destroy(exec: xdal_backend_graph_exec_t) -> xdal_status_raw {
    entry(|| {
        if !exec.is_null() {
            // SAFETY: the front gives up the exec exactly once.
            drop(unsafe { Box::from_raw(exec.cast::<GraphExec>()) });
        }
        Ok(())
    })
}
