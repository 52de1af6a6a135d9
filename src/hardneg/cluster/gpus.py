"""One GPU per job on a multi-GPU workstation.

Snakemake counts GPUs as a resource (`resources: gpu=1`, profile `gpu=N`) but does not say which
device a job got, so without help every job would run on ``cuda:0``. Before CUDA starts, a GPU job
leases one slot with an exclusive ``flock`` on ``<lock dir>/gpu<g>-slot<k>.lock`` and exports
``CUDA_VISIBLE_DEVICES=g``; the lock lives as long as the process (the kernel drops it on exit,
kill -9 included), so the next job finds the slot free. Snakemake never runs more GPU jobs than
``gpu=N``, so with ``N = GPUs x HARDNEG_GPU_SLOTS`` a free slot always exists. Slots are tried
slot-major (every GPU's first slot before any second one) so jobs spread over the devices.

Nothing happens when ``CUDA_VISIBLE_DEVICES`` is already set (Slurm sets it per job, or the user
chose) or when the machine has no NVIDIA GPU.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

_HELD: list[int] = []  # lock file descriptors held for the life of the process


def gpu_count() -> int:
    """NVIDIA GPUs on this machine, without starting CUDA (``HARDNEG_GPU_COUNT`` overrides)."""
    forced = os.environ.get("HARDNEG_GPU_COUNT")
    if forced is not None:
        if not forced.isdigit():
            raise ValueError(f"HARDNEG_GPU_COUNT must be a number of GPUs, got {forced!r}")
        return int(forced)
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return 0
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def _slots_per_gpu() -> int:
    raw = os.environ.get("HARDNEG_GPU_SLOTS", "1")
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"HARDNEG_GPU_SLOTS must be a whole number >= 1 (jobs per GPU), got {raw!r}")
    return int(raw)


def lock_dir() -> Path:
    """Where the slot locks live (``HARDNEG_GPU_LOCK_DIR``, else a per-user folder in /tmp)."""
    path = Path(os.environ.get("HARDNEG_GPU_LOCK_DIR")
                or Path(tempfile.gettempdir()) / f"hardneg-gpu-locks-{os.getuid()}")
    path.mkdir(parents=True, exist_ok=True)
    return path


def lease_gpu() -> str | None:
    """Pin this process to one free GPU slot; returns the device index exported in
    ``CUDA_VISIBLE_DEVICES``, or None when nothing was (or needed to be) done. Call before CUDA
    is initialised (before the first CUDA call, ideally before importing torch)."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") is not None:
        return None
    n = gpu_count()
    if n == 0:
        return None
    slots = _slots_per_gpu()
    folder = lock_dir()
    for k in range(slots):
        for g in range(n):
            fd = os.open(folder / f"gpu{g}-slot{k}.lock", os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            _HELD.append(fd)
            os.environ["CUDA_VISIBLE_DEVICES"] = str(g)
            log.info("GPU lease: device %d (slot %d of %d per GPU, locks in %s)", g, k + 1, slots, folder)
            return str(g)
    log.warning("GPU lease: all %d x %d slots are held (profile gpu=N above GPUs x HARDNEG_GPU_SLOTS?); "
                "using the default device", n, slots)
    return None
