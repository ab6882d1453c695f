#!/usr/bin/env python3
"""Pass counts of the OpInfo suite (tests/test_opinfo.py) on the CPU and on xdal, side by side.

Runs the suite's two classes (TestOpInfoCPU, TestOpInfoPRIVATEUSE1) with
pytest, reads its JUnit report and prints, per check, how many
(operator, dtype) tests pass on each device, how many xdal tests were not
asked because the CPU does not pass them either, and xdal's listed
expected failures:

    XDAL_FAKE_PROTECT=1 .venv/bin/python integrations/torch/tools/opinfo_report.py [-j PROCS] [pytest args]

-j runs that many pytest processes at once, each on an interleaved share
of the operators (XDAL_OPINFO_SHARD), one intra-op thread each.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SUITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "test_opinfo.py")
DEVICES = {"TestOpInfoCPU": "cpu", "TestOpInfoPRIVATEUSE1": "xdal"}


def outcome(case):
    for child in case:
        if child.tag in ("failure", "error"):
            return "failed"
        if child.tag == "skipped":
            text = child.get("message", "")
            if "the CPU does not pass this either" in text:
                return "cpu_fails"
            if "expected failure on xdal" in text:
                return "expected_failure"
            if "PyTorch's TestCommon skips this" in text:
                return "pytorch_skips"
            return "skipped"
    return "passed"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-j", "--jobs", type=int, default=1, help="pytest processes (default 1)")
    p.add_argument("pytest_args", nargs="*")
    args = p.parse_args()
    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        runs = []
        for shard in range(args.jobs):
            report = os.path.join(tmp, f"report{shard}.xml")
            cmd = [sys.executable, "-m", "pytest", SUITE, "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
                   *args.pytest_args]
            env = {**os.environ, "XDAL_OPINFO_CPU": "1", "XDAL_OPINFO_SHARD": f"{shard}/{args.jobs}"}
            if args.jobs > 1:
                env["OMP_NUM_THREADS"] = "1"
            runs.append((report, subprocess.Popen(cmd, stdout=subprocess.DEVNULL, env=env)))
        for report, run in runs:
            run.wait()
            cases.extend(ET.parse(report).getroot().iter("testcase"))
    counts: dict[tuple[str, str], collections.Counter] = collections.defaultdict(collections.Counter)
    failures = []
    for case in cases:
        device = DEVICES.get(case.get("classname", "").rsplit(".", 1)[-1])
        if device is None:
            continue
        name = case.get("name", "")
        check = next((c for c in ("test_compare_cpu", "test_noncontiguous_samples", "test_out",
                                  "test_output_strides", "test_inplace_overlap", "test_backward_compare_cpu")
                      if name.startswith(c + "_")), "other")
        result = outcome(case)
        counts[(check, device)][result] += 1
        if result == "failed":
            failures.append(f"{device}: {name}")
    print(f"{'check':28s} {'CPU passed':>11s} {'xdal passed':>12s} {'not asked':>10s} {'xfail':>6s} "
          f"{'xdal failed':>12s} {'CPU failed':>11s} {'PyTorch skips':>14s}")
    total = collections.Counter()
    for check in sorted({c for c, _ in counts}):
        cpu, dev = counts[(check, "cpu")], counts[(check, "xdal")]
        row = (cpu["passed"], dev["passed"], dev["cpu_fails"], dev["expected_failure"], dev["failed"], cpu["failed"],
               dev["pytorch_skips"])
        total.update(dict(zip(("cpu", "xdal", "not_asked", "xfail", "xdal_failed", "cpu_failed", "pytorch_skips"),
                              row)))
        print(f"{check:28s} {row[0]:11d} {row[1]:12d} {row[2]:10d} {row[3]:6d} {row[4]:12d} {row[5]:11d} {row[6]:14d}")
    print(f"{'all':28s} {total['cpu']:11d} {total['xdal']:12d} {total['not_asked']:10d} {total['xfail']:6d} "
          f"{total['xdal_failed']:12d} {total['cpu_failed']:11d} {total['pytorch_skips']:14d}")
    for f in failures:
        print("FAILED", f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
