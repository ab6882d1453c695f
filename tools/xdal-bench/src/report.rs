//! Rows of results, the text table and the JSON document.
//!
//! Every row holds one xdal figure (median, min, max over the batches) and,
//! where there is one, the reference measured in the same run, with the
//! comparison of the two: a ratio (xdal / reference, in the row's unit) or,
//! for dispatch overhead, a difference. A reference measured interleaved
//! with the figure (`Timing::measure_pair`) is compared batch by batch,
//! each xdal batch with the reference batch beside it, and the median of
//! those comparisons is the row's: on a machine whose speed drifts by more
//! than the difference sought, it moves far less from run to run than the
//! comparison of the two medians, which is kept for references measured
//! apart. A target, when the issue
//! sets one, is checked against the median (or the comparison) and shown as
//! met or not; a missed target never changes the exit status.
use crate::stats::{Samples, Stat};
use serde::Serialize;
use std::fmt::Write as _;

/// The unit of a row; every figure derives from seconds per operation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Unit {
    /// Nanoseconds per operation.
    NsPerOp,
    /// Millions of operations per second.
    MopsPerSec,
    /// 10^9 bytes per second, for `bytes` bytes moved per operation.
    GBps { bytes: f64 },
    /// 10^9 floating-point operations per second, `flops` per operation.
    GFlops { flops: f64 },
    /// Bytes of resident memory per stream (the "per-op" figure is bytes).
    BytesPerStream,
}

impl Unit {
    pub fn label(self) -> &'static str {
        match self {
            Unit::NsPerOp => "ns/op",
            Unit::MopsPerSec => "Mop/s",
            Unit::GBps { .. } => "GB/s",
            Unit::GFlops { .. } => "GFLOP/s",
            Unit::BytesPerStream => "B/stream",
        }
    }

    /// The figure for `per_op` seconds per operation.
    pub fn figure(self, per_op: f64) -> f64 {
        match self {
            Unit::NsPerOp => per_op * 1e9,
            Unit::MopsPerSec => 1e-6 / per_op,
            Unit::GBps { bytes } => bytes / per_op / 1e9,
            Unit::GFlops { flops } => flops / per_op / 1e9,
            Unit::BytesPerStream => per_op,
        }
    }

    pub fn stat(self, samples: &Samples) -> Stat {
        samples.stat(|s| self.figure(s))
    }
}

/// A target from the issue. Median-based goals compare the xdal median;
/// ratio and difference goals compare it with the reference's median.
#[derive(Clone, Copy, Debug)]
pub enum Goal {
    AtLeast(f64),
    Below(f64),
    RatioAtLeast(f64),
    RatioAtMost(f64),
    /// xdal median minus reference median, in the row's unit.
    DiffBelow(f64),
}

/// How a row compares its figure with its reference.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Compare {
    /// xdal median / reference median.
    Ratio,
    /// xdal median - reference median.
    Difference,
}

/// A measured reference.
#[derive(Clone, Debug, Serialize)]
pub struct Reference {
    pub name: String,
    #[serde(flatten)]
    pub stat: Stat,
    /// Its batches, to compare with the row's batch by batch.
    #[serde(skip)]
    samples: Samples,
}

/// One line of the report.
#[derive(Clone, Debug)]
pub struct Row {
    pub group: &'static str,
    pub name: String,
    pub unit: Unit,
    pub stat: Stat,
    /// The batches behind `stat`.
    samples: Samples,
    pub reference: Option<Reference>,
    pub compare: Compare,
    pub goal: Option<Goal>,
}

impl Row {
    pub fn new(group: &'static str, name: impl Into<String>, unit: Unit, samples: &Samples) -> Row {
        Row {
            group,
            name: name.into(),
            unit,
            stat: unit.stat(samples),
            samples: samples.clone(),
            reference: None,
            compare: Compare::Ratio,
            goal: None,
        }
    }

    /// Adds the reference, measured in the same unit.
    pub fn vs(mut self, name: impl Into<String>, samples: &Samples) -> Row {
        self.reference = Some(Reference { name: name.into(), stat: self.unit.stat(samples), samples: samples.clone() });
        self
    }

    /// Compares by difference rather than ratio.
    pub fn by_difference(mut self) -> Row {
        self.compare = Compare::Difference;
        self
    }

    pub fn goal(mut self, goal: Goal) -> Row {
        self.goal = Some(goal);
        self
    }

    /// The comparison with the reference, if there is one: its median.
    pub fn versus(&self) -> Option<f64> {
        match self.batch_by_batch() {
            Some(each) => Some(each.median),
            None => Some(self.compared(self.stat.median, self.reference.as_ref()?.stat.median)),
        }
    }

