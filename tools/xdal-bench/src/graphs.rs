//! Graphs (ABI 1.2): what replaying a captured graph costs per node beside
//! enqueuing the same work eagerly, measured in the same run. The work is
//! 1000 empty kernel launches (1x1x1): eagerly, 1000 `xdal_launch_kernel`
//! then a synchronize; replayed, one `xdal_graph_launch` of the graph that
//! captured them, then a synchronize. Both figures are per node, execution
//! included. Target (issue 14): the replay at most a third of eager.
use crate::api::{check, empty_function, Res, Stream, ONE};
use crate::report::{Goal, Row, Unit};
use crate::stats::{timed, Timing};
use std::ptr::{null, null_mut};
use xdal::abi::*;
use xdal::*;

const GROUP: &str = "graphs: 1000 empty kernel launches, per node";
const NODES: u64 = 1000;

pub fn run(timing: &Timing, rows: &mut Vec<Row>) -> Res<()> {
    let stream = Stream::new()?;
    let s = stream.0;
    let function = empty_function()?;
    let launch = || check(xdal_launch_kernel(function, ONE, ONE, 0, s, null(), 0), "xdal_launch_kernel");
    check(
        xdal_stream_begin_capture(s, xdal_capture_mode::XDAL_CAPTURE_MODE_GLOBAL as u32),
        "xdal_stream_begin_capture",
    )?;
    let captured = (0..NODES).try_for_each(|_| launch());
    let mut graph = null_mut();
    check(xdal_stream_end_capture(s, &mut graph), "xdal_stream_end_capture")?;
    captured?;
    let mut exec = null_mut();
    let instantiated = check(xdal_graph_instantiate(&mut exec, graph), "xdal_graph_instantiate");
    check(xdal_graph_destroy(graph), "xdal_graph_destroy")?;
    instantiated?;
    let measured = timing.measure_pair(
        |n| {
            timed(|| {
                for _ in 0..n {
                    (0..NODES).try_for_each(|_| launch())?;
                }
                stream.sync()
            })
        },
        |n| {
            timed(|| {
                for _ in 0..n {
                    check(xdal_graph_launch(exec, s), "xdal_graph_launch")?;
                }
                stream.sync()
            })
        },
    );
    check(xdal_graph_exec_destroy(exec), "xdal_graph_exec_destroy")?;
    let (eager, replay) = measured?;
    let (eager, replay) = (eager.per_node(NODES), replay.per_node(NODES));
    rows.push(Row::new(GROUP, "eager xdal_launch_kernel, then sync", Unit::NsPerOp, &eager));
    rows.push(
        Row::new(GROUP, "xdal_graph_launch of the captured graph, then sync", Unit::NsPerOp, &replay)
            .vs("eager launches", &eager)
            .goal(Goal::RatioAtMost(0.333)),
    );
    Ok(())
}
