"""Sharing xdal tensors between processes is refused with a clear error,
at the sender where pickling is synchronous and in the receiver when a
Queue's feeder thread pickles; nothing hangs."""
import multiprocessing
import pickle

import pytest
import torch
import torch.multiprocessing as tmp

MESSAGE = "xdal tensors cannot be shared between processes"


def _receive(q, results):
    try:
        q.get(timeout=60)
        results.put("received")
    except RuntimeError as e:
        results.put(f"RuntimeError: {e}")


def test_pipe_send_refuses_at_the_sender():
    a, b = tmp.Pipe()
    with pytest.raises(RuntimeError, match=MESSAGE):
        a.send(torch.ones(3, device="xdal"))
    with pytest.raises(RuntimeError, match=MESSAGE):
        a.send(torch.ones(3, device="xdal").untyped_storage())
    a.send(torch.ones(3))  # CPU tensors still go through shared memory
    assert b.recv().tolist() == [1.0, 1.0, 1.0]


def test_queue_put_makes_the_receiver_raise_instead_of_waiting():
    ctx = tmp.get_context("spawn")
    q, results = ctx.Queue(), ctx.Queue()
    receiver = ctx.Process(target=_receive, args=(q, results))
    receiver.start()
    q.put(torch.ones(3, device="xdal"))
    got = results.get(timeout=120)
    receiver.join(timeout=60)
    assert got.startswith("RuntimeError") and MESSAGE in got, got


def test_ordinary_pickling_is_unchanged():
    t = torch.arange(4.0, device="xdal")
    assert torch.equal(pickle.loads(pickle.dumps(t)).cpu(), t.cpu())
