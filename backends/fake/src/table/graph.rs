//! Graph entries: native execs (graph.rs) behind `Arc`s turned raw.
use super::kernel::function_ref;
use super::{stream_ref, touch, write_out};
use crate::error::entry;
use crate::graph::{FakeGraphExec, Step};
use crate::launch::Launch;
use crate::stream::Op;
use std::ffi::c_int;
use std::sync::Arc;
use xdal_abi::*;

pub(super) unsafe extern "C" fn exec_create(
    device: c_int,
    nodes: *const xdal_backend_graph_node_t,
    num_nodes: usize,
    out: *mut xdal_backend_graph_exec_t,
) -> xdal_status_raw {
    entry(|| {
        touch(device as usize)?;
        let fake = crate::fake();
        let nodes = if num_nodes == 0 {
            &[][..]
        } else {
            // SAFETY: the front passes `num_nodes` nodes.
            unsafe { std::slice::from_raw_parts(nodes, num_nodes) }
        };
        let mut steps = Vec::with_capacity(nodes.len());
        for node in nodes {
            use xdal_backend_graph_node_kind::*;
            match node.kind {
                XDAL_BACKEND_GRAPH_NODE_KERNEL => {
                    // SAFETY: a live function handle (the front keeps it for
                    // the graph's life).
                    let function = unsafe { function_ref(node.function) };
                    let args = if node.num_args == 0 {
                        &[][..]
                    } else {
                        // SAFETY: the front passes `num_args` checked arguments.
                        unsafe { std::slice::from_raw_parts(node.args, node.num_args) }
                    };
                    // SAFETY: every value has `size` readable bytes (checked
                    // at capture, copied by the front since).
                    let launch = unsafe {
                        Launch::prepare(Arc::clone(&function), node.grid, node.block, node.shared_mem_bytes, args)
                    };
                    steps.push(Step::Kernel(launch));
                }
                XDAL_BACKEND_GRAPH_NODE_COPY => steps.push(Step::Copy {
                    dst: fake.alias(node.dst as usize),
                    src: fake.alias(node.src as usize),
                    len: node.bytes,
                }),
                XDAL_BACKEND_GRAPH_NODE_SET => steps.push(Step::Set {
                    dst: fake.alias(node.dst as usize),
                    value: node.value as u8,
                    len: node.bytes,
                }),
                XDAL_BACKEND_GRAPH_NODE_HOST_FUNC => {
                    if let Some(func) = node.host_func {
                        steps.push(Step::Host { func, data: node.user_data as usize });
                    }
                }
                XDAL_BACKEND_GRAPH_NODE_EMPTY => {}
            }
        }
        let exec = xdal_backend_support::arc_into_handle(Arc::new(FakeGraphExec { steps }));
        // SAFETY: the front passes a valid output pointer.
        unsafe { write_out(out, exec) }
    })
}

pub(super) unsafe extern "C" fn exec_launch(
    exec: xdal_backend_graph_exec_t,
    stream: xdal_backend_stream_t,
) -> xdal_status_raw {
    entry(|| {
        // SAFETY: a live exec and stream (the front checks).
        let (exec, stream) = unsafe { (xdal_backend_support::arc_ref::<FakeGraphExec, _>(exec), stream_ref(stream)) };
        touch(stream.device)?;
        let exec = Arc::clone(&exec);
        stream.enqueue(crate::stream::timed(Op::Task(Box::new(move || exec.run()))));
        Ok(())
    })
}

pub(super) unsafe extern "C" fn exec_destroy(exec: xdal_backend_graph_exec_t) -> xdal_status_raw {
    entry(|| {
        // SAFETY: the front gives up its reference exactly once; queued runs
        // hold their own.
        drop(unsafe { xdal_backend_support::arc_from_handle::<FakeGraphExec, _>(exec) });
        Ok(())
    })
}
