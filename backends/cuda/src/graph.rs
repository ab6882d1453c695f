//! Native graphs: a captured graph's nodes become a CUDA graph, built with
//! the explicit graph API (one CUDA node per xdal node, each with its
//! dependencies), instantiated once in the device's primary context and
//! launched with `cuGraphLaunch`.
//!
//! Kernel nodes go through the eager launch's translation (module.rs:
//! built-ins' host-side plan, grid and route argument; user kernels' sizes
//! checked where the driver tells them), so a graph runs exactly what the
//! launches it captured would have. Copies are 1-D ranges of unified
//! addresses; an overlapping copy becomes the same ordered pieces as the
//! eager copy. Where the graph cannot be expressed so (the driver lacks the
//! graph API, a copy overlaps so much that it needs a staging buffer, or
//! the driver refuses a copy's or set's memory in a graph)
//! `create` gives None and the exec handle stays NULL: the front then
//! replays the graph through the eager entries (src/graph/exec.rs treats a
//! NULL native exec so), which is correct, only slower.
use crate::driver::{
    CUgraph, CUgraphExec, CUgraphNode, CUresult, GraphApi, HostNodeParams, KernelNodeParams, Memcpy3d,
    MemsetNodeParams, CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_NOT_SUPPORTED, CU_MEMORYTYPE_UNIFIED,
};
use crate::error::{failure, CuResult, Failure};
use crate::module::{CuFunction, Prepared};
use crate::stream::Stream;
use xdal_abi::{xdal_backend_graph_node_kind as Kind, xdal_backend_graph_node_t};
use xdal_backend_support::overlap::{self, Move, Piece};

/// How one xdal node is built, decided before any driver call.
#[derive(Debug, PartialEq)]
pub(crate) enum Shape {
    /// One empty node: an ordering point (a memory node, a copy with
    /// nothing to copy).
    Empty,
    Kernel,
    /// Copies chained one after another (one for disjoint ranges).
    Copies(Vec<Piece>),
    Set,
    Host,
}

/// The shape of `node`, or None where a CUDA graph cannot express it (a
/// copy that needs a staging buffer of its own).
pub(crate) fn shape(node: &xdal_backend_graph_node_t) -> Option<Shape> {
    Some(match node.kind {
        Kind::XDAL_BACKEND_GRAPH_NODE_EMPTY => Shape::Empty,
        Kind::XDAL_BACKEND_GRAPH_NODE_KERNEL => Shape::Kernel,
        Kind::XDAL_BACKEND_GRAPH_NODE_SET => Shape::Set,
        Kind::XDAL_BACKEND_GRAPH_NODE_HOST_FUNC => Shape::Host,
        Kind::XDAL_BACKEND_GRAPH_NODE_COPY => {
            let (dst, src) = (node.dst as usize, node.src as usize);
            match overlap::plan(dst, src, node.bytes) {
                Move::Nothing => Shape::Empty,
                Move::Direct => Shape::Copies(vec![Piece { dst, src, bytes: node.bytes }]),
                Move::Pieces(pieces) => Shape::Copies(pieces),
                Move::Staged => return None,
            }
        }
    })
}

/// The distinct entries of `deps` (the driver refuses duplicates), each an
/// index below `node` (the front's order; anything else is refused rather
/// than read out of bounds).
pub(crate) fn dependencies(deps: &[usize], node: usize) -> CuResult<Vec<usize>> {
    let mut out: Vec<usize> = Vec::with_capacity(deps.len());
    for &d in deps {
        if d >= node {
            return Err(failure!(XDAL_ERROR_INVALID_VALUE, "graph node {node} depends on node {d}, not before it"));
        }
        if !out.contains(&d) {
            out.push(d);
        }
    }
    Ok(out)
}

/// An instantiated CUDA graph of one device.
pub(crate) struct GraphExec {
    device: usize,
    exec: CUgraphExec,
    /// The first built-in launch whose host-side check refused it: every
    /// run fails on its stream with it, as the eager launch would (the node
    /// itself is an empty one).
    refused: Option<Failure>,
}

// SAFETY: a CUDA graph exec may be launched and destroyed from any thread;
// the front never has two launches of one in flight at once.
unsafe impl Send for GraphExec {}
// SAFETY: as above.
unsafe impl Sync for GraphExec {}

