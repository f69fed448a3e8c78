"""bench/gpu_check.sh and bench/gpu_check.py skip cleanly where there is no GPU."""

import os
import stat
import subprocess

import pytest

from tests.cli import ROOT, run_module


def test_shell_script_skips_when_nvidia_smi_finds_no_gpu(tmp_path):
    # A failing nvidia-smi first on PATH stands for a machine without a GPU
    # (also on a machine that has one), so the script must stop before setting
    # up the venv or starting Python.
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    env = dict(os.environ, PATH=f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run(
        ["bash", os.path.join(ROOT, "bench", "gpu_check.sh")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines() == ["no GPU: skipped (nvidia-smi finds no NVIDIA GPU on this machine)"]
    assert not (tmp_path / "gpu_check.json").exists()


@pytest.mark.slow
def test_python_check_skips_when_tensorflow_sees_no_gpu(tmp_path):
    proc = run_module("bench.gpu_check", CUDA_VISIBLE_DEVICES="-1", OUT=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "no GPU: skipped (TensorFlow sees no GPU on this machine)" in proc.stdout.splitlines()
    assert list(tmp_path.iterdir()) == []  # nothing written when skipped