    /// The comparisons batch by batch (median, min and max), if the
    /// reference was measured as a pair with the row.
    pub fn batch_by_batch(&self) -> Option<Stat> {
        let reference = self.reference.as_ref()?;
        self.samples.paired(&reference.samples, |s| self.unit.figure(s), |a, b| self.compared(a, b))
    }

    fn compared(&self, figure: f64, reference: f64) -> f64 {
        match self.compare {
            Compare::Ratio => figure / reference,
            Compare::Difference => figure - reference,
        }
    }

    /// The target in words.
    pub fn goal_text(&self) -> Option<String> {
        let unit = self.unit.label();
        Some(match self.goal? {
            Goal::AtLeast(v) => format!(">= {v} {unit}"),
            Goal::Below(v) => format!("< {v} {unit}"),
            Goal::RatioAtLeast(r) => format!(">= {r}x ref"),
            Goal::RatioAtMost(r) => format!("<= {r}x ref"),
            Goal::DiffBelow(v) => format!("< +{v} {}", unit.trim_end_matches("/op")),
        })
    }

    /// Whether the target is met (None: no target, or no reference to compare).
    pub fn met(&self) -> Option<bool> {
        let median = self.stat.median;
        Some(match self.goal? {
            Goal::AtLeast(v) => median >= v,
            Goal::Below(v) => median < v,
            Goal::RatioAtLeast(r) => self.versus()? >= r,
            Goal::RatioAtMost(r) => self.versus()? <= r,
            Goal::DiffBelow(v) => self.versus()? < v,
        })
    }
}

/// A number with about four significant digits.
pub fn number(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        format!("{v}")
    } else if a >= 1000.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else if a >= 1.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    }
}

fn versus_text(row: &Row) -> String {
    row.versus().map_or_else(|| "-".into(), |v| comparison_text(row, v))
}

fn comparison_text(row: &Row, v: f64) -> String {
    match row.compare {
        Compare::Ratio => format!("{v:.2}x"),
        Compare::Difference => {
            format!("{}{} {}", if v >= 0.0 { "+" } else { "" }, number(v), row.unit.label().trim_end_matches("/op"))
        }
    }
}

fn range(stat: &Stat) -> String {
    format!("{} .. {}", number(stat.min), number(stat.max))
}

const HEADER: [&str; 10] = [
    "measurement",
    "median",
    "min .. max",
    "unit",
    "reference",
    "ref median",
    "ref min .. max",
    "vs ref",
    "target",
    "met",
];

/// The text table, one section per group.
pub fn table(rows: &[Row]) -> String {
    let cells: Vec<[String; 10]> = rows
        .iter()
        .map(|row| {
            let (ref_name, ref_median, ref_range) = match &row.reference {
                Some(r) => (r.name.clone(), number(r.stat.median), range(&r.stat)),
                None => ("-".into(), "-".into(), "-".into()),
            };
            [
                row.name.clone(),
                number(row.stat.median),
                range(&row.stat),
                row.unit.label().into(),
                ref_name,
                ref_median,
                ref_range,
                versus_text(row),
                row.goal_text().unwrap_or_else(|| "-".into()),
                match row.met() {
                    Some(true) => "yes".into(),
                    Some(false) => "NO".into(),
                    None => "-".into(),
                },
            ]
        })
        .collect();
    let mut widths: Vec<usize> = HEADER.iter().map(|h| h.chars().count()).collect();
    for line in &cells {
        for (w, cell) in widths.iter_mut().zip(line) {
            *w = (*w).max(cell.chars().count());
        }
    }
    // Numbers right-aligned, words left-aligned.
    let right = [false, true, true, false, false, true, true, true, false, false];
    let format_line = |line: &[&str]| {
        let mut out = String::new();
        for (i, cell) in line.iter().enumerate() {
            let pad = widths[i].saturating_sub(cell.chars().count());
            if i > 0 {
                out.push_str("  ");
            }
            if right[i] {
                out.push_str(&" ".repeat(pad));
                out.push_str(cell);
            } else {
                out.push_str(cell);
                if i + 1 < line.len() {
                    out.push_str(&" ".repeat(pad));
                }
            }
        }
        out.trim_end().to_string()
    };
    let mut out = String::new();
    let header = format_line(&HEADER);
    let mut group = "";
    for (row, line) in rows.iter().zip(&cells) {
        if row.group != group {
            group = row.group;
            let _ = writeln!(out, "\n== {group}");
            let _ = writeln!(out, "{header}");
        }
        let line: Vec<&str> = line.iter().map(String::as_str).collect();
        let _ = writeln!(out, "{}", format_line(&line));
    }
    out
}