fn graph_api() -> Option<&'static GraphApi> {
    crate::cuda().driver.graph.as_ref()
}

/// A CUDA graph being built, destroyed when dropped (an instantiated exec
/// does not need it).
struct Building {
    api: &'static GraphApi,
    graph: CUgraph,
}

impl Drop for Building {
    fn drop(&mut self) {
        // SAFETY: the graph is this object's and nothing else uses it.
        let _ = unsafe { (self.api.graph_destroy)(self.graph) };
    }
}

impl GraphExec {
    /// Instantiates `nodes` on `device`; None where the front's replay must
    /// run them instead (see the module's comment).
    ///
    /// # Safety
    /// `nodes` and what they point to are valid, as the table contract
    /// says (the front checked every argument at capture).
    pub unsafe fn create(device: usize, nodes: &[xdal_backend_graph_node_t]) -> CuResult<Option<GraphExec>> {
        let Some(api) = graph_api() else { return Ok(None) };
        let Some(shapes) = nodes.iter().map(shape).collect::<Option<Vec<Shape>>>() else { return Ok(None) };
        if nodes.is_empty() {
            return Ok(None);
        }
        let dev = crate::cuda().device(device);
        dev.enter()?;
        let mut graph: CUgraph = std::ptr::null_mut();
        // SAFETY: a valid output; flags must be 0.
        dev.check("cuGraphCreate", unsafe { (api.graph_create)(&mut graph, 0) })?;
        let building = Building { api, graph };
        let mut refused = None;
        // The CUDA node that ends each xdal node (its last copy piece).
        let mut tails: Vec<CUgraphNode> = Vec::with_capacity(nodes.len());
        for (index, (node, shape)) in nodes.iter().zip(shapes).enumerate() {
            let deps = if node.num_deps == 0 {
                &[][..]
            } else {
                // SAFETY: `num_deps` entries at `deps`, per the contract.
                unsafe { std::slice::from_raw_parts(node.deps, node.num_deps) }
            };
            let deps: Vec<CUgraphNode> = dependencies(deps, index)?.iter().map(|&d| tails[d]).collect();
            // SAFETY: the node's fields of its kind are valid (the contract).
            let Some(tail) = unsafe { add_node(&building, device, node, shape, deps, &mut refused) }? else {
                return Ok(None);
            };
            tails.push(tail);
        }
        let mut exec: CUgraphExec = std::ptr::null_mut();
        // SAFETY: a valid output and a complete graph; no flags.
        dev.check("cuGraphInstantiateWithFlags", unsafe { (api.instantiate)(&mut exec, building.graph, 0) })?;
        Ok(Some(GraphExec { device, exec, refused }))
    }

    /// Enqueues one run on `stream` (of the exec's device: the front checks).
    pub fn launch(&self, stream: &Stream) -> CuResult<()> {
        let api = graph_api().ok_or_else(|| failure!(XDAL_ERROR_INTERNAL, "a native graph without the graph API"))?;
        stream.enter()?;
        // SAFETY: a live exec and stream of the current context.
        stream.check("cuGraphLaunch", unsafe { (api.launch)(self.exec, stream.handle) })?;
        if let Some(failure) = &self.refused {
            stream.fail(failure.clone());
        }
        Ok(())
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        if let (Some(api), Ok(())) = (graph_api(), crate::cuda().device(self.device).enter()) {
            // SAFETY: the exec is this object's; a run still queued is
            // freed by the driver once it completes.
            let _ = unsafe { (api.exec_destroy)(self.exec) };
        }
    }
}

