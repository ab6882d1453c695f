"""The OpInfo share script runs (on a few entries); the full measurement is in docs/torch.md."""
import importlib.util
import os
import subprocess
import sys

import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "tools", "opinfo_share.py")


@pytest.mark.skipif(importlib.util.find_spec("expecttest") is None,
                    reason="PyTorch's test utilities need expecttest")
def test_opinfo_share_script_runs():
    out = subprocess.run([sys.executable, SCRIPT, "--limit", "12", "--samples", "2"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "OpInfo share (float32, forward)" in out.stdout
