"""Profiling xdal work. torch.profiler with ProfilerActivity.PrivateUse1
(the Kineto plugin on an xdal tracer): device work per operator, the xdal
calls that enqueued it, arrows between them in the Chrome trace. The
legacy profiler (use_device="xdal"): xdal events on the stream,
non-negative times, device time where work ran."""
import json

import torch

from conftest import make

XDAL = torch.device("xdal")


def test_the_legacy_profiler_gives_device_times_of_xdal_events():
    a, b = make((128, 128), torch.float32).to(XDAL), make((128, 128), torch.float32, seed=1).to(XDAL)
    torch.mm(a, b)
    torch.xdal.synchronize()
    with torch.autograd.profiler.profile(use_device="xdal") as prof:
        for _ in range(3):
            torch.mm(a, b)
    events = prof.key_averages()
    for e in events:
        assert e.cpu_time_total >= 0 and e.device_time_total >= 0, (e.key, e.cpu_time_total, e.device_time_total)
    mm = next(e for e in events if e.key == "aten::mm")
    assert mm.count == 3 and mm.device_time_total > 0


def test_profiled_operators_are_counted_and_compute_as_unprofiled():
    x = torch.ones(64, device=XDAL)
    with torch.autograd.profiler.profile(use_device="xdal") as prof:
        for _ in range(50):
            x.add_(1)
    assert torch.equal(x.cpu(), torch.full((64,), 51.0))
    assert sum(e.count for e in prof.key_averages() if e.key == "aten::add_") == 50


def profile_mm_and_copy(tmp_path):
    from torch.profiler import ProfilerActivity, profile

    a, b = make((96, 96), torch.float32).to(XDAL), make((96, 96), torch.float32, seed=1).to(XDAL)
    host = make((1000,), torch.float32)
    torch.mm(a, b)
    torch.xdal.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        for _ in range(2):
            torch.mm(a, b)
        host.to(XDAL)
        torch.empty(1000, device=XDAL).zero_()  # a set
        torch.xdal.synchronize()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    return prof, json.loads(path.read_text())["traceEvents"]


def test_torch_profiler_shows_device_time_per_operator(tmp_path):
    prof, _ = profile_mm_and_copy(tmp_path)
    averages = {e.key: e for e in prof.key_averages()}
    assert averages["aten::mm"].count == 2 and averages["aten::mm"].self_device_time_total > 0
    assert averages["aten::_copy_from"].device_time_total > 0  # the host-to-device copy
    assert averages["aten::zero_"].device_time_total > 0  # the set
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.PrivateUse1]
    assert {e.name for e in kernels} >= {"matmul_f32"}
    assert all(e.device_time_total >= 0 for e in prof.events())


def test_the_chrome_trace_links_operators_calls_and_device_work(tmp_path):
    _, events = profile_mm_and_copy(tmp_path)
    ops = {e["args"]["External id"]: e for e in events if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})}
    kernels = [e for e in events if e.get("cat") == "kernel" and e["name"] == "matmul_f32"]
    copies = [e for e in events if e.get("cat") == "gpu_memcpy"]
    sets = [e for e in events if e.get("cat") == "gpu_memset"]
    assert len(kernels) == 2 and len(copies) >= 1 and len(sets) == 1
    assert ops[sets[0]["args"]["External id"]]["name"] == "aten::zero_"
    for k in kernels:
        op = ops[k["args"]["External id"]]
        assert op["name"] == "aten::mm"
        assert k["ts"] >= op["ts"]  # the work follows the call that enqueued it
    starts = {e["id"] for e in events if e.get("cat") == "ac2g" and e["ph"] == "s"}
    ends = {e["id"] for e in events if e.get("cat") == "ac2g" and e["ph"] == "f"}
    assert ends and ends <= starts  # every arrow into device work starts at an xdal call
    calls = [e for e in events if e.get("cat") == "privateuse1_runtime"]
    assert {"xdal_launch_kernel", "xdal_memcpy_async"} <= {c["name"] for c in calls}