/// Adds `node` after the CUDA nodes `deps`; its last CUDA node, or None
/// where the driver refuses a copy or set node of it (memory its graphs do
/// not reach, such as pageable host memory on some drivers): the front's
/// replay then runs the graph, through the eager calls that take it.
///
/// # Safety
/// As for `GraphExec::create`.
unsafe fn add_node(
    building: &Building,
    device: usize,
    node: &xdal_backend_graph_node_t,
    shape: Shape,
    deps: Vec<CUgraphNode>,
    refused: &mut Option<Failure>,
) -> CuResult<Option<CUgraphNode>> {
    let (api, graph) = (building.api, building.graph);
    let dev = crate::cuda().device(device);
    let context = dev.context.0;
    let mut out: CUgraphNode = std::ptr::null_mut();
    let empty = |deps: &[CUgraphNode], out: &mut CUgraphNode| {
        // SAFETY: a valid output, a live graph and nodes of it.
        dev.check("cuGraphAddEmptyNode", unsafe { (api.add_empty_node)(out, graph, deps.as_ptr(), deps.len()) })
    };
    match shape {
        Shape::Empty => empty(&deps, &mut out)?,
        Shape::Kernel => {
            // SAFETY: a live function handle (the front keeps it for the
            // exec's life).
            let function = unsafe { xdal_backend_support::arc_ref::<CuFunction, _>(node.function) };
            let args = if node.num_args == 0 {
                &[][..]
            } else {
                // SAFETY: `num_args` arguments, valid during the call.
                unsafe { std::slice::from_raw_parts(node.args, node.num_args) }
            };
            // SAFETY: each value is readable for its size (the front checked).
            match unsafe { function.prepare(device, node.grid, node.block, node.shared_mem_bytes, args) }? {
                Prepared::Launch(launch) => {
                    // SAFETY: each value is readable for its size; valid
                    // parameters, a live graph and nodes of it; the driver
                    // copies the values into the node before returning.
                    let code = unsafe {
                        launch.with_params(args, |params| {
                            let node_params = KernelNodeParams {
                                func: launch.function,
                                grid: launch.grid,
                                block: launch.block,
                                shared_mem_bytes: launch.shared,
                                kernel_params: params,
                                extra: std::ptr::null_mut(),
                                kern: std::ptr::null_mut(),
                                ctx: std::ptr::null_mut(),
                            };
                            (api.add_kernel_node)(&mut out, graph, deps.as_ptr(), deps.len(), &node_params)
                        })
                    };
                    dev.check("cuGraphAddKernelNode", code)?;
                }
                Prepared::Nothing => empty(&deps, &mut out)?,
                Prepared::Refused(failure) => {
                    refused.get_or_insert(failure);
                    empty(&deps, &mut out)?;
                }
            }
        }
        Shape::Copies(pieces) => {
            let mut after = deps;
            for piece in pieces {
                let copy = copy_params(piece);
                // SAFETY: ranges the front checked, kept valid by the caller
                // while runs are queued, as for any asynchronous copy.
                let code =
                    unsafe { (api.add_memcpy_node)(&mut out, graph, after.as_ptr(), after.len(), &copy, context) };
                if refused_memory(code) {
                    return Ok(None);
                }
                dev.check("cuGraphAddMemcpyNode", code)?;
                after = vec![out];
            }
        }
        Shape::Set => {
            let set = MemsetNodeParams {
                dst: node.dst as u64,
                pitch: node.bytes,
                value: u32::from(node.value as u8),
                element_size: 1,
                width: node.bytes,
                height: 1,
            };
            // SAFETY: a range the front checked; valid parameters.
            let code = unsafe { (api.add_memset_node)(&mut out, graph, deps.as_ptr(), deps.len(), &set, context) };
            if refused_memory(code) {
                return Ok(None);
            }
            dev.check("cuGraphAddMemsetNode", code)?;
        }
        Shape::Host => {
            let host = HostNodeParams { func: node.host_func, user_data: node.user_data };
            // SAFETY: a non-NULL function (the front checks) whose argument
            // the caller keeps valid; it makes no CUDA call (xdal's rule for
            // host functions).
            let code = unsafe { (api.add_host_node)(&mut out, graph, deps.as_ptr(), deps.len(), &host) };
            dev.check("cuGraphAddHostNode", code)?;
        }
    }
    Ok(Some(out))
}

/// Whether a node's failure is the driver refusing its memory in a graph,
/// not an error of the device.
fn refused_memory(code: CUresult) -> bool {
    matches!(code, CUDA_ERROR_INVALID_VALUE | CUDA_ERROR_NOT_SUPPORTED)
}

