"""Ordered CPU kernels for training, so one seed gives the same weights byte for byte."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import torch

T = TypeVar("T")


def ordered_cpu_kernels(fn: Callable[..., T]) -> Callable[..., T]:
    """Run ``fn`` with torch's deterministic kernels when there is no GPU, restoring the setting after.

    On CPU the backward of advanced indexing (``p[idx]``: HNCSE-HNM's mixed negatives) adds with
    atomics across threads, so two runs with one seed differed in their last bits; the ordered
    variants make CPU training byte-reproducible. GPUs keep their kernels (docs/training.md).
    """

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> T:
        before = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
        if not torch.cuda.is_available():
            torch.use_deterministic_algorithms(True, warn_only=True)
        try:
            return fn(*args, **kwargs)
        finally:
            torch.use_deterministic_algorithms(before[0], warn_only=before[1])

    return run
