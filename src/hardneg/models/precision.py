"""Precision resolution, one home: what ``auto`` stands for, and the autocast dtype of a name.

SAN mask-predict, training and encoding spell precision the same way (``auto | fp32 | bf16``,
training also ``fp16``); the resolved name is what shard stats and logs record.
"""

from __future__ import annotations

import logging

import torch

log = logging.getLogger(__name__)

NAMES = ("fp32", "bf16", "fp16")
_DTYPES: dict[str, torch.dtype | None] = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


def resolve_precision(precision: str, device: torch.device, *, setting: str = "precision",
                      runs: tuple[str, ...] = NAMES) -> str:
    """The compute precision (a name in ``runs``) that ``precision`` stands for on ``device``.

    ``auto``: fp32 off CUDA; on CUDA bf16, or fp16 when the GPU lacks bf16 and the caller
    ``runs`` fp16 (SAN runs fp32/bf16 only, so its auto is bf16 on every GPU). An explicit name
    is kept; bf16 on a CPU without native bf16 is allowed (emulated) with a warning.
    """
    if precision == "auto":
        if device.type != "cuda":
            return "fp32"
        return "fp16" if "fp16" in runs and not torch.cuda.is_bf16_supported() else "bf16"
    if precision not in runs:
        raise ValueError(f"{setting}: '{precision}' not one of {('auto', *runs)}")
    if precision == "bf16" and device.type == "cpu" and not torch.ops.mkldnn._is_mkldnn_bf16_supported():
        log.warning("%s=bf16 on a CPU without native bf16: emulated, slower than fp32", setting)
    return precision


def autocast_dtype(name: str) -> torch.dtype | None:
    """The autocast dtype of a resolved precision name; None for fp32 (autocast off)."""
    try:
        return _DTYPES[name]
    except KeyError:
        raise ValueError(f"unknown precision {name!r} (known: {', '.join(NAMES)})") from None