/// One row in the JSON document.
#[derive(Serialize)]
struct JsonRow<'a> {
    group: &'a str,
    name: &'a str,
    unit: &'a str,
    #[serde(flatten)]
    stat: Stat,
    reference: Option<&'a Reference>,
    compare: Compare,
    vs_reference: Option<f64>,
    /// The comparisons batch by batch, whose median `vs_reference` is
    /// (None: the reference was measured apart; its medians compared).
    vs_reference_by_batch: Option<Stat>,
    target: Option<String>,
    met: Option<bool>,
}

/// What the run was, for the JSON document and the table's heading.
#[derive(Serialize)]
pub struct RunInfo {
    pub tool: &'static str,
    pub version: String,
    pub backend: String,
    pub device: String,
    pub mode: &'static str,
    pub reps: usize,
    pub batch_ms: f64,
    pub cpus: usize,
    pub wall_seconds: f64,
    /// `machine::core_round_trip_ns` at the start and at the end of the run.
    pub core_round_trip_ns: [f64; 2],
}

#[derive(Serialize)]
struct Document<'a> {
    #[serde(flatten)]
    info: &'a RunInfo,
    rows: Vec<JsonRow<'a>>,
}

/// The JSON document: the run, then every row.
pub fn json(info: &RunInfo, rows: &[Row]) -> String {
    let rows = rows
        .iter()
        .map(|row| JsonRow {
            group: row.group,
            name: &row.name,
            unit: row.unit.label(),
            stat: row.stat,
            reference: row.reference.as_ref(),
            compare: row.compare,
            vs_reference: row.versus(),
            vs_reference_by_batch: row.batch_by_batch(),
            target: row.goal_text(),
            met: row.met(),
        })
        .collect();
    // Serializing plain data with string keys cannot fail; NaN becomes null.
    serde_json::to_string_pretty(&Document { info, rows }).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// The targets, one line each: met or not, with the numbers.
pub fn target_summary(rows: &[Row]) -> String {
    let mut out = String::new();
    let (mut met, mut total) = (0, 0);
    for row in rows {
        let (Some(ok), Some(goal)) = (row.met(), row.goal_text()) else { continue };
        total += 1;
        met += usize::from(ok);
        let figure = match row.goal {
            Some(Goal::AtLeast(_) | Goal::Below(_)) => format!("{} {}", number(row.stat.median), row.unit.label()),
            _ => match row.batch_by_batch() {
                Some(each) => format!(
                    "{}, the median of {} batch pairs ({} .. {})",
                    comparison_text(row, each.median),
                    each.reps,
                    comparison_text(row, each.min),
                    comparison_text(row, each.max)
                ),
                None => versus_text(row),
            },
        };
        let _ = writeln!(
            out,
            "  {}  {} / {}: {figure} (target {goal})",
            if ok { "met   " } else { "missed" },
            row.group,
            row.name
        );
    }
    format!("targets met: {met} of {total}\n{out}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Timing;
    use std::time::Duration;

    #[test]
    fn a_row_compares_a_pair_batch_by_batch_and_a_reference_apart_by_medians() {
        let timing = Timing { reps: 3, batch: Duration::from_millis(1) };
        // Pairs of batches at 1.1 against 1 us, 11 against 10 (the machine
        // slowed down for both), 30 against 1 (for xdal's alone): the
        // median pair says 1.1x, where the medians (11 and 1 us) say 11x.
        let times = std::cell::Cell::new(0usize);
        let (xdal_us, reference_us) = ([1.1, 11.0, 30.0], [1.0, 10.0, 1.0]);
        let (xdal, reference) = timing
            .measure_pair(
                |n| {
                    times.set(times.get() + 1);
                    Ok(Duration::from_secs_f64(n as f64 * 1e-6 * xdal_us[times.get() % 3]))
                },
                |n| Ok(Duration::from_secs_f64(n as f64 * 1e-6 * reference_us[times.get() % 3])),
            )
            .unwrap();
        let row = Row::new("g", "r", Unit::NsPerOp, &xdal).vs("ref", &reference).goal(Goal::RatioAtMost(1.2));
        let each = row.batch_by_batch().expect("a pair");
        assert_eq!(each.reps, 3);
        assert!((row.versus().unwrap() - 1.1).abs() < 0.01, "{:?}", row.versus());
        assert_eq!(row.met(), Some(true));
        let apart = Row::new("g", "r", Unit::NsPerOp, &xdal).vs("ref", &crate::stats::Samples::alone(vec![1e-6; 3]));
        assert!(apart.batch_by_batch().is_none());
        assert!((apart.versus().unwrap() - 11.0).abs() < 0.01, "{:?}", apart.versus());
    }
}
