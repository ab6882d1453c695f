//! xdal-abi: records the C ABI of an xdal build and checks it against the
//! frozen baselines of released versions (docs/abi-policy.md).
//!
//! It works from the artefacts alone, the headers and the built library, so
//! that a vendor can run it on their own fork:
//!
//! ```text
//! xdal-abi dump   --headers include/xdal --library build/lib/libxdal.so.1.1.0 --out abi.json
//! xdal-abi check  --headers include/xdal --library build/lib/libxdal.so.1.1.0 \
//!                 --debug-library target/debug/libxdal.so --baselines abi/baselines
//! xdal-abi freeze 1.1 --headers include/xdal --library target/debug/libxdal.so --baselines abi/baselines
//! xdal-abi headers --root . --out include/xdal
//! ```
mod abidiff;
mod baseline;
mod check;
mod compare;
mod ctype;
mod describe;
mod elf;
mod freeze;
mod header;
mod headers;
mod manifest;
mod model;
mod probe;
mod scratch;
mod struct_size;

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "xdal-abi", version, about = "Records xdal's C ABI and checks builds against released baselines")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The artefacts of one build.
#[derive(Args)]
struct Build {
    /// Directory of the public headers (every *.h in it is read).
    #[arg(long)]
    headers: PathBuf,
    /// The built shared library (symbols and SONAME).
    #[arg(long)]
    library: PathBuf,
    /// The same library built with full debug info, for abidw (default:
    /// --library). A release build keeps only line tables, which carry no types.
    #[arg(long)]
    debug_library: Option<PathBuf>,
    /// The library's manifest program (`xdal-abi-manifest` of the same
    /// build): the entries the front requires, the built-in kernel
    /// catalogue and the compiled layouts, which the headers do not carry.
    /// Without it those are not checked (and a frozen baseline lacks them).
    #[arg(long)]
    manifest: Option<PathBuf>,
}

impl Build {
    fn manifest(&self) -> Result<Option<manifest::Manifest>, String> {
        self.manifest.as_deref().map(manifest::Manifest::from_program).transpose()
    }
}

#[derive(Subcommand)]
enum Command {
    /// Write the description of a build (symbols, signatures, layouts, enums, macros) as JSON.
    Dump {
        #[command(flatten)]
        build: Build,
        /// Where to write it (default: standard output).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Also write libabigail's record (abidw XML) of the library here.
        #[arg(long)]
        abidw_out: Option<PathBuf>,
    },
    /// Compare a build against every baseline of its ABI major; fails on any break.
    Check {
        #[command(flatten)]
        build: Build,
        /// Directory holding one <major>.<minor>/ directory per released ABI.
        #[arg(long)]
        baselines: PathBuf,
        /// Skip the abidiff comparison (the checker's own rules still run).
        #[arg(long)]
        no_abidiff: bool,
    },
    /// Record a build as the baseline of ABI <VERSION> (headers, description, abidw XML).
    Freeze {
        /// The ABI version, <major>.<minor>; must match the headers' version macros.
        version: String,
        #[command(flatten)]
        build: Build,
        #[arg(long)]
        baselines: PathBuf,
        /// Overwrite an existing baseline (only one that was never released).
        #[arg(long)]
        force: bool,
        /// Do not record the abidw XML.
        #[arg(long)]
        no_abidiff: bool,
    },
    /// Write the public headers cbindgen makes of a source tree (xdal.h, xdal_backend.h).
    Headers {
        /// The source tree's root (its Cargo.toml and cbindgen.toml).
        #[arg(long, default_value = ".")]
        root: PathBuf,
        /// Where to write them (default: <root>/include/xdal).
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

fn dump(build: &Build, out: Option<&PathBuf>, abidw_out: Option<&PathBuf>) -> Result<(), String> {
    let mut d = describe::describe(&build.headers, &build.library)?;
    if let Some(failure) = &d.probe_failure {
        return Err(failure.clone());
    }
    // What `freeze --manifest` would record beside it.
    if let Some(m) = build.manifest()? {
        m.record_in(&mut d);
    }
    match out {
        Some(path) => std::fs::write(path, d.to_json()).map_err(|e| format!("cannot write {}: {e}", path.display()))?,
        None => print!("{}", d.to_json()),
    }
    if let Some(xml) = abidw_out {
        abidiff::abidw(build.debug_library.as_deref().unwrap_or(&build.library), xml)?;
    }
    Ok(())
}

fn run(cli: Cli) -> Result<bool, String> {
    match cli.command {
        Command::Dump { build, out, abidw_out } => dump(&build, out.as_ref(), abidw_out.as_ref()).map(|()| true),
        Command::Check { build, baselines, no_abidiff } => check::check(&check::Options {
            headers: &build.headers,
            library: &build.library,
            debug_library: build.debug_library.as_deref(),
            manifest: build.manifest()?.as_ref(),
            baselines: &baselines,
            abidiff: !no_abidiff,
        }),
        Command::Freeze { version, build, baselines, force, no_abidiff } => freeze::freeze(&freeze::Options {
            version: &version,
            headers: &build.headers,
            library: &build.library,
            debug_library: build.debug_library.as_deref(),
            manifest: build.manifest()?.as_ref(),
            baselines: &baselines,
            force,
            abidiff: !no_abidiff,
        })
        .map(|()| true),
        Command::Headers { root, out } => {
            let out = out.unwrap_or_else(|| root.join("include/xdal"));
            headers::write_headers(&root, &out).map(|()| true)
        }
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("xdal-abi: {e}");
            ExitCode::from(2)
        }
    }
}
