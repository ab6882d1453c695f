"""Streams, events, cross-stream waits, elapsed time (device guard on xdal streams and events)."""
import threading

import torch


def test_default_and_current_stream():
    s = torch.accelerator.current_stream()
    assert s.device.type == "xdal" and s.stream_id == 0
    assert torch.xdal.default_stream(1).device_index == 1
    assert torch.accelerator.current_stream(1).device_index == 1


def test_new_streams_come_from_per_device_pools():
    a = torch.Stream(device="xdal")
    b = torch.Stream(device="xdal")
    assert a.stream_id != 0 and b.stream_id != 0 and a.stream_id != b.stream_id
    hi = torch.Stream(device="xdal", priority=-2)
    assert hi.stream_id not in (a.stream_id, b.stream_id)
    c = torch.Stream(device="xdal:1")
    assert c.device_index == 1
    ids = {torch.Stream(device="xdal").stream_id for _ in range(64)}
    assert len(ids) == 32  # round robin over a pool of 32, as c10::cuda


def test_stream_context_and_set_stream():
    s = torch.Stream(device="xdal")
    with torch.xdal.stream(s):
        assert torch.accelerator.current_stream() == s
        x = torch.ones(1000, device="xdal") * 3
    assert torch.accelerator.current_stream().stream_id == 0
    s.synchronize()
    assert x.cpu().sum().item() == 3000
    prev = torch.accelerator.current_stream()
    torch.accelerator.set_stream(s)
    assert torch.accelerator.current_stream() == s
    torch.accelerator.set_stream(prev)
    with s:  # torch.Stream is a context manager too
        assert torch.accelerator.current_stream() == s


def test_current_stream_is_per_thread():
    s = torch.Stream(device="xdal")
    torch.accelerator.set_stream(s)
    seen = []
    t = threading.Thread(target=lambda: seen.append(torch.accelerator.current_stream().stream_id))
    t.start()
    t.join()
    torch.accelerator.set_stream(torch.xdal.default_stream())
    assert seen == [0]


def test_stream_query_and_synchronize():
    s = torch.Stream(device="xdal")
    with torch.xdal.stream(s):
        a = torch.randn(256, 256, device="xdal")
        for _ in range(5):
            a = a @ a / 256
    s.synchronize()
    assert s.query()


def test_events_and_cross_stream_wait():
    s1, s2 = torch.Stream(device="xdal"), torch.Stream(device="xdal")
    with torch.xdal.stream(s1):
        x = torch.full((1 << 16,), 2.0, device="xdal")
        for _ in range(10):
            x = x * 1.0 + 0.0
        e = torch.Event(device="xdal")
        e.record()
    s2.wait_event(e)
    with torch.xdal.stream(s2):
        x.record_stream(s2)
        y = x + 1
    s2.synchronize()
    assert e.query()
    assert y.cpu().min().item() == 3.0


def test_wait_stream():
    s1, s2 = torch.Stream(device="xdal"), torch.Stream(device="xdal")
    with torch.xdal.stream(s1):
        x = torch.ones(1 << 15, device="xdal") * 5
    s2.wait_stream(s1)
    with torch.xdal.stream(s2):
        y = x * 2
    s2.synchronize()
    assert y.cpu()[0].item() == 10


def test_event_elapsed_time():
    start = torch.Event(device="xdal", enable_timing=True)
    end = torch.Event(device="xdal", enable_timing=True)
    start.record()
    a = torch.randn(128, 128, device="xdal")
    for _ in range(3):
        a = a @ a
    end.record()
    end.synchronize()
    ms = start.elapsed_time(end)
    assert ms >= 0.0
    assert start.query() and end.query()


def test_event_without_timing_refuses_elapsed_time():
    a, b = torch.Event(device="xdal"), torch.Event(device="xdal")
    a.record()
    b.record()
    b.synchronize()
    try:
        a.elapsed_time(b)
    except (RuntimeError, ValueError) as e:
        assert "timing" in str(e) or "xdal" in str(e)
    else:
        raise AssertionError("elapsed_time on events without timing must fail")


def test_event_on_second_device_and_synchronize():
    s = torch.Stream(device="xdal:1")
    e = torch.Event(device="xdal:1", enable_timing=True)
    with torch.xdal.stream(s):
        x = torch.ones(10, device="xdal:1") + 1
        e.record(s)
    e.synchronize()
    assert x.cpu().sum().item() == 20
    torch.accelerator.synchronize(1)


def test_default_stream_of_other_device_from_guard():
    # Device 1's default stream, named by its own xdal handle, is waited for
    # and queried from a thread whose current device is 0.
    x = torch.zeros(1 << 16, device="xdal:1")
    for _ in range(20):
        x.add_(1)  # device 1's default stream
    with torch.xdal.device(0):
        s = torch.xdal.default_stream(1)
        # A wait enqueued on device 0's default stream for device 1's.
        torch.xdal.default_stream(0).wait_stream(s)
        s.synchronize()
        assert s.query()
        assert torch.accelerator.current_device_index() == 0
    assert torch.equal(x.cpu(), torch.full((1 << 16,), 20.0))


def test_record_stream_keeps_memory_alive():
    s = torch.Stream(device="xdal")
    x = torch.arange(1 << 16, dtype=torch.float32, device="xdal")
    # x is made on the default stream: s waits for it before reading it, as
    # on CUDA (without, the product may read x before arange has run).
    s.wait_stream(torch.xdal.current_stream())
    with torch.xdal.stream(s):
        y = x * 2
    x.record_stream(s)
    del x  # freed on the default stream only after s has passed this point
    z = torch.zeros(1 << 16, device="xdal")
    s.synchronize()
    assert y.cpu()[-1].item() == 2 * ((1 << 16) - 1)
    assert z.cpu().sum().item() == 0
