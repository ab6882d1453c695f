"""Registration, the device guard, torch.accelerator and the device module."""
import os
import subprocess
import sys

import pytest
import torch


def test_protect_mode_is_on_in_ci():
    # tools/test-torch.sh runs the suite with device memory inaccessible to
    # host code; say so loudly if it is not.
    if os.environ.get("XDAL_FAKE_PROTECT") != "1":
        pytest.skip("XDAL_FAKE_PROTECT is not 1")
    assert torch.xdal.backend_name() == "fake"


def test_backend_registered():
    assert torch._C._get_privateuse1_backend_name() == "xdal"
    assert torch.device("xdal").type == "xdal"
    assert torch.xdal.is_available()
    assert torch.xdal.device_count() == 2


def test_autoload_with_plain_import_torch():
    code = ("import torch; x = torch.ones(3, device='xdal'); "
            "assert x.is_xdal and x.device.type == 'xdal'; print(x.cpu().sum().item())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ), timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "3.0"


def test_autoload_can_be_disabled():
    code = "import torch; print(torch._C._get_privateuse1_backend_name())"
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "privateuseone"


def test_accelerator_basics():
    assert torch.accelerator.is_available()
    assert torch.accelerator.current_accelerator().type == "xdal"
    assert torch.accelerator.device_count() == 2
    prev = torch.accelerator.current_device_index()
    try:
        torch.accelerator.set_device_index(1)
        assert torch.accelerator.current_device_index() == 1
        assert torch.xdal.current_device() == 1
        assert torch.empty(2, device="xdal").device == torch.device("xdal", 1)
    finally:
        torch.accelerator.set_device_index(prev)
    torch.accelerator.synchronize()


def test_device_context_managers():
    assert torch.xdal.current_device() == 0
    with torch.xdal.device(1):
        assert torch.xdal.current_device() == 1
        assert torch.zeros(1, device="xdal").device.index == 1
    assert torch.xdal.current_device() == 0
    with torch.accelerator.device_index(1):
        assert torch.accelerator.current_device_index() == 1
    assert torch.accelerator.current_device_index() == 0


def test_device_guard_follows_tensor_device():
    x = torch.ones(4, device="xdal:1")
    y = x + x  # runs on device 1 while device 0 is current
    assert y.device == torch.device("xdal:1")
    assert torch.xdal.current_device() == 0
    assert y.cpu().tolist() == [2.0] * 4
    with torch.xdal.device(1):
        z = torch.relu(torch.full((4,), -1.0, device="xdal:0"))  # the host-kernel path, on device 0
        w = torch.ones(4, device="xdal:0") * 3  # a built-in, on device 0
        assert torch.xdal.current_device() == 1, "each operator puts the current device back"
    assert (z.device, w.device) == (torch.device("xdal:0"), torch.device("xdal:0"))
    assert z.cpu().tolist() == [0.0] * 4 and w.cpu().tolist() == [3.0] * 4


def test_invalid_device():
    # PyTorch's tests of a PrivateUse1 backend match this wording.
    with pytest.raises(RuntimeError, match="The device index is out of range"):
        torch.empty(1, device="xdal:7")
    with pytest.raises(RuntimeError, match="The device index is out of range"):
        torch.accelerator.set_device_index(torch.xdal.device_count())
    assert torch.ones(1, device="xdal").item() == 1.0  # still usable


def test_tensor_methods():
    x = torch.arange(6).reshape(2, 3)
    y = x.xdal()
    assert y.is_xdal and not x.is_xdal
    assert y.device == torch.device("xdal:0")
    assert x.xdal(1).device == torch.device("xdal:1")
    assert torch.equal(y.cpu(), x)
    m = torch.nn.Linear(3, 2).xdal()
    assert m.weight.is_xdal
    s = torch.UntypedStorage(8).xdal()
    assert s.device.type == "xdal"


def test_device_properties():
    p = torch.xdal.get_device_properties(0)
    # Simulated on the fake backend only: OpenCL's devices are a runtime's.
    assert bool(p["is_simulated"]) == (torch.xdal.backend_name() == "fake")
    assert p["total_memory"] > 0
    assert torch.xdal.get_device_name(1) == torch.xdal.get_device_properties(1)["name"]
    if torch.xdal.backend_name() == "fake":
        assert torch.xdal.get_device_name(1) == "xdal fake device 1"


def test_device_capability():
    cap = torch.accelerator.get_device_capability("xdal:0")
    assert torch.float32 in cap["supported_dtypes"]


def test_importing_torch_xdal_before_torch_works():
    """`import torch_xdal` first runs torch's backend autoloading while
    torch_xdal is half-initialized; that must not fail."""
    import subprocess
    import sys
    code = "import torch_xdal, torch; print(torch.ones(2, device='xdal').sum().item())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2.0"


_FORK_CHILD = """
import os, sys, torch, torch_xdal
torch.ones(1, device="xdal").sum().item()  # the parent uses xdal
pid = os.fork()
if pid == 0:
    code = 0
    try:
        torch.ones(1, device="xdal")
        code = 3
    except RuntimeError as e:
        code = 0 if "Cannot re-initialize xdal in forked subprocess" in str(e) else 4
    code = code or (0 if torch.xdal._is_in_bad_fork() else 5)
    code = code or (0 if torch.ones(2).sum().item() == 2 else 6)  # the CPU still works
    os._exit(code)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status), torch.ones(1, device="xdal").item(), torch.xdal._is_in_bad_fork())
"""


def test_forked_child_refuses_xdal_as_cuda_does():
    done = subprocess.run([sys.executable, "-c", _FORK_CHILD], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "1.0", "False"]


def test_forked_child_of_a_process_that_never_used_xdal_may_use_it():
    code = ("import os, torch, torch_xdal\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    os._exit(0 if torch.ones(2, device='xdal').sum().item() == 2 else 1)\n"
            "print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"
