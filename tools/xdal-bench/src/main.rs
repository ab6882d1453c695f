//! xdal-bench: measures xdal's hot paths through the public C ABI, as a
//! consumer calls them, each figure beside a reference measured in the
//! same run (libc malloc, memcpy, a channel to a thread, a plain loop, the
//! backend's own table). Prints a table of medians with min and max over
//! repeated batches, and `--json` the same as JSON. Targets are printed,
//! never enforced: the exit status is non-zero only when an xdal call
//! fails. See docs/performance.md.
mod alloc;
mod api;
mod cli;
mod copies;
mod cuda;
mod dispatch;
mod gate;
mod graphs;
mod kernels;
mod machine;
mod opencl;
mod report;
mod scaling;
mod stats;
mod streams;
mod tracing;

use api::{check, Res};
use clap::Parser;
use cli::Cli;
use report::{Row, RunInfo};
use stats::Timing;
use std::ffi::CStr;
use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;
use xdal::abi::*;
use xdal::*;

/// The name of device 0 and whether it is simulated.
fn device_name() -> Res<String> {
    // SAFETY: all-zero bytes are a valid properties struct.
    let mut props: xdal_device_properties_t = unsafe { std::mem::zeroed() };
    props.struct_size = std::mem::size_of_val(&props);
    check(xdal_device_get_properties(0, &mut props), "xdal_device_get_properties")?;
    // SAFETY: the library NUL-terminates the name.
    let name = unsafe { CStr::from_ptr(props.name.as_ptr()) }.to_string_lossy().into_owned();
    Ok(if props.is_simulated != 0 { format!("{name} (simulated)") } else { name })
}

fn run(cli: &Cli, timing: &Timing, rows: &mut Vec<Row>) -> Res<()> {
    check(xdal_init(), "xdal_init")?;
    // Measured first, while the heap is fresh (see scaling.rs).
    let mut idle_memory = if cli.runs("scaling") { scaling::idle_stream_memory()? } else { None };
    for name in cli::GROUPS {
        if !cli.runs(name) {
            continue;
        }
        let started = Instant::now();
        eprint!("xdal-bench: {name} ...");
        let _ = std::io::stderr().flush();
        let outcome = match name {
            "alloc" => alloc::run(timing, rows),
            "copy" => copies::run(timing, rows),
            "enqueue" => streams::enqueue(timing, rows),
            "roundtrip" => streams::round_trips(timing, rows),
            "scaling" => scaling::run(timing, rows, idle_memory.take()),
            "kernels" => kernels::run(timing, rows),
            "graphs" => graphs::run(timing, rows),
            "tracing" => tracing::run(timing, rows),
            "dispatch" => dispatch::run(timing, rows),
            "opencl" => opencl::run(timing, rows),
            "cuda" => cuda::run(timing, rows),
            _ => Err(format!("unknown group {name}")),
        };
        outcome.map_err(|e| format!("{name}: {e}"))?;
        eprintln!(" {:.1} s", started.elapsed().as_secs_f64());
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let timing = Timing::new(cli.quick, cli.reps.map(usize::from));
    let started = Instant::now();
    let round_trip_at_start = machine::core_round_trip_ns();
    let mut rows = Vec::new();
    let outcome = run(&cli, &timing, &mut rows);
    let core_round_trip_ns = [round_trip_at_start, machine::core_round_trip_ns()];
    let (mut major, mut minor, mut patch) = (0, 0, 0);
    xdal_get_version(&mut major, &mut minor, &mut patch);
    let info = RunInfo {
        tool: "xdal-bench",
        version: format!("{major}.{minor}.{patch}"),
        backend: api::backend_name().to_string_lossy().into_owned(),
        device: device_name().unwrap_or_else(|e| e),
        mode: if cli.quick { "quick" } else { "full" },
        reps: timing.reps,
        batch_ms: timing.batch.as_secs_f64() * 1e3,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        wall_seconds: started.elapsed().as_secs_f64(),
        core_round_trip_ns,
    };
    let heading = format!(
        "xdal-bench {}: xdal {} on backend {}, device 0: {}; {} CPUs; {} mode: median (min .. max) of {} batches of ~{} ms each; {:.0} s in all",
        env!("CARGO_PKG_VERSION"),
        info.version,
        info.backend,
        info.device,
        info.cpus,
        info.mode,
        info.reps,
        info.batch_ms,
        info.wall_seconds
    );
    let machine = format!(
        "core-to-core round trip of a cache line: {:.0} ns at the start, {:.0} ns at the end (see docs/performance.md)",
        core_round_trip_ns[0], core_round_trip_ns[1]
    );
    let text = format!("{heading}\n{machine}\n{}\n{}", report::table(&rows), report::target_summary(&rows));
    let json_target = cli.json_target();
    // With JSON on stdout, the table goes to stderr.
    if json_target == Some(None) {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    if let Some(target) = json_target {
        let json = report::json(&info, &rows);
        match target {
            None => println!("{json}"),
            Some(path) => {
                if let Err(e) = std::fs::write(path, json + "\n") {
                    eprintln!("xdal-bench: cannot write {}: {e}", path.display());
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("\nxdal-bench: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}
