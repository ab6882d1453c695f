//! `XDAL_TRACE=<path>`: a Chrome trace-event JSON file that Perfetto and
//! chrome://tracing open. Host threads are tracks of process "xdal host"
//! (API calls as slices), each stream a track of process "xdal device N"
//! (its work as slices), and a flow arrow leads from each call to the work
//! it enqueued. Written at exit and at each `xdal_tracer_flush`.
use super::activity::Origin;
use crate::lock::IgnorePoison;
use std::collections::BTreeSet;
use std::ffi::CStr;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Mutex;
use xdal_abi::*;

struct Writer {
    path: String,
    /// Trace events, each a JSON object.
    events: Vec<String>,
    threads: BTreeSet<u64>,
    streams: BTreeSet<(i32, u64)>,
}

static WRITER: Mutex<Option<Writer>> = Mutex::new(None);
/// Whether `WRITER` is set: calls spare its lock when no file is written.
static ON: AtomicBool = AtomicBool::new(false);

/// The process id of the host tracks; devices are 1 + their index.
const HOST: i64 = 0;

pub(super) fn start(path: String) {
    *WRITER.lock().ignore_poison() =
        Some(Writer { path, events: Vec::new(), threads: BTreeSet::new(), streams: BTreeSet::new() });
    ON.store(true, Relaxed);
    // SAFETY: registering a plain extern "C" function with no arguments.
    unsafe { libc::atexit(write_at_exit) };
}

pub(super) fn is_on() -> bool {
    ON.load(Relaxed)
}

/// Microseconds, as the format wants them, from nanoseconds.
fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// A JSON string's contents.
fn escaped(text: &str) -> String {
    text.chars()
        .flat_map(|c| match c {
            '"' => vec!['\\', '"'],
            '\\' => vec!['\\', '\\'],
            c if (c as u32) < 0x20 => format!("\\u{:04x}", c as u32).chars().collect(),
            c => vec![c],
        })
        .collect()
}

pub(super) fn api(function: &CStr, record: &xdal_api_record_t) {
    if !is_on() {
        return;
    }
    let mut writer = WRITER.lock().ignore_poison();
    let Some(writer) = writer.as_mut() else { return };
    writer.threads.insert(record.thread_id);
    writer.events.push(format!(
        "{{\"name\":\"{}\",\"cat\":\"api\",\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{HOST},\"tid\":{},\
         \"args\":{{\"correlation_id\":{},\"external_id\":{},\"status\":\"{}\"}}}}",
        escaped(&function.to_string_lossy()),
        us(record.start_ns),
        us(record.end_ns.saturating_sub(record.start_ns)),
        record.thread_id,
        record.correlation_id,
        record.external_id,
        record.status.name()
    ));
}

pub(super) fn activities(records: &[xdal_activity_t], origins: &[Origin]) {
    if !is_on() {
        return;
    }
    let mut writer = WRITER.lock().ignore_poison();
    let Some(writer) = writer.as_mut() else { return };
    for (record, origin) in records.iter().zip(origins) {
        // SAFETY: the name is valid during delivery.
        let name = unsafe { CStr::from_ptr(record.name) }.to_string_lossy();
        let (pid, tid) = (i64::from(record.device) + 1, record.stream_id);
        writer.streams.insert((record.device, record.stream_id));
        let mut args = format!("\"correlation_id\":{},\"bytes\":{}", record.correlation_id, record.bytes);
        if record.kind == xdal_activity_kind::XDAL_ACTIVITY_KERNEL {
            let (g, b) = (record.grid, record.block);
            let _ = write!(args, ",\"grid\":\"{}x{}x{}\",\"block\":\"{}x{}x{}\"", g.x, g.y, g.z, b.x, b.y, b.z);
        }
        writer.events.push(format!(
            "{{\"name\":\"{}\",\"cat\":\"{}\",\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{pid},\"tid\":{tid},\
             \"args\":{{{args}}}}}",
            escaped(&name),
            category(record.kind),
            us(record.start_ns),
            us(record.end_ns.saturating_sub(record.start_ns))
        ));
        // The arrow: from inside the call's slice to the start of the work.
        let id = record.correlation_id;
        writer.events.push(format!(
            "{{\"name\":\"launch\",\"cat\":\"flow\",\"ph\":\"s\",\"id\":{id},\"ts\":{},\"pid\":{HOST},\"tid\":{}}}",
            us(origin.enqueued_ns),
            origin.thread
        ));
        writer.events.push(format!(
            "{{\"name\":\"launch\",\"cat\":\"flow\",\"ph\":\"f\",\"bp\":\"e\",\"id\":{id},\"ts\":{},\"pid\":{pid},\
             \"tid\":{tid}}}",
            us(record.start_ns)
        ));
    }
}

fn category(kind: xdal_activity_kind) -> &'static str {
    match kind {
        xdal_activity_kind::XDAL_ACTIVITY_KERNEL => "kernel",
        xdal_activity_kind::XDAL_ACTIVITY_MEMCPY => "memcpy",
        xdal_activity_kind::XDAL_ACTIVITY_MEMSET => "memset",
        xdal_activity_kind::XDAL_ACTIVITY_HOST_FUNC => "host_func",
        xdal_activity_kind::XDAL_ACTIVITY_GRAPH => "graph",
        xdal_activity_kind::XDAL_ACTIVITY_ALLOC => "alloc",
        xdal_activity_kind::XDAL_ACTIVITY_FREE => "free",
    }
}

/// Writes the file as it stands (every record so far).
pub(super) fn write() {
    let writer = WRITER.lock().ignore_poison();
    let Some(writer) = writer.as_ref() else { return };
    let mut text = String::from("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    let mut metadata =
        vec![format!("{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{HOST},\"args\":{{\"name\":\"xdal host\"}}}}")];
    for thread in &writer.threads {
        metadata.push(format!(
            "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{HOST},\"tid\":{thread},\"args\":{{\"name\":\"thread \
             {thread}\"}}}}"
        ));
    }
    let devices: BTreeSet<i32> = writer.streams.iter().map(|&(d, _)| d).collect();
    for device in devices {
        metadata.push(format!(
            "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{},\"args\":{{\"name\":\"xdal device {device}\"}}}}",
            i64::from(device) + 1
        ));
    }
    for &(device, stream) in &writer.streams {
        metadata.push(format!(
            "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":{stream},\"args\":{{\"name\":\"stream \
             {stream}\"}}}}",
            i64::from(device) + 1
        ));
    }
    let all: Vec<&String> = metadata.iter().chain(&writer.events).collect();
    for (i, event) in all.iter().enumerate() {
        text.push_str(event);
        text.push_str(if i + 1 < all.len() { ",\n" } else { "\n" });
    }
    text.push_str("]}\n");
    if let Err(e) = crate::output_file::write(std::path::Path::new(&writer.path), text.as_bytes()) {
        eprintln!("xdal: XDAL_TRACE: cannot write {:?}: {e}", writer.path);
    }
}

extern "C" fn write_at_exit() {
    // Nothing may unwind out of an atexit handler.
    let _ = std::panic::catch_unwind(|| {
        super::activity::deliver();
        write();
    });
}
