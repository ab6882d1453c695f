"""Profiling xdal work. The legacy profiler (torch.autograd.profiler.profile
with use_device="xdal") times each operator's device work with xdal events
on its stream: non-negative times, device time where work ran."""
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
