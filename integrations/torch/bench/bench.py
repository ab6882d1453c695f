"""PyTorch on xdal beside PyTorch on the CPU, in one process.

Each workload runs on the CPU and on xdal with the same weights and inputs
(or, for graph replay, eagerly and replayed on xdal), their batches
interleaved (CPU, xdal, CPU, xdal, ...) so that drift in the machine's
speed hits both alike. A batch is timed until its results are
there (xdal: a device synchronize). Prints, per workload, the median time
per iteration with min..max over the batches, the ratio of xdal's
throughput to the CPU's (or of latencies, for the inference latency) as the
median of the ratios round by round (a round runs one batch per side, one
after the other) with their min..max, the target and whether it is met,
and which path the operators took on xdal: native (a kernel of
torch_xdal's own, built-in or composite), the host-kernel fallback (the
CPU kernel enqueued as a host kernel over the device memory) or the
copying CPU fallback (operands copied to the host and back).

    python integrations/torch/bench/bench.py [--reps N] [--threads N] [--only NAME ...] [--json FILE]

One thread each by default (torch.set_num_threads(1), XDAL_FAKE_WORKERS=1).
tools/bench-torch.sh builds and installs what it needs and runs it, as
docs/performance.md describes. No timing is asserted: the exit status is non-zero only when a
workload fails.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import time
from typing import Callable, Dict, List, Tuple

WORKLOAD_NAMES = ["mlp_train", "conv_train", "mlp_infer", "mm", "add", "graph_replay", "mlp_train_compiled",
                  "mlp_loss_compiled", "conv_train_compiled"]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="PyTorch on xdal beside PyTorch on the CPU, in one process")
    parser.add_argument("--reps", type=int, default=7, help="interleaved batches per device (default 7)")
    parser.add_argument("--seconds", type=float, default=0.3, help="target time of one batch (default 0.3 s)")
    parser.add_argument("--threads", type=int, default=1,
                        help="CPU threads for PyTorch and worker threads of the fake backend (default 1)")
    parser.add_argument("--only", nargs="*", choices=WORKLOAD_NAMES, help="workloads to run")
    parser.add_argument("--json", help="also write the results as JSON here")
    return parser.parse_args()


# Before torch (whose backend autoloading imports torch_xdal): the fake
# backend reads its worker count when it starts.
ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:
    os.environ.setdefault("XDAL_FAKE_WORKERS", str(ARGS.threads))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch_xdal  # noqa: E402,F401  registers the xdal device
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

XDAL = torch.device("xdal")
CPU = torch.device("cpu")


def sync(device: torch.device) -> None:
    if device.type == "xdal":
        torch.xdal.synchronize()


Step = Callable[[], None]


class Side:
    """One side of a comparison: `make()` returns its step function."""

    def __init__(self, label: str, device: torch.device, make: Callable[[], Step]) -> None:
        self.label, self.device, self.make = label, device, make


def cpu_and_xdal(make: Callable[[torch.device], Step]) -> List[Side]:
    return [Side("cpu", CPU, lambda: make(CPU)), Side("xdal", XDAL, lambda: make(XDAL))]


class Workload:
    """One workload: a reference side and the side measured against it."""

    def __init__(self, name: str, what: str, sides: List[Side], latency: bool, target: float) -> None:
        self.name, self.what, self.sides, self.latency, self.target = name, what, sides, latency, target


def mlp(batch: int) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


def mlp_train(device: torch.device, compiled: bool = False, with_loss: bool = False) -> Callable[[], None]:
    """The MLP's SGD step; `compiled`: the model torch.compile'd, and with
    `with_loss` its loss too (one compiled function, model and loss)."""
    model = mlp(64).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(64, 784, generator=gen).to(device)
    y = torch.randint(0, 10, (64,), generator=gen).to(device)
    loss_fn = nn.CrossEntropyLoss()
    if compiled and with_loss:
        loss_of = torch.compile(lambda a, b: loss_fn(model(a), b))
    else:
        forward = torch.compile(model) if compiled else model

        def loss_of(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return loss_fn(forward(a), b)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        loss_of(x, y).backward()
        opt.step()

    return step


def mlp_train_loss_compiled(device: torch.device, compiled: bool = False) -> Callable[[], None]:
    return mlp_train(device, compiled, with_loss=True)


def conv_train(device: torch.device, compiled: bool = False) -> Callable[[], None]:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 16 * 16, 10),
    ).to(device)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(32, 3, 32, 32, generator=gen).to(device)
    y = torch.randint(0, 10, (32,), generator=gen).to(device)
    loss_fn = nn.CrossEntropyLoss()
    forward = torch.compile(model) if compiled else model

    def step() -> None:
        model.zero_grad(set_to_none=True)
        loss_fn(forward(x), y).backward()

    return step


def eager_cpu_and_compiled(make: Callable[..., Step]) -> List[Side]:
    """xdal eager (the reference), CPU eager and CPU compiled (shown: what
    torch.compile gives on the CPU itself, in the same run), xdal compiled
    (measured)."""
    return [Side("xdal eager", XDAL, lambda: make(XDAL)), Side("cpu eager", CPU, lambda: make(CPU)),
            Side("cpu compiled", CPU, lambda: make(CPU, compiled=True)),
            Side("xdal compiled", XDAL, lambda: make(XDAL, compiled=True))]


def mlp_infer(device: torch.device) -> Callable[[], None]:
    model = mlp(1).to(device).eval()
    x = torch.randn(1, 784, generator=torch.Generator().manual_seed(1)).to(device)

    def step() -> None:
        with torch.no_grad():
            model(x)
        sync(device)  # a latency: each inference to its result

    return step


def mm(device: torch.device) -> Callable[[], None]:
    gen = torch.Generator().manual_seed(1)
    a = torch.randn(512, 512, generator=gen).to(device)
    b = torch.randn(512, 512, generator=gen).to(device)
    return lambda: torch.mm(a, b)


def add(device: torch.device) -> Callable[[], None]:
    gen = torch.Generator().manual_seed(1)
    a = torch.randn(1000, generator=gen).to(device)
    b = torch.randn(1000, generator=gen).to(device)
    return lambda: torch.add(a, b)


def deep_mlp() -> Tuple[nn.Module, torch.Tensor]:
    """30 operators: 15 times Linear(128, 128) and ReLU, batch 1, on xdal."""
    torch.manual_seed(0)
    layers: List[nn.Module] = []
    for _ in range(15):
        layers += [nn.Linear(128, 128), nn.ReLU()]
    x = torch.randn(1, 128, generator=torch.Generator().manual_seed(1))
    return nn.Sequential(*layers).to(XDAL).eval(), x.to(XDAL)


def deep_mlp_eager() -> Step:
    model, x = deep_mlp()

    def step() -> None:
        with torch.no_grad():
            model(x)
        sync(XDAL)

    return step


def deep_mlp_replay() -> Step:
    model, x = deep_mlp()
    graph = torch.xdal.XdalGraph()
    with torch.no_grad():
        model(x)  # warm-up: lazily made kernels and cached answers
        with torch.xdal.graph(graph):
            model(x)

    def step() -> None:
        graph.replay()
        sync(XDAL)

    step.graph = graph  # type: ignore[attr-defined]  kept alive with the step
    return step


WORKLOADS = [
    Workload("mlp_train", "MLP 784-512-512-10, batch 64, SGD training step", cpu_and_xdal(mlp_train), False, 0.8),
    Workload("conv_train", "conv 3-16-32, relu, maxpool, linear; batch 32, forward+backward",
             cpu_and_xdal(conv_train), False, 0.8),
    Workload("mlp_infer", "the MLP's batch-1 inference, latency", cpu_and_xdal(mlp_infer), True, 1.25),
    Workload("mm", "mm 512x512 f32", cpu_and_xdal(mm), False, 0.8),
    Workload("add", "add of 1e3 f32", cpu_and_xdal(add), False, 0.8),
    Workload("graph_replay", "a 30-operator MLP forward (Linear 128, ReLU) at batch 1 replayed from a graph, "
             "beside the same forward run eagerly, each to its result",
             [Side("xdal eager", XDAL, deep_mlp_eager), Side("xdal graph", XDAL, deep_mlp_replay)], False, 2.0),
    Workload("mlp_train_compiled", "the MLP's training step with the model torch.compile'd (Inductor)",
             eager_cpu_and_compiled(mlp_train), False, 1.0),
    Workload("mlp_loss_compiled", "the MLP's training step with model and loss torch.compile'd together",
             eager_cpu_and_compiled(mlp_train_loss_compiled), False, 1.0),
    Workload("conv_train_compiled", "the conv net's step with the model torch.compile'd (Inductor)",
             eager_cpu_and_compiled(conv_train), False, 1.0),
]
assert [w.name for w in WORKLOADS] == WORKLOAD_NAMES, "WORKLOAD_NAMES lists the workloads, for --only"


def timed_batch(step: Callable[[], None], device: torch.device, n: int) -> float:
    sync(device)
    start = time.perf_counter()
    for _ in range(n):
        step()
    sync(device)
    return (time.perf_counter() - start) / n


def calibrate(step: Callable[[], None], device: torch.device, seconds: float) -> int:
    """Iterations for a batch of about `seconds` (after a warm-up)."""
    step()
    sync(device)
    n = 1
    while True:
        took = timed_batch(step, device, n) * n
        if took >= seconds / 2 or n >= 1 << 20:
            return max(1, int(n * seconds / max(took, 1e-9)))
        n *= 4


class OpCounter(TorchDispatchMode):
    """Counts the ATen operators dispatched with an xdal tensor among their arguments."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Dict[str, int] = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        kwargs = kwargs or {}
        flat = torch.utils._pytree.tree_leaves((args, kwargs))
        if any(isinstance(t, torch.Tensor) and t.device.type == "xdal" for t in flat):
            self.counts[str(func.overloadpacket.__name__ if hasattr(func, "overloadpacket") else func)] += 1
        return func(*args, **kwargs)