/// A 1-D copy of unified addresses, as `CUDA_MEMCPY3D` describes it.
pub(crate) fn copy_params(piece: Piece) -> Memcpy3d {
    Memcpy3d {
        src_memory_type: CU_MEMORYTYPE_UNIFIED,
        src_device: piece.src as u64,
        src_pitch: piece.bytes,
        src_height: 1,
        dst_memory_type: CU_MEMORYTYPE_UNIFIED,
        dst_device: piece.dst as u64,
        dst_pitch: piece.bytes,
        dst_height: 1,
        width_in_bytes: piece.bytes,
        height: 1,
        depth: 1,
        ..Memcpy3d::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::c_void;
    use xdal_abi::*;

    fn node(kind: Kind) -> xdal_backend_graph_node_t {
        xdal_backend_graph_node_t {
            kind,
            deps: std::ptr::null(),
            num_deps: 0,
            function: std::ptr::null_mut(),
            grid: xdal_dim3_t { x: 1, y: 1, z: 1 },
            block: xdal_dim3_t { x: 1, y: 1, z: 1 },
            shared_mem_bytes: 0,
            args: std::ptr::null(),
            num_args: 0,
            dst: std::ptr::null_mut(),
            src: std::ptr::null(),
            bytes: 0,
            copy_kind: xdal_memcpy_kind::XDAL_MEMCPY_DEVICE_TO_DEVICE,
            value: 0,
            host_func: None,
            user_data: std::ptr::null_mut(),
        }
    }

    fn copy(dst: usize, src: usize, bytes: usize) -> xdal_backend_graph_node_t {
        let mut n = node(Kind::XDAL_BACKEND_GRAPH_NODE_COPY);
        (n.dst, n.src, n.bytes) = (dst as *mut c_void, src as *const c_void, bytes);
        n
    }

    #[test]
    fn each_kind_has_its_shape() {
        assert_eq!(shape(&node(Kind::XDAL_BACKEND_GRAPH_NODE_EMPTY)), Some(Shape::Empty));
        assert_eq!(shape(&node(Kind::XDAL_BACKEND_GRAPH_NODE_KERNEL)), Some(Shape::Kernel));
        assert_eq!(shape(&node(Kind::XDAL_BACKEND_GRAPH_NODE_SET)), Some(Shape::Set));
        assert_eq!(shape(&node(Kind::XDAL_BACKEND_GRAPH_NODE_HOST_FUNC)), Some(Shape::Host));
    }

    #[test]
    fn copies_are_one_piece_ordered_pieces_or_left_to_the_front() {
        let one = Piece { dst: 0x1000, src: 0x2000, bytes: 256 };
        assert_eq!(shape(&copy(0x1000, 0x2000, 256)), Some(Shape::Copies(vec![one])));
        assert_eq!(shape(&copy(0x1000, 0x1000, 256)), Some(Shape::Empty), "onto itself: nothing to copy");
        match shape(&copy(0x1000, 0x1040, 256)) {
            Some(Shape::Copies(pieces)) => {
                assert!(pieces.len() > 1);
                assert!(pieces.iter().all(|p| p.dst.abs_diff(p.src) >= p.bytes), "each piece is disjoint");
                assert_eq!(pieces.iter().map(|p| p.bytes).sum::<usize>(), 256);
            }
            other => panic!("an overlapping copy: {other:?}"),
        }
        // One byte apart over a large range: a staging buffer, which the
        // front's replay has; the graph is not native.
        assert_eq!(shape(&copy(0x1000, 0x1001, 1 << 20)), None);
    }

    #[test]
    fn dependencies_are_distinct_and_earlier() {
        assert_eq!(dependencies(&[0, 2, 0, 1], 3), Ok(vec![0, 2, 1]));
        assert_eq!(dependencies(&[], 0), Ok(vec![]));
        assert!(dependencies(&[3], 3).is_err(), "on itself");
        assert!(dependencies(&[5], 3).is_err(), "on a later node");
    }

    #[test]
    fn copy_parameters_are_a_one_row_unified_copy() {
        let p = copy_params(Piece { dst: 0x10, src: 0x20, bytes: 96 });
        assert_eq!((p.src_memory_type, p.dst_memory_type), (CU_MEMORYTYPE_UNIFIED, CU_MEMORYTYPE_UNIFIED));
        assert_eq!((p.src_device, p.dst_device, p.width_in_bytes), (0x20, 0x10, 96));
        assert_eq!((p.height, p.depth, p.src_pitch, p.dst_pitch), (1, 1, 96, 96));
        // CUDA_MEMCPY3D is 200 bytes on 64-bit targets.
        assert_eq!(std::mem::size_of::<Memcpy3d>(), 200);
    }
}
