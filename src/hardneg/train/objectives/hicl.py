"""HiCL: hierarchical (segment-level + sequence-level) contrastive loss (HiCL §3.1-3.2).

Segment vectors ``h_ij = E(seg_ij)`` come from ``hardneg.train.segments`` (queue rule, L tokens).
* Sequence vector (§3.1): the length-weighted mean of its segments,
  ``h_i = sum_j w_ij h_ij`` with ``w_ij = |seg_ij| / sum_k |seg_ik|``.
* Local loss (Eq. 2), for every segment (i, j) with its second dropout view h+_ij:
  ``L_l = -log( e^{s(h_ij,h+_ij)/tau} / (e^{s(h_ij,h+_ij)/tau} + sum_{k != i} e^{s(h_ij,h+_k*)/tau}) )``,
  averaged over all segments of the (global) batch. Segments of the same sequence are neither
  positives nor negatives (§5.2: the best choice); negatives are the other sequences' segments
  in the positive view (the SimCSE column convention).
* Global loss (Eq. 1): InfoNCE over the sequence vectors.
* Overall: ``L = alpha * L_l + (1 - alpha) * L_g``, alpha in {0.01, 0.05, 0.15} (Table 13).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from hardneg.train.objectives._common import _upcast, cosine_matrix
from hardneg.train.objectives.infonce import InfoNCE


def aggregate(seg_vecs: torch.Tensor, owner: torch.Tensor, lengths: torch.Tensor, n_seq: int) -> torch.Tensor:
    """Length-weighted mean of each sequence's segment vectors [n_seq, d] (HiCL §3.1). An empty
    sequence's single segment (length 0) gets weight 1."""
    v = _upcast(seg_vecs)
    w = lengths.to(v.dtype).clamp_min(1.0)
    total = torch.zeros(n_seq, dtype=v.dtype, device=v.device).index_add(0, owner, w)
    num = torch.zeros(n_seq, v.shape[1], dtype=v.dtype, device=v.device).index_add(0, owner, v * w.unsqueeze(1))
    return num / total.unsqueeze(1)


def local_contrast(seg_a: torch.Tensor, seg_p: torch.Tensor, owner: torch.Tensor, temperature: float) -> torch.Tensor:
    """HiCL Eq. 2 averaged over segments: same-sequence segments other than the pair are masked."""
    logits = cosine_matrix(seg_a, seg_p) / temperature
    n = seg_a.shape[0]
    same = owner.unsqueeze(1) == owner.unsqueeze(0)
    same[torch.arange(n), torch.arange(n)] = False
    logits = logits.masked_fill(same, float("-inf"))
    return F.cross_entropy(logits, torch.arange(n, device=seg_a.device))


class HiCLLoss(nn.Module):
    """``alpha * L_l + (1 - alpha) * L_g``; returns (total, local, global)."""

    name = "hicl"

    def __init__(self, alpha: float, temperature: float = 0.05) -> None:
        super().__init__()
        if not 0 <= alpha <= 1:
            raise ValueError(f"HiCL alpha must be in [0, 1], got {alpha}")
        self.alpha, self.temperature = alpha, temperature
        self.infonce = InfoNCE(temperature)

    def forward(self, anchors: torch.Tensor, positives: torch.Tensor, seg_a: torch.Tensor, seg_p: torch.Tensor,
                owner: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        glob = self.infonce(anchors, positives)
        loc = local_contrast(seg_a, seg_p, owner, self.temperature)
        return self.alpha * loc + (1 - self.alpha) * glob, loc, glob
