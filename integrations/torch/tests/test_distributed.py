"""torch.distributed with torch_xdal installed: the "xdal" c10d backend
(Gloo's collectives on host copies for xdal tensors, Gloo itself for CPU
tensors) is the default for the xdal device, so init_process_group()
without a backend serves CPU programs as before and xdal tensors too.
Two processes on the loopback interface; every wait is bounded."""
import gc
import json
import os
import socket
import subprocess
import sys

import pytest
import torch
import torch.distributed as dist

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="no Gloo")

WORLD = 2
TIMEOUT_S = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_workers(scenario: str, tmp_path) -> list:
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), WORLD_SIZE=str(WORLD),
               GLOO_SOCKET_IFNAME="lo")
    procs = []
    for rank in range(WORLD):
        out = tmp_path / f"rank{rank}.json"
        procs.append((subprocess.Popen([sys.executable, __file__, scenario, str(rank), str(out)], env=dict(env, RANK=str(rank)),
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT), out))
    results = []
    try:
        for proc, out in procs:
            log, _ = proc.communicate(timeout=TIMEOUT_S)
            assert proc.returncode == 0, log.decode()[-3000:]
            results.append(json.loads(out.read_text()))
    finally:
        for proc, _ in procs:
            if proc.poll() is None:
                proc.kill()
    return results


def test_a_cpu_program_with_xdal_installed_still_gets_its_collectives(tmp_path):
    for r in run_workers("cpu_default", tmp_path):
        assert r["sum"] == [3.0, 3.0, 3.0]
        assert r["gathered"] == [[0.0, 1.0], [1.0, 2.0]]


def test_every_collective_on_xdal_tensors(tmp_path):
    for r in run_workers("collectives", tmp_path):
        failed = {k: v for k, v in r.items() if v is not True}
        assert not failed, failed


def test_ddp_over_two_processes_trains_as_one_process_on_the_joined_batch(tmp_path):
    results = run_workers("ddp", tmp_path)
    torch.manual_seed(0)
    model, batches = ddp_model_and_data()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in batches:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    expected = [p.detach().flatten().tolist() for p in model.parameters()]
    for r in results:
        for got, want in zip(r["params"], expected):
            torch.testing.assert_close(torch.tensor(got), torch.tensor(want), rtol=1e-5, atol=1e-6)


def ddp_model_and_data():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    g = torch.Generator().manual_seed(1)
    batches = [(torch.randn(8, 6, generator=g), torch.randn(8, 2, generator=g)) for _ in range(3)]
    return model, batches


# ---------------------------------------------------------------- workers

def worker_cpu_default(rank: int) -> dict:
    dist.init_process_group(timeout=__import__("datetime").timedelta(seconds=60))
    t = torch.ones(3) * (rank + 1)
    dist.all_reduce(t)
    out = [torch.empty(2) for _ in range(WORLD)]
    dist.all_gather(out, torch.tensor([rank, rank + 1.0]))
    return {"sum": t.tolist(), "gathered": [o.tolist() for o in out]}


def worker_collectives(rank: int) -> dict:
    x = torch.device("xdal")
    dist.init_process_group(timeout=__import__("datetime").timedelta(seconds=60))
    ok = {}

    def check(name, got, want):
        ok[name] = torch.equal(got.cpu(), want) or f"{got.cpu().tolist()} != {want.tolist()}"

    v = torch.arange(4.0) + 10 * rank
    t = v.to(x)
    dist.all_reduce(t)
    check("all_reduce", t, torch.arange(4.0) * 2 + 10)
    t = v.to(x)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    check("all_reduce max", t, torch.arange(4.0) + 10)
    t = v.to(x)
    dist.broadcast(t, src=1)
    check("broadcast", t, torch.arange(4.0) + 10)
    t = v.to(x)
    dist.reduce(t, dst=0)
    if rank == 0:
        check("reduce", t, torch.arange(4.0) * 2 + 10)
    outs = [torch.empty(4, device=x) for _ in range(WORLD)]
    dist.all_gather(outs, v.to(x))
    check("all_gather", torch.stack(outs), torch.stack([torch.arange(4.0), torch.arange(4.0) + 10]))
    flat = torch.empty(8, device=x)
    dist.all_gather_into_tensor(flat, v.to(x))
    check("all_gather_into_tensor", flat, torch.cat([torch.arange(4.0), torch.arange(4.0) + 10]))
    gathered = [torch.empty(4, device=x) for _ in range(WORLD)] if rank == 0 else None
    dist.gather(v.to(x), gathered, dst=0)
    if rank == 0:
        check("gather", torch.stack(gathered), torch.stack([torch.arange(4.0), torch.arange(4.0) + 10]))
    part = torch.empty(2, device=x)
    pieces = [torch.full((2,), float(i), device=x) for i in range(WORLD)] if rank == 0 else None
    dist.scatter(part, pieces, src=0)
    check("scatter", part, torch.full((2,), float(rank)))
    out = torch.empty(2, device=x)
    dist.reduce_scatter(out, [torch.full((2,), float(i + rank), device=x) for i in range(WORLD)])
    check("reduce_scatter", out, torch.full((2,), float(2 * rank + 1)))
    out = torch.empty(2, device=x)
    dist.reduce_scatter_tensor(out, (torch.arange(4.0) * (rank + 1)).to(x))
    check("reduce_scatter_tensor", out, (torch.arange(4.0) * 3)[2 * rank:2 * rank + 2])
    outs = [torch.empty(2, device=x) for _ in range(WORLD)]
    dist.all_to_all(outs, [torch.full((2,), float(10 * rank + i), device=x) for i in range(WORLD)])
    check("all_to_all", torch.stack(outs), torch.stack([torch.full((2,), float(10 * i + rank)) for i in range(WORLD)]))
    out = torch.empty(4, device=x)
    dist.all_to_all_single(out, v.to(x))
    check("all_to_all_single", out, torch.tensor([2.0 * rank, 2.0 * rank + 1, 10 + 2.0 * rank, 11 + 2.0 * rank]))
    if rank == 0:
        dist.send(torch.full((3,), 7.0, device=x), dst=1)
    else:
        r = torch.empty(3, device=x)
        dist.recv(r, src=0)
        check("send/recv", r, torch.full((3,), 7.0))
    work = dist.all_reduce(torch.ones(2, device=x), async_op=True)
    ok["async work"] = work.wait() is True
    dist.barrier()
    ok["barrier"] = True
    return ok


def worker_ddp(rank: int) -> dict:
    dist.init_process_group(timeout=__import__("datetime").timedelta(seconds=60))
    model, batches = ddp_model_and_data()
    ddp = torch.nn.parallel.DistributedDataParallel(model.to("xdal"))
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    half = 8 // WORLD
    for x, y in batches:
        opt.zero_grad()
        xs, ys = x[rank * half:(rank + 1) * half], y[rank * half:(rank + 1) * half]
        torch.nn.functional.mse_loss(ddp(xs.to("xdal")), ys.to("xdal")).backward()
        opt.step()
    return {"params": [p.detach().cpu().flatten().tolist() for p in ddp.module.parameters()]}


if __name__ == "__main__":
    scenario, rank, out_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    import torch_xdal  # noqa: F401

    result = {"cpu_default": worker_cpu_default, "collectives": worker_collectives, "ddp": worker_ddp}[scenario](rank)
    # DDP's module and reducer sit in reference cycles that hold the group:
    # collected now, the group (and Gloo's threads) goes at destroy, while
    # Python runs, not in the interpreter's final collection.
    gc.collect()
    dist.destroy_process_group()
    with open(out_path, "w") as f:
        json.dump(result, f)
