//! The struct_size rule, tried from each baseline's side: a C program
//! (`struct_size_probe.c`) compiled against the baseline's headers calls
//! every function taking an extensible struct, in the library under test,
//! with the sizes that baseline's callers pass and more, and reports every
//! byte written past what the caller's size allows. Functions of the
//! current headers that take an extensible struct and that the probe does
//! not exercise are named too, so a new one cannot go untested.
use crate::baseline::Baseline;
use crate::compare::Report;
use crate::model::Description;
use crate::scratch::Scratch;
use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SOURCE: &str = include_str!("struct_size_probe.c");

/// How long one run of the probe may take before it counts as hung.
const LIMIT: Duration = Duration::from_secs(60);

/// The functions of `cur` that take a pointer to one of its extensible
/// structs and that callers (not backends) call.
fn takers(cur: &Description) -> Vec<&str> {
    let extensible: Vec<String> =
        cur.structs.iter().filter(|s| s.extensible && !s.table).map(|s| format!("struct {}*", s.name)).collect();
    cur.functions
        .iter()
        .filter(|f| f.exported)
        .filter(|f| f.params.iter().any(|p| extensible.iter().any(|e| p.ty.canonical.ends_with(e.as_str()))))
        .map(|f| f.name.as_str())
        .collect()
}

/// Runs the probe built against `baseline`'s headers on `library`.
pub fn check(baseline: &Baseline, cur: &Description, library: &Path, r: &mut Report) -> Result<(), String> {
    let scratch = Scratch::new("struct-size")?;
    let mut flags: Vec<OsString> = vec!["-std=gnu11".into(), "-I".into(), baseline.dir.join("include").into()];
    flags.extend(
        cur.structs.iter().filter(|s| s.extensible).map(|s| format!("-DXDAL_KNOWN_{}={}", s.name, s.size).into()),
    );
    let exe = crate::probe::compile(&scratch, "struct_size_probe", SOURCE, &flags, &["-ldl"])?.map_err(|messages| {
        format!("the struct_size probe does not compile against baseline {}: {messages}", baseline.label)
    })?;
    let library = library.canonicalize().map_err(|e| format!("cannot find {}: {e}", library.display()))?;
    let mut child = Command::new(&exe)
        .arg(&library)
        .env("XDAL_BACKEND", "fake")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run the struct_size probe: {e}"))?;
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| format!("struct_size probe: {e}"))? {
            break Some(status);
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut output = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = std::io::Read::read_to_string(&mut stdout, &mut output);
    }
    let label = &baseline.label;
    for line in output.lines() {
        if let Some(failure) = line.strip_prefix("FAIL ") {
            r.brk(format!("struct_size rule, as a caller built against {label}: {failure}"));
        } else if let Some(why) = line.strip_prefix("NOINIT ").or(line.strip_prefix("NOLOAD ")) {
            // A library built without the fake backend (a vendor's, say):
            // said, not hidden, and not a break of the ABI.
            println!("  note   struct_size rule not tried as a caller built against {label}: {why}");
            return Ok(());
        }
    }
    match status {
        None => r.brk(format!(
            "struct_size rule, as a caller built against {label}: the probe did not finish in {} s",
            LIMIT.as_secs()
        )),
        Some(s) if !s.success() => r.brk(format!(
            "struct_size rule, as a caller built against {label}: the probe crashed ({s}), reading or writing past a \
             caller's struct (its last line: {:?})",
            output.lines().last().unwrap_or_default()
        )),
        Some(_) => {}
    }
    let covered: Vec<&str> = output.lines().filter_map(|l| l.strip_prefix("COVERED ")).collect();
    for function in takers(cur) {
        let in_baseline = baseline.description.functions.iter().any(|f| f.name == function);
        if in_baseline && !covered.contains(&function) {
            r.brk(format!(
                "struct_size rule: `{function}` takes an extensible struct but the probe (struct_size_probe.c) does \
                 not exercise it: add it there"
            ));
        }
    }
    Ok(())
}
