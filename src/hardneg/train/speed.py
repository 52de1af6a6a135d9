"""Device speed and memory for the training loop: tokenization ahead of the step (``Prefetch``),
``train.compile`` (``compile_backbone``) and the out-of-memory error that names the fixes."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from hardneg.train.cached_gradient import refusal
from hardneg.train.settings import TrainSettings

log = logging.getLogger(__name__)

# torch.compile mode for train.compile. "auto": "reduce-overhead" (CUDA graphs) on CUDA, the
# default elsewhere. Measured (H100, bert-base, batch 64, docs/benchmarks.md): simcse 1,540 ->
# 3,480 sent/s, simcse_san 805 -> 2,546, logged losses equal to plain compile's to ~1e-3.
COMPILE_MODE: str | None = "auto"
PREFETCH_DEPTH = 4  # steps tokenized ahead by the worker thread; 0: in the loop (bench compares)


class TrainingOutOfMemory(RuntimeError):
    """The device ran out of memory: names batch_size and the measured peak."""


def out_of_memory(exc: BaseException, s: TrainSettings, device: torch.device) -> TrainingOutOfMemory:
    """The error for an out-of-memory step (instead of a CUDA traceback)."""
    if device.type == "cuda":
        peak = torch.cuda.max_memory_allocated(device) / 2**30
        total = torch.cuda.get_device_properties(device).total_memory / 2**30
        where = f"{device} ({torch.cuda.get_device_name(device)}): peak {peak:.2f} GiB allocated of {total:.2f} GiB"
    else:
        where = f"{device}"
    cache = (f"use a smaller mini_batch_size (now {s.mini_batch_size})" if s.mini_batch_size is not None
             else "set mini_batch_size (cached gradients: same batch, less memory)" if refusal(s) is None else None)
    fixes = "lower batch_size or max_length, " + (f"{cache}, " if cache else "") + "or give the job a whole GPU"
    return TrainingOutOfMemory(
        f"out of memory with train setting batch_size={s.batch_size} (max_length={s.max_length}) on {where}; "
        f"{fixes} ({str(exc).splitlines()[0][:200]})"
    )


def compile_backbone(backbone: nn.Module, device: torch.device) -> bool:
    """``train.compile``: torch.compile the backbone in place (state_dict keys unchanged; CUDA
    graphs on CUDA, see ``COMPILE_MODE``) when a compiler works on this platform; else warn and
    train eagerly."""
    try:
        probe = torch.compile(lambda x: torch.nn.functional.gelu(x) * 2 + 1, dynamic=False)
        probe(torch.randn(8, device=device))
    except Exception as exc:  # noqa: BLE001  # no C compiler / Triton: inductor fails at the first call
        log.warning("train.compile: torch.compile does not work here (%s: %s); training without it",
                    type(exc).__name__, str(exc).splitlines()[0][:200] if str(exc) else "")
        return False
    mode = COMPILE_MODE
    if mode == "auto":  # CUDA graphs on CUDA (static shapes make them possible)
        mode = "reduce-overhead" if device.type == "cuda" else None
    backbone.compile(dynamic=False, mode=mode)
    return True


class Inline:
    """``Prefetch``'s interface, computed in the loop."""

    def __init__(self, fn: Callable[[int], Any], start: int) -> None:
        self.fn, self.at = fn, start

    def next(self) -> Any:
        self.at += 1
        return self.fn(self.at - 1)

    def close(self) -> None:
        pass


class Prefetch:
    """``fn(step)`` for steps ``start..stop-1``, computed ``depth`` steps ahead in a daemon thread
    (results in step order; an exception surfaces at the step that raised it)."""

    def __init__(self, fn: Callable[[int], Any], start: int, stop: int, depth: int = 4) -> None:
        self._q: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._work, args=(fn, start, stop), name="train-tokenize",
                                        daemon=True)
        self._thread.start()

    def _work(self, fn: Callable[[int], Any], start: int, stop: int) -> None:
        for at in range(start, stop):
            if self._stop.is_set():
                return
            try:
                item = (True, fn(at))
            except BaseException as exc:  # noqa: BLE001  # handed to the consumer
                item = (False, exc)
            self._q.put(item)  # blocks while `depth` steps wait; close() drains
            if not item[0]:
                return

    def next(self) -> Any:
        ok, value = self._q.get()
        if not ok:
            raise value
        return value

    def close(self) -> None:
        self._stop.set()
        while self._thread.is_alive():
            try:
                self._q.get(timeout=0.05)
            except queue.Empty:
                pass


def upcoming_steps(fn: Callable[[int], Any], start: int, stop: int) -> Prefetch | Inline:
    """``fn(step)`` for the steps ahead: in a worker thread (``PREFETCH_DEPTH`` deep), or in the
    loop when the depth is 0."""
    return Prefetch(fn, start, stop, PREFETCH_DEPTH) if PREFETCH_DEPTH > 0 else Inline(fn, start)
