#!/usr/bin/env python3
"""Share of PyTorch's OpInfo database that gives the same results on xdal as on the CPU.

For every OpInfo in torch.testing._internal.common_methods_invocations.op_db
that supports the dtype on the CPU, each sample input (up to --samples of
them) is run on the CPU and again with every tensor moved to the xdal device
("xdal:0"), forward only, with the same random seed; the outputs are
compared with torch.testing.assert_close (dtype-based tolerances, NaN equal
to NaN). An OpInfo counts as matching when all its samples that run on the
CPU give the same result on xdal. Ops whose samples all fail on the CPU
count neither way.

The ops run in worker processes (a crash or a hang is charged to the op that
caused it, and the next worker carries on):

    XDAL_FAKE_PROTECT=1 python integrations/torch/tools/opinfo_share.py \
        [--dtype float32] [--samples 8] [--timeout 120] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import subprocess
import sys
import time


# ---------------------------------------------------------------- worker

def _to_xdal(t):
    import torch

    if isinstance(t, torch.Tensor):
        if t.layout != torch.strided:
            raise _Skip("non-strided layout")
        return t.detach().to("xdal:0").requires_grad_(t.requires_grad)
    return t


class _Skip(Exception):
    pass


def _compare(got, ref):
    import torch

    if isinstance(ref, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            raise AssertionError(f"expected a tensor, got {type(got).__name__}")
        if got.device.type != "xdal" and ref.device.type == "cpu" and ref.numel() > 0 and got.dim() > 0:
            raise AssertionError(f"result on {got.device}, expected on xdal")
        got = got.detach().cpu()
        ref = ref.detach()
        if ref.layout != torch.strided:
            ref, got = ref.to_dense(), got.to_dense()
        torch.testing.assert_close(got, ref, equal_nan=True, check_device=False, check_stride=False)
    elif isinstance(ref, (list, tuple)):
        if len(got) != len(ref):
            raise AssertionError("different lengths")
        for g, r in zip(got, ref):
            _compare(g, r)
    elif isinstance(ref, dict):
        for k in ref:
            _compare(got[k], ref[k])
    elif isinstance(ref, float):
        if not (got == ref or (got != got and ref != ref) or abs(got - ref) <= 1e-5 * max(1.0, abs(ref))):
            raise AssertionError(f"{got} != {ref}")
    elif hasattr(ref, "_fields") or ref is None or isinstance(ref, (int, bool, str, torch.dtype, torch.Size)):
        if got != ref:
            raise AssertionError(f"{got!r} != {ref!r}")


def _compare_cpu_skipped(op, dtype):
    """True when op_db itself skips or expects failure of TestCommon.test_compare_cpu for this op
    on every device (undefined outputs such as torch.empty, samples that do not survive a device
    move, ...)."""
    for d in getattr(op, "decorators", ()) or ():
        try:
            if (d.cls_name == "TestCommon" and d.test_name == "test_compare_cpu" and d.device_type is None
                    and d.is_active("TestCommon", "test_compare_cpu", "xdal", dtype, {})):
                return True
        except Exception:  # noqa: BLE001
            pass
    return False


def run_op(op, dtype, max_samples):
    import torch

    if dtype not in op.supported_dtypes("cpu"):
        return {"status": "unsupported"}
    try:
        samples = []
        for s in op.sample_inputs("cpu", dtype, requires_grad=False):
            samples.append(s)
            if len(samples) >= max_samples:
                break
    except Exception as e:  # noqa: BLE001
        return {"status": "no_samples", "detail": f"{type(e).__name__}: {e}"[:300]}
    ran = matched = 0
    detail = ""
    for s in samples:
        torch.manual_seed(0)
        try:
            ref = op(s.input, *s.args, **s.kwargs)
        except Exception:  # noqa: BLE001  (the CPU refuses the sample: not counted)
            continue
        try:
            xs = s.transform(_to_xdal)
        except _Skip:
            continue
        if "device" in xs.kwargs:  # factory functions: ask for the xdal device
            xs.kwargs["device"] = "xdal:0"
        ran += 1
        torch.manual_seed(0)
        try:
            got = op(xs.input, *xs.args, **xs.kwargs)
            _compare(got, ref)
            matched += 1
        except Exception as e:  # noqa: BLE001
            if not detail:
                detail = f"{type(e).__name__}: {e}".splitlines()[0][:300]
    if ran == 0:
        return {"status": "no_samples", "samples": 0}
    return {"status": "match" if matched == ran else "mismatch", "samples": ran, "matched": matched,
            "detail": detail}


def worker(start, end, dtype_name, max_samples):
    import torch
    import torch_xdal  # noqa: F401
    from torch.testing._internal.common_methods_invocations import op_db

    dtype = getattr(torch, dtype_name)
    for i in range(start, min(end, len(op_db))):
        op = op_db[i]
        name = op.name + ("." + op.variant_test_name if op.variant_test_name else "")
        print(json.dumps({"event": "start", "index": i, "op": name}), flush=True)
        t0 = time.time()
        try:
            r = run_op(op, dtype, max_samples)
        except Exception as e:  # noqa: BLE001
            r = {"status": "mismatch", "detail": f"{type(e).__name__}: {e}"[:300]}
        r.update(event="done", index=i, op=name, seconds=round(time.time() - t0, 3),
                 compare_cpu_skipped=_compare_cpu_skipped(op, dtype))
        print(json.dumps(r), flush=True)
    print(json.dumps({"event": "end"}), flush=True)


# ---------------------------------------------------------------- driver

def op_count():
    out = subprocess.check_output(
        [sys.executable, "-c",
         "from torch.testing._internal.common_methods_invocations import op_db; print(len(op_db))"],
        text=True)
    return int(out.strip().splitlines()[-1])


def drive(args):
    total = op_count()
    if args.limit:
        total = min(total, args.limit)
    results = {}
    index = 0
    env = dict(os.environ)
    t0 = time.time()
    while index < total:
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", str(index), str(total),
               "--dtype", args.dtype, "--samples", str(args.samples)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        current = None
        ended = False
        while True:
            if not sel.select(timeout=args.timeout):
                proc.kill()
                if current is not None:
                    results[current["index"]] = {"op": current["op"], "status": "timeout"}
                    index = current["index"] + 1
                break
            line = proc.stdout.readline()
            if not line:
                proc.wait()
                if current is not None:
                    results[current["index"]] = {"op": current["op"], "status": "crash",
                                                 "detail": f"exit {proc.returncode}"}
                    index = current["index"] + 1
                break
            ev = json.loads(line)
            if ev["event"] == "start":
                current = ev
            elif ev["event"] == "done":
                results[ev["index"]] = ev
                index = ev["index"] + 1
                current = None
                if args.verbose:
                    print(f"{ev['index']:4d} {ev['op']:40s} {ev['status']}", flush=True)
            elif ev["event"] == "end":
                ended = True
                proc.wait()
                break
        sel.close()
        if ended:
            break

    counted = {k: v for k, v in results.items() if v["status"] in ("match", "mismatch", "crash", "timeout")}
    matched = [v for v in counted.values() if v["status"] == "match"]
    samples = sum(v.get("samples", 0) for v in counted.values())
    samples_ok = sum(v.get("matched", 0) for v in counted.values())
    by_status = {}
    for v in results.values():
        by_status[v["status"]] = by_status.get(v["status"], 0) + 1
    comparable = [v for v in counted.values() if not v.get("compare_cpu_skipped")]
    comparable_ok = [v for v in comparable if v["status"] == "match"]
    summary = {
        "dtype": args.dtype,
        "op_db_entries": total,
        "entries_with_cpu_samples": len(counted),
        "entries_matching": len(matched),
        "share": round(len(matched) / max(1, len(counted)), 4),
        "entries_op_db_compares_to_cpu": len(comparable),
        "entries_op_db_compares_to_cpu_matching": len(comparable_ok),
        "share_of_compared": round(len(comparable_ok) / max(1, len(comparable)), 4),
        "samples_run": samples,
        "samples_matching": samples_ok,
        "by_status": by_status,
        "seconds": round(time.time() - t0, 1),
    }
    print(json.dumps(summary, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "ops": [results[k] for k in sorted(results)]}, f, indent=1)
    bad = sorted((v["op"], v["status"], v.get("compare_cpu_skipped", False), v.get("detail", ""))
                 for v in counted.values() if v["status"] != "match")
    if args.list_failures:
        for op, status, skipped, detail in bad:
            note = " (op_db skips test_compare_cpu)" if skipped else ""
            print(f"{status:9s} {op:30s}{note} {detail[:140]}")
    print(f"OpInfo share ({args.dtype}, forward): {len(matched)}/{len(counted)} = "
          f"{100.0 * len(matched) / max(1, len(counted)):.1f}% of the op_db entries with CPU samples "
          f"({total} entries in op_db); {len(comparable_ok)}/{len(comparable)} = "
          f"{100.0 * len(comparable_ok) / max(1, len(comparable)):.1f}% of those op_db compares to the CPU itself "
          f"(TestCommon.test_compare_cpu not skipped)")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dtype", default="float32")
    p.add_argument("--samples", type=int, default=8, help="sample inputs per op (default 8)")
    p.add_argument("--timeout", type=float, default=120, help="seconds without progress before a worker is killed")
    p.add_argument("--limit", type=int, default=0, help="only the first N entries of op_db")
    p.add_argument("--json", help="write per-op results here")
    p.add_argument("--list-failures", action="store_true")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("--worker", nargs=2, type=int, metavar=("START", "END"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], args.dtype, args.samples)
        return 0
    return drive(args)


if __name__ == "__main__":
    sys.exit(main())
