//! Command line.
use clap::Parser;
use std::path::PathBuf;

/// The groups of measurements, in the order they run and are reported.
pub const GROUPS: [&str; 11] =
    ["alloc", "copy", "enqueue", "roundtrip", "scaling", "kernels", "graphs", "tracing", "dispatch", "opencl", "cuda"];

/// Measures xdal's hot paths through the C ABI, each beside a reference
/// measured in the same run, and prints medians (with min and max) over
/// repeated batches. Targets are shown, never enforced: the exit status is
/// non-zero only when an xdal call fails.
#[derive(Parser, Debug)]
#[command(name = "xdal-bench", version)]
pub struct Cli {
    /// Run each measurement only briefly (the whole run takes a few
    /// seconds): to keep the tool working in CI, not for numbers.
    #[arg(long)]
    pub quick: bool,

    /// Also write the results as JSON, to FILE or, with no FILE (or "-"),
    /// to stdout; the table then goes to stderr.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,

    /// Run only these groups (repeatable, or comma-separated).
    #[arg(long, value_name = "GROUP", value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(GROUPS))]
    pub only: Vec<String>,

    /// Batches measured per figure (default 9; 3 with --quick).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=101))]
    pub reps: Option<u16>,
}

impl Cli {
    /// Whether `group` is to run.
    pub fn runs(&self, group: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|g| g == group)
    }

    /// Where the JSON goes: None for nowhere, Some(None) for stdout.
    pub fn json_target(&self) -> Option<Option<&PathBuf>> {
        self.json.as_ref().map(|path| (path.as_os_str() != "-").then_some(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_takes_an_optional_file() {
        let cli = Cli::try_parse_from(["xdal-bench", "--json", "--quick"]).unwrap();
        assert!(cli.quick);
        assert_eq!(cli.json_target(), Some(None));
        let cli = Cli::try_parse_from(["xdal-bench", "--json", "out.json"]).unwrap();
        assert_eq!(cli.json_target(), Some(Some(&PathBuf::from("out.json"))));
        let cli = Cli::try_parse_from(["xdal-bench"]).unwrap();
        assert_eq!(cli.json_target(), None);
    }

    #[test]
    fn only_selects_groups() {
        let cli = Cli::try_parse_from(["xdal-bench", "--only", "copy,alloc"]).unwrap();
        assert!(cli.runs("copy") && cli.runs("alloc") && !cli.runs("kernels"));
        assert!(Cli::try_parse_from(["xdal-bench", "--only", "nope"]).is_err());
    }
}