def paths(step: Callable[[], None]) -> Dict[str, object]:
    """Which path one iteration's operators took on xdal."""
    torch_xdal._C.reset_fallback_counts()
    counter = OpCounter()
    with counter:
        step()
    torch.xdal.synchronize()
    fallback = {k: v for k, v in torch_xdal._C.fallback_counts().items() if v}
    host = {k: v for k, v in torch_xdal._C.host_fallback_counts().items() if v}
    total = sum(counter.counts.values())
    fell_back = sum(fallback.values())
    hosted = sum(host.values())
    return {
        "operators": total,
        "native": max(total - fell_back, 0),
        "host_kernel_fallback": hosted,
        "copying_fallback": fell_back - hosted,
        "fallback_operators": dict(sorted(fallback.items(), key=lambda kv: -kv[1])),
        "host_kernel_operators": dict(sorted(host.items(), key=lambda kv: -kv[1])),
    }


def stats(values: List[float]) -> Dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def run(workload: Workload, reps: int, seconds: float) -> Dict[str, object]:
    sides = workload.sides
    steps = [side.make() for side in sides]
    n = [calibrate(step, side.device, seconds) for step, side in zip(steps, sides)]
    times: List[List[float]] = [[] for _ in sides]
    for _ in range(reps):
        for i, side in enumerate(sides):
            times[i].append(timed_batch(steps[i], side.device, n[i]))
    reference, measured = stats(times[0]), stats(times[-1])
    # Throughput ratio (measured / reference), or for a latency the
    # measured side's time over the reference's: batch by batch, each
    # measured batch against the reference batch of the same round, and the
    # median of those. Each pair saw the machine alike; the ratio of the two
    # medians moved with whichever side had the slow batches.
    pairs = [(m / r if workload.latency else r / m) for r, m in zip(times[0], times[-1])]
    ratio = statistics.median(pairs)
    met = ratio <= workload.target if workload.latency else ratio >= workload.target
    # The operators of the first side on xdal (for a graph, its eager twin).
    on_xdal = next(i for i, side in enumerate(sides) if side.device == XDAL)
    return {
        "workload": workload.name, "what": workload.what, "latency": workload.latency,
        "sides": [side.label for side in sides],
        "reference_s": reference, "measured_s": measured,
        "shown_s": {side.label: stats(t) for side, t in zip(sides[1:-1], times[1:-1])},
        # PyTorch's own compiled/eager throughput on the CPU, round by round.
        "cpu_compiled_ratio": (statistics.median(e / c for e, c in zip(times[1], times[2]))
                               if [side.label for side in sides[1:3]] == ["cpu eager", "cpu compiled"] else None),
        "iterations_per_batch": {side.label: k for side, k in zip(sides, n)},
        "ratio": ratio, "ratio_min": min(pairs), "ratio_max": max(pairs),
        "target": workload.target, "met": met, "paths": paths(steps[on_xdal]),
    }


