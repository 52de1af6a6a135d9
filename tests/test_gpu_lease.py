"""One GPU per job on a multi-GPU machine (hardneg.cluster.gpus): slots leased with flock,
spread over devices, released when the process ends (kill -9 included), untouched under Slurm."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from hardneg.cluster import gpus


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """A pretend machine with 2 GPUs and the lock folder in tmp_path; leases released after."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("HARDNEG_GPU_COUNT", "2")
    monkeypatch.setenv("HARDNEG_GPU_LOCK_DIR", str(tmp_path))
    monkeypatch.delenv("HARDNEG_GPU_SLOTS", raising=False)
    yield tmp_path
    while gpus._HELD:
        os.close(gpus._HELD.pop())


def _lease(monkeypatch) -> str | None:
    """One job's lease: a fresh environment (each Snakemake job is its own process)."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    got = gpus.lease_gpu()
    assert os.environ.get("CUDA_VISIBLE_DEVICES") == got
    return got


def test_jobs_get_different_gpus_and_a_freed_slot_is_reused(machine, monkeypatch, caplog):
    assert _lease(monkeypatch) == "0"
    assert _lease(monkeypatch) == "1"
    assert _lease(monkeypatch) is None  # more GPU jobs than gpu=N allows: default device, warned
    assert "all 2 x 1 slots are held" in caplog.text
    os.close(gpus._HELD.pop(0))  # the job on GPU 0 ends
    assert _lease(monkeypatch) == "0"


def test_slots_fill_every_gpu_before_doubling_up(machine, monkeypatch):
    monkeypatch.setenv("HARDNEG_GPU_SLOTS", "2")
    assert [_lease(monkeypatch) for _ in range(5)] == ["0", "1", "0", "1", None]


def test_slurm_or_user_choice_and_cpu_machines_are_left_alone(machine, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")  # Slurm sets it per job
    assert gpus.lease_gpu() is None and os.environ["CUDA_VISIBLE_DEVICES"] == "3"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setenv("HARDNEG_GPU_COUNT", "0")
    assert gpus.lease_gpu() is None and "CUDA_VISIBLE_DEVICES" not in os.environ
    assert not gpus._HELD


def test_bad_settings_are_named(machine, monkeypatch):
    monkeypatch.setenv("HARDNEG_GPU_SLOTS", "0")
    with pytest.raises(ValueError, match="HARDNEG_GPU_SLOTS must be a whole number >= 1"):
        gpus.lease_gpu()
    monkeypatch.setenv("HARDNEG_GPU_COUNT", "two")
    with pytest.raises(ValueError, match="HARDNEG_GPU_COUNT must be a number"):
        gpus.lease_gpu()


def test_a_killed_job_releases_its_gpu(machine, monkeypatch):
    env = dict(os.environ)
    holder = subprocess.Popen(
        [sys.executable, "-c", ("import sys, time; from hardneg.cluster.gpus import lease_gpu; "
                                "print(lease_gpu(), flush=True); time.sleep(60)")],
        env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "0"
        assert _lease(monkeypatch) == "1"  # GPU 0 is taken by the other process
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        assert _lease(monkeypatch) == "0"  # the kernel dropped the dead job's lock
    finally:
        holder.kill()
        holder.wait(timeout=30)
