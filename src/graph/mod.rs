//! Graphs (ABI 1.2), generic over every backend: stream capture records
//! work as nodes (capture.rs), a graph keeps them with the memory its
//! capture reserved, an exec replays them (exec.rs): through a backend's
//! native graph entries where it has them, else through the eager entries
//! with every check skipped, since all of them ran at capture time.
pub(crate) mod capture;
mod dump;
pub(crate) mod exec;
pub(crate) mod memory;
pub(crate) mod node;
mod reaches;

pub(crate) use capture::Capture;

use crate::backend::{Backend, DeviceIndex};
use crate::handles::HandleTable;
use node::Node;

/// A captured graph.
pub(crate) struct GraphObj {
    pub nodes: Vec<Node>,
    pub device: DeviceIndex,
    /// Memory the capture reserved: (address, bytes).
    memory: Vec<(usize, usize)>,
    backend: &'static Backend,
}

impl GraphObj {
    pub fn new(backend: &'static Backend, captured: capture::Captured) -> GraphObj {
        GraphObj { nodes: captured.nodes, device: captured.device, memory: captured.memory, backend }
    }

    /// Whether `addr` lies in memory the graph's capture allocated (the
    /// graph's for its life).
    pub fn owns(&self, addr: usize) -> bool {
        self.memory.iter().any(|&(base, bytes)| addr.wrapping_sub(base) < bytes)
    }

    /// Whether its capture allocated memory, which it gives back (waiting
    /// for the device's work) when it goes.
    pub fn owns_memory(&self) -> bool {
        !self.memory.is_empty()
    }

    /// The graph in Graphviz's DOT language.
    pub fn dot(&self) -> String {
        dump::dot(self)
    }
}

impl Drop for GraphObj {
    fn drop(&mut self) {
        memory::release(self.backend, self.device, &self.memory);
    }
}

pub(crate) static GRAPHS: HandleTable<GraphObj> = HandleTable::tracked(0xA16A, "graph");
pub(crate) static EXECS: HandleTable<exec::GraphExecObj> = HandleTable::tracked(0xA16E, "graph exec");