def show(r: Dict[str, object]) -> None:
    def span(s: Dict[str, float]) -> str:
        return f"{s['median'] * 1e6:10.1f} us ({s['min'] * 1e6:.1f}..{s['max'] * 1e6:.1f})"

    reference, measured = r["sides"][0], r["sides"][-1]
    kind = f"{measured}/{reference} {'latency' if r['latency'] else 'throughput'}"
    goal = f"<= {r['target']}" if r["latency"] else f">= {r['target']}"
    print(f"{r['workload']:<11} {r['what']}")
    shown = "".join(f"   {label} {span(s)}" for label, s in r["shown_s"].items())
    print(f"    {reference} {span(r['reference_s'])}{shown}   {measured} {span(r['measured_s'])}")
    print(f"    {kind} {r['ratio']:.2f}x, the median of the rounds' own ({r['ratio_min']:.2f}x..{r['ratio_max']:.2f}x) "
          f"(target {goal}: {'met' if r['met'] else 'NOT met'})")
    if r["cpu_compiled_ratio"] is not None:
        print(f"    cpu compiled/cpu eager throughput {r['cpu_compiled_ratio']:.2f}x (PyTorch's own, shown)")
    p = r["paths"]
    hosted = p["host_kernel_operators"]
    copied = {k: v - hosted.get(k, 0) for k, v in p["fallback_operators"].items() if v > hosted.get(k, 0)}
    top = ", ".join(f"{k} x{v}" for k, v in list(copied.items())[:6])
    print(f"    operators per iteration on xdal: {p['operators']} ({p['native']} native, "
          f"{p['host_kernel_fallback']} host-kernel fallback, "
          f"{p['copying_fallback']} copying fallback{': ' + top if top else ''})")


def main(args: argparse.Namespace) -> int:
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU thread(s); xdal backend "
          f"{torch_xdal._C.backend_name()}, XDAL_FAKE_WORKERS={os.environ.get('XDAL_FAKE_WORKERS', '(default)')}; "
          f"median (min..max) of {args.reps} interleaved batches of ~{args.seconds} s")
    results = []
    for w in WORKLOADS:
        if args.only and w.name not in args.only:
            continue
        r = run(w, args.reps, args.seconds)
        show(r)
        results.append(r)
    met = sum(1 for r in results if r["met"])
    print(f"targets met: {met} of {len(results)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGS))
