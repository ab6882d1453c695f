//! `xdal_graph_debug_dump`: a graph in Graphviz's DOT language, a node per
//! captured operation and an edge per dependency.
use super::GraphObj;
use std::fmt::Write as _;

pub(super) fn dot(graph: &GraphObj) -> String {
    let mut text = format!(
        "digraph xdal_graph {{\n  label=\"xdal graph: {} node(s) on device {}\";\n  node [shape=box];\n",
        graph.nodes.len(),
        graph.device.get()
    );
    for (i, node) in graph.nodes.iter().enumerate() {
        let _ = writeln!(text, "  n{i} [label=\"{i}: {}\"];", node.label().replace('"', "'"));
    }
    for (i, node) in graph.nodes.iter().enumerate() {
        for dep in &node.deps {
            let _ = writeln!(text, "  n{dep} -> n{i};");
        }
    }
    text.push_str("}\n");
    text
}
