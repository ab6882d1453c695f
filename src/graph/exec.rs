//! Instantiated graphs: prepared once, launched as a whole. A backend with
//! native graphs (`graph_exec_create`) gets the nodes once and enqueues a
//! run in one call; otherwise the front replays the nodes through the
//! eager entries, without any of the checks they had at capture time.
use super::node::Op;
use super::reaches::Reaches;
use super::GraphObj;
use crate::backend::{call, Backend};
use crate::error::{bail, XResult};
use crate::lock::IgnorePoison;
use crate::objects::{EventObj, StreamObj};
use std::ffi::c_void;
use std::sync::{Arc, Mutex};
use xdal_abi::*;

/// What launches of one exec share, under one lock.
struct Order {
    /// The stream of the latest launch.
    latest: Option<Arc<StreamObj>>,
    /// The allocations the graph reaches, checked at each launch.
    reaches: Reaches,
}

pub(crate) struct GraphExecObj {
    graph: Arc<GraphObj>,
    /// The backend's exec, or NULL for the front's replay.
    native: xdal_backend_graph_exec_t,
    /// The stream of the latest launch, and the event that hands the
    /// order on to a launch on another stream: two launches of one exec
    /// run one after the other, wherever they are launched.
    order: Mutex<Order>,
    handoff: Arc<EventObj>,
    backend: &'static Backend,
}

// SAFETY: `native` is an opaque token the backend accepts from any thread
// (the table contract); the rest is shared data behind locks.
unsafe impl Send for GraphExecObj {}
// SAFETY: as above.
unsafe impl Sync for GraphExecObj {}

impl GraphExecObj {
    /// Prepares `graph` for launches.
    pub fn instantiate(backend: &'static Backend, graph: Arc<GraphObj>) -> XResult<GraphExecObj> {
        let reaches = Reaches::of(backend, &graph)?;
        let handoff = EventObj::create(backend, graph.device, XDAL_EVENT_DISABLE_TIMING)?;
        let mut native: xdal_backend_graph_exec_t = std::ptr::null_mut();
        if backend.table.graph_exec_create.is_some() {
            let nodes: Vec<xdal_backend_graph_node_t> = graph.nodes.iter().map(native_node).collect();
            call!(backend, graph_exec_create(graph.device.get(), nodes.as_ptr(), nodes.len(), &mut native))?;
        }
        Ok(GraphExecObj { graph, native, order: Mutex::new(Order { latest: None, reaches }), handoff, backend })
    }

    /// Whether its graph allocated memory of its own (see `GraphObj::owns_memory`).
    pub fn graph_owns_memory(&self) -> bool {
        self.graph.owns_memory()
    }

    /// Whether the backend runs it (else the front replays it node by node).
    pub fn is_native(&self) -> bool {
        !self.native.is_null()
    }

    /// Enqueues one run of the graph on `stream`.
    pub fn launch(&self, stream: &Arc<StreamObj>) -> XResult<()> {
        let backend = self.backend;
        if stream.device != self.graph.device {
            bail!(
                XDAL_ERROR_INVALID_VALUE,
                "the graph was captured on device {}, the stream is device {}'s",
                self.graph.device.get(),
                stream.device.get()
            );
        }
        let mut order = self.order.lock().ignore_poison();
        order.reaches.check(&self.graph)?;
        if let Some(previous) = order.latest.as_ref().filter(|previous| !Arc::ptr_eq(previous, stream)) {
            crate::dispatch::event::record(backend, &self.handoff, previous)?;
            crate::dispatch::stream::wait_event(backend, stream, &self.handoff)?;
        }
        order.latest = Some(stream.clone());
        if !self.native.is_null() {
            return call!(backend, graph_exec_launch(self.native, stream.native));
        }
        self.replay(stream)
    }

    /// The front's replay: each node through its eager entry, in capture
    /// order (which follows every dependency).
    fn replay(&self, stream: &Arc<StreamObj>) -> XResult<()> {
        let backend = self.backend;
        for node in &self.graph.nodes {
            match &node.op {
                Op::Kernel(k) => call!(
                    backend,
                    launch_kernel(
                        k.function.native,
                        k.grid,
                        k.block,
                        k.shared_mem_bytes,
                        stream.native,
                        k.args.as_ptr(),
                        k.args.len()
                    )
                )?,
                &Op::Copy { dst, src, bytes, kind } => crate::dispatch::stream::copy_async(
                    backend,
                    stream,
                    dst as *mut c_void,
                    src as *const c_void,
                    bytes,
                    kind,
                )?,
                &Op::Set { dst, value, bytes } => {
                    crate::dispatch::stream::set_async(backend, stream, dst as *mut c_void, value, bytes)?
                }
                &Op::Host { func, data } => {
                    crate::dispatch::stream::launch_host_func(backend, stream, func, data as *mut c_void)?
                }
                // The memory stays reserved for the graph: nothing to do.
                Op::MemAlloc { .. } | Op::MemFree { .. } => {}
            }
        }
        Ok(())
    }
}

impl Drop for GraphExecObj {
    fn drop(&mut self) {
        if !self.native.is_null() {
            let _ = call!(self.backend, graph_exec_destroy(self.native));
        }
    }
}

/// A node as the backend table describes it.
fn native_node(node: &super::node::Node) -> xdal_backend_graph_node_t {
    let mut out = xdal_backend_graph_node_t {
        kind: xdal_backend_graph_node_kind::XDAL_BACKEND_GRAPH_NODE_EMPTY,
        deps: node.deps.as_ptr(),
        num_deps: node.deps.len(),
        function: std::ptr::null_mut(),
        grid: xdal_dim3_t { x: 1, y: 1, z: 1 },
        block: xdal_dim3_t { x: 1, y: 1, z: 1 },
        shared_mem_bytes: 0,
        args: std::ptr::null(),
        num_args: 0,
        dst: std::ptr::null_mut(),
        src: std::ptr::null(),
        bytes: 0,
        copy_kind: xdal_memcpy_kind::XDAL_MEMCPY_DEFAULT,
        value: 0,
        host_func: None,
        user_data: std::ptr::null_mut(),
    };
    match &node.op {
        Op::Kernel(k) => {
            out.kind = xdal_backend_graph_node_kind::XDAL_BACKEND_GRAPH_NODE_KERNEL;
            out.function = k.function.native;
            out.grid = k.grid;
            out.block = k.block;
            out.shared_mem_bytes = k.shared_mem_bytes;
            out.args = k.args.as_ptr();
            out.num_args = k.args.len();
        }
        &Op::Copy { dst, src, bytes, kind } => {
            out.kind = xdal_backend_graph_node_kind::XDAL_BACKEND_GRAPH_NODE_COPY;
            out.dst = dst as *mut c_void;
            out.src = src as *const c_void;
            out.bytes = bytes;
            out.copy_kind = kind;
        }
        &Op::Set { dst, value, bytes } => {
            out.kind = xdal_backend_graph_node_kind::XDAL_BACKEND_GRAPH_NODE_SET;
            out.dst = dst as *mut c_void;
            out.value = value;
            out.bytes = bytes;
        }
        &Op::Host { func, data } => {
            out.kind = xdal_backend_graph_node_kind::XDAL_BACKEND_GRAPH_NODE_HOST_FUNC;
            out.host_func = Some(func);
            out.user_data = data as *mut c_void;
        }
        Op::MemAlloc { .. } | Op::MemFree { .. } => {}
    }
    out
}
