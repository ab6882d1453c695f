"""Allocator statistics, empty_cache, memory info, pinned memory."""
import gc

import torch
import torch_xdal

MB = 1 << 20


def test_memory_allocated_moves():
    gc.collect()  # what earlier tests left in reference cycles goes now, not during the test
    torch.accelerator.synchronize()
    base = torch.accelerator.memory_allocated()
    x = torch.empty(4 * MB, dtype=torch.uint8, device="xdal")
    assert torch.accelerator.memory_allocated() == base + 4 * MB
    assert torch.xdal.memory_allocated() == base + 4 * MB
    assert torch.accelerator.memory_reserved() >= torch.accelerator.memory_allocated()
    del x
    gc.collect()
    assert torch.accelerator.memory_allocated() == base


def test_peak_and_reset():
    torch.accelerator.reset_peak_memory_stats()
    base = torch.accelerator.memory_allocated()
    x = torch.empty(8 * MB, dtype=torch.uint8, device="xdal")
    del x
    assert torch.accelerator.max_memory_allocated() >= base + 8 * MB
    torch.accelerator.reset_peak_memory_stats()
    assert torch.accelerator.max_memory_allocated() == torch.accelerator.memory_allocated()


def test_max_memory_reserved_is_the_device_peak():
    # xdal 1.1's peak_reserved_bytes: the peak survives empty_cache and is
    # reset to the current reservation by reset_peak_memory_stats.
    torch.accelerator.synchronize()
    torch.accelerator.empty_cache()
    torch.accelerator.reset_peak_memory_stats()
    assert torch.xdal.max_memory_reserved() == torch.accelerator.memory_reserved()
    x = torch.empty(32 * MB, dtype=torch.uint8, device="xdal")
    high = torch.accelerator.memory_reserved()
    del x
    torch.accelerator.synchronize()
    torch.accelerator.empty_cache()
    assert torch.accelerator.memory_reserved() <= high - 32 * MB
    assert torch.xdal.max_memory_reserved() >= high
    assert torch.accelerator.memory_stats()["reserved_bytes.all.peak"] >= high
    assert torch_xdal._C.mem_stats(0)["peak_reserved_bytes"] >= high
    torch.accelerator.reset_peak_memory_stats()
    assert torch.xdal.max_memory_reserved() == torch.accelerator.memory_reserved()


def test_empty_cache_releases_freed_blocks():
    # The allocator keeps a freed block for reuse, reserved, until
    # empty_cache gives it back to xdal (and xdal's pool to the device).
    torch.accelerator.synchronize()
    x = torch.empty(16 * MB, dtype=torch.uint8, device="xdal")
    held = torch.accelerator.memory_reserved()
    del x
    torch.accelerator.synchronize()
    assert torch.accelerator.memory_reserved() >= held, "the freed block is kept"
    torch.accelerator.empty_cache()
    assert torch.accelerator.memory_reserved() <= held - 16 * MB


def test_a_freed_block_is_reused_on_its_stream_only():
    # As c10::cuda's caching allocator: the next tensor of the same size on
    # the stream that freed a block takes it, with no new xdal allocation;
    # another stream (which waits for none of the first one's work) does not.
    gc.collect()
    torch.accelerator.synchronize()
    x = torch.ones(1000, device="xdal")
    addr = x.data_ptr()
    base = torch.accelerator.memory_allocated()
    del x
    assert torch.accelerator.memory_allocated() == base - 4000, "a cached block is not allocated"
    reserved = torch.accelerator.memory_reserved()
    allocs = torch_xdal._C.mem_stats(0)["num_allocs"]
    y = torch.empty(1000, device="xdal")
    assert y.data_ptr() == addr
    assert torch_xdal._C.mem_stats(0)["num_allocs"] == allocs, "no call into xdal"
    assert torch.accelerator.memory_reserved() == reserved
    del y
    side = torch.Stream(device="xdal")
    with torch.xdal.stream(side):
        z = torch.empty(1000, device="xdal")
    assert z.data_ptr() != addr, "a block freed on one stream is not handed to another"
    del z
    torch.accelerator.synchronize()
    torch.accelerator.empty_cache()


def test_reused_blocks_keep_stream_order():
    # A result freed while the kernels reading it are still queued is
    # reused by the next result of its size: stream order keeps the values.
    a = torch.arange(4096, dtype=torch.float32, device="xdal")
    for _ in range(50):
        b = a + a
        c = b * 2
        del b
        d = a + 1  # b's block, right behind the mul that reads it
        assert torch.equal(c.cpu(), torch.arange(4096, dtype=torch.float32) * 4)
        assert torch.equal(d.cpu(), torch.arange(4096, dtype=torch.float32) + 1)


def test_memory_stats_dict_and_counts():
    stats = torch.accelerator.memory_stats()
    for key in ("allocated_bytes.all.current", "allocated_bytes.all.peak",
                "reserved_bytes.all.current", "allocation.all.current", "num_ooms"):
        assert key in stats
    before = stats["allocation.all.allocated"]
    xs = [torch.empty(10, device="xdal") for _ in range(5)]
    assert torch.accelerator.memory_stats()["allocation.all.allocated"] == before + 5
    del xs


def test_per_device_statistics():
    base0 = torch.accelerator.memory_allocated(0)
    base1 = torch.accelerator.memory_allocated(1)
    x = torch.empty(MB, dtype=torch.uint8, device="xdal:1")
    assert torch.accelerator.memory_allocated(1) == base1 + MB
    assert torch.accelerator.memory_allocated(0) == base0
    del x


def test_get_memory_info():
    free, total = torch.accelerator.get_memory_info()
    assert 0 < free <= total
    x = torch.empty(32 * MB, dtype=torch.uint8, device="xdal")
    free2, total2 = torch.accelerator.get_memory_info()
    assert total2 == total and free2 <= free - 32 * MB
    del x
    free3, _ = torch.xdal.mem_get_info()
    assert free3 <= total


def test_out_of_memory_is_torch_oom():
    total = torch.accelerator.get_memory_info()[1]
    try:
        torch.empty(total * 2, dtype=torch.uint8, device="xdal")
    except torch.OutOfMemoryError as e:
        assert "XDAL_ERROR_OUT_OF_MEMORY" in str(e)
    else:
        raise AssertionError("expected OutOfMemoryError")
    assert torch.accelerator.memory_stats()["num_ooms"] >= 1


def test_pinned_memory():
    x = torch.randn(1000)
    assert not x.is_pinned()
    p = x.pin_memory()
    assert p.is_pinned() and torch.equal(p, x)
    assert torch.xdal._C.is_pinned_ptr(p.data_ptr())
    e = torch.empty(10, pin_memory=True)
    assert e.is_pinned()
    d = p.to("xdal", non_blocking=True)
    back = torch.empty_like(p).pin_memory()
    back.copy_(d, non_blocking=True)
    torch.accelerator.synchronize()
    assert torch.equal(back, x)


def test_pinned_block_outlives_async_copy():
    for _ in range(20):
        p = torch.randn(1 << 16).pin_memory()
        d = p.to("xdal", non_blocking=True)
        ref = p.clone()
        del p  # the host block is released only after the copy has run
        assert torch.equal(d.cpu(), ref)
    torch.accelerator.empty_host_cache()


def test_device_from_pointer():
    x = torch.ones(4, device="xdal:1")
    kind, dev = torch.xdal._C.pointer_device(x.data_ptr())
    assert (kind, dev) == (2, 1)
