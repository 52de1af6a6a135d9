"""Encoders shared by training and evaluation: poolers, prompt templates, batched encoding.

The names below load on first use (PEP 562): a job that needs only the prompt templates (the
model card) imports ``hardneg.encoders.templates`` without paying for torch (~3 s per job)."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hardneg.encoders.encoder import Encoder, load_encoder
    from hardneg.encoders.pooling import POOLERS, masked_mean, pool
    from hardneg.encoders.templates import PROMPT_TEMPLATES, apply_template

_HOME = {
    "Encoder": "encoder", "load_encoder": "encoder",
    "POOLERS": "pooling", "masked_mean": "pooling", "pool": "pooling",
    "PROMPT_TEMPLATES": "templates", "apply_template": "templates",
}
__all__ = ["POOLERS", "PROMPT_TEMPLATES", "Encoder", "apply_template", "load_encoder", "masked_mean", "pool"]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value
