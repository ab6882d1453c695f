//! The committed PTX (backends/cuda/ptx, written by tools/cuda-ptx.sh) against
//! the catalogue the CUDA backend launches from: every built-in's kernel is
//! an entry of its program's file, taking the built-in's arguments with
//! their byte sizes, then the route's `uint` for a cast. (`cuda-ptx.sh
//! --check` checks that the files are what the sources compile to.)
use std::collections::HashMap;
use std::path::Path;
use xdal_backend_support::kernels::{all, program_count, program_stem};

/// The byte size of each parameter of each `.entry` of a PTX file.
fn entries(ptx: &str) -> HashMap<String, Vec<usize>> {
    let mut found = HashMap::new();
    let mut lines = ptx.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line.strip_prefix(".visible .entry ").and_then(|rest| rest.strip_suffix('(')) else {
            continue;
        };
        let params = lines.by_ref().take_while(|l| l.trim() != ")").map(param_size).collect();
        found.insert(name.to_string(), params);
    }
    found
}

/// `.param .u64 x,` is 8 bytes, `.param .align 8 .b8 x[128]` 128.
fn param_size(line: &str) -> usize {
    let words: Vec<&str> = line.trim().trim_end_matches(',').split_whitespace().collect();
    if let Some(array) = words.last().and_then(|w| w.strip_suffix(']')) {
        return array.split_once('[').and_then(|(_, n)| n.parse().ok()).unwrap_or_else(|| panic!("{line}"));
    }
    let bits: usize = words[1][2..].parse().unwrap_or_else(|_| panic!("{line}"));
    bits / 8
}

#[test]
fn every_builtin_is_an_entry_with_its_arguments() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../backends/cuda/ptx");
    let programs: Vec<HashMap<String, Vec<usize>>> = (0..program_count())
        .map(|p| {
            let path = dir.join(format!("{}.ptx", program_stem(p)));
            let ptx = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(ptx.contains("\n.version 8.0\n"), "{}: not PTX ISA 8.0", path.display());
            entries(&ptx)
        })
        .collect();
    for b in all() {
        let params = programs[b.program].get(&b.kernel).unwrap_or_else(|| panic!("{}: no entry {}", b.name, b.kernel));
        let mut expected: Vec<usize> = b.args.iter().map(|a| a.1).collect();
        if b.route.is_some() {
            expected.push(4);
        }
        assert_eq!(params, &expected, "{} ({})", b.name, b.kernel);
    }
    assert_eq!(programs.iter().map(HashMap::len).sum::<usize>(), 14 * 10, "entries no built-in uses");
}
