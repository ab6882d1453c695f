//! The memory an instantiated graph reaches: the device and pinned host
//! ranges of its copies, sets and built-in kernels. Checked when the graph
//! is instantiated as they were at capture (a range freed since, or run
//! past its allocation, is refused), and at every launch still the same
//! live allocations: a graph launched after memory it writes was freed, or
//! freed and allocated again (at the same address, to someone else),
//! would write into that memory in silence; the launch is refused instead.
//! Kernels that are not built-ins take opaque arguments, and ordinary host
//! memory is the caller's: neither is checked, as in an eager launch.
//! Memory the graph's own capture allocated belongs to the graph for its
//! life and needs no check.
use super::node::Op;
use super::GraphObj;
use crate::api::copy::classify;
use crate::backend::Backend;
use crate::builtin_args::check_reaches;
use crate::error::{bail, XResult};
use crate::registry::{Identity, MemoryType, REGISTRY};
use std::cell::RefCell;
use std::fmt::Display;

/// A node's DOT label on one line, for messages.
fn what(node: &super::node::Node) -> String {
    node.label().replace("\\n", ", ")
}

/// Each allocation the graph reaches (once), with the first node reaching it.
pub(super) struct Reaches(Vec<(usize, Identity)>);

impl Reaches {
    /// Checks every node's ranges as at capture, and keeps the allocations
    /// they lie in.
    pub fn of(backend: &Backend, graph: &GraphObj) -> XResult<Reaches> {
        let found: RefCell<Vec<(usize, Identity)>> = RefCell::new(Vec::new());
        for (index, node) in graph.nodes.iter().enumerate() {
            let note = |addr: usize, bytes: usize, role: &dyn Display| -> XResult<MemoryType> {
                if graph.owns(addr) {
                    return Ok(MemoryType::Device(graph.device.get()));
                }
                let memory = classify(backend, addr, bytes, &format_args!("node {index}'s {role}"))?;
                if memory != MemoryType::Unregistered {
                    if let Some(identity) = REGISTRY.identify(addr) {
                        let mut found = found.borrow_mut();
                        if !found.iter().any(|(_, known)| known.allocation.base == identity.allocation.base) {
                            found.push((index, identity));
                        }
                    }
                }
                Ok(memory)
            };
            // A side that was device memory at capture must still be: where
            // device memory lies among host addresses (OpenCL's SVM, a
            // plugin's heap), a freed block reads as ordinary host memory.
            let device_side = |addr: usize, bytes: usize, role: &str| -> XResult<()> {
                if let MemoryType::Device(_) = note(addr, bytes, &role)? {
                    return Ok(());
                }
                bail!(
                    XDAL_ERROR_INVALID_POINTER,
                    "node {index} of the graph ({}): its {role}, {addr:#x}, was device memory at capture and is in                      no live allocation now (freed since?)",
                    what(node)
                )
            };
            match &node.op {
                &Op::Copy { dst, src, bytes, kind } if bytes > 0 => {
                    use xdal_abi::xdal_memcpy_kind::*;
                    if matches!(kind, XDAL_MEMCPY_HOST_TO_DEVICE | XDAL_MEMCPY_DEVICE_TO_DEVICE) {
                        device_side(dst, bytes, "destination")?;
                    } else {
                        note(dst, bytes, &"destination")?;
                    }
                    if matches!(kind, XDAL_MEMCPY_DEVICE_TO_HOST | XDAL_MEMCPY_DEVICE_TO_DEVICE) {
                        device_side(src, bytes, "source")?;
                    } else {
                        note(src, bytes, &"source")?;
                    }
                }
                &Op::Set { dst, bytes, .. } if bytes > 0 => device_side(dst, bytes, "destination")?,
                Op::Kernel(k) => {
                    if let Some(builtin) = &k.function.builtin {
                        check_reaches(builtin, &builtin.reaches(&k.args)?, graph.device.get(), note)?;
                    }
                }
                _ => {}
            }
        }
        Ok(Reaches(found.into_inner()))
    }

    /// Refuses a launch if an allocation the graph reaches was freed since
    /// it was instantiated. One load per allocation while nothing near it
    /// was freed.
    pub fn check(&mut self, graph: &GraphObj) -> XResult<()> {
        for (node, identity) in &mut self.0 {
            if !REGISTRY.still_live(identity) {
                let a = identity.allocation;
                bail!(
                    XDAL_ERROR_INVALID_POINTER,
                    "node {node} of the graph ({}) reaches the {}-byte allocation at {:#x}, which was freed after the \
                     graph was instantiated: nothing of this launch was enqueued (instantiate the graph again over \
                     live memory)",
                    what(&graph.nodes[*node]),
                    a.size,
                    a.base
                );
            }
        }
        Ok(())
    }
}
