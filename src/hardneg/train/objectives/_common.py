"""Small tensor helpers shared by the objectives."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _upcast(x: torch.Tensor) -> torch.Tensor:
    # similarities in at least float32 (bf16/fp16 activations under AMP lose the 1/tau scale)
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def cosine_matrix(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """All-pairs cosine similarity ``[len(a), len(b)]`` (computed in float32 for stability)."""
    a = F.normalize(_upcast(a), dim=-1)
    b = F.normalize(_upcast(b), dim=-1)
    return a @ b.T


def cosine_rows(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Row-wise cosine similarity ``cos(a_i, b_i)``."""
    return F.cosine_similarity(_upcast(a), _upcast(b), dim=-1)
