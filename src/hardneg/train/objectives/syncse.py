"""SynCSE: projection head and the confidence-weighted NT-Xent with sampled hard negatives.

* Projection (Eq. 3/5): ``z = ReLU(W h + b)``, with dropout on the projection (the paper's
  "Dropout and regularization: applied to both encoder and projection layers"). It takes the
  place of SimCSE's training-only MLP; evaluation and export use h (as SimCSE's mlp_only_train).
* Loss (Eq. 7), for anchor i with positive p_i (its second dropout view) and its k negatives
  n_ij sampled from the corpus pool (``hardneg.train.negindex``, Eq. 6):
  ``L_i = -w_i log( e^{s(z_a,z_p)/tau} / (e^{s(z_a,z_p)/tau} + sum_j e^{s(z_a,z_nj)/tau}) )``.
  With ``in_batch`` (default: "augments each anchor-positive pair with k negatives ... beyond
  in-batch negatives") the other anchors' positives stay in the denominator as well.
* Confidence weights w_i: the paper computes them "from human-annotated similarity scores or
  normalized alignment scores"; unsupervised we have no annotations, so ``alignment``:
  ``w_i = c_i / mean_j c_j`` with ``c_i = max(0, s(z_a_i, z_p_i))`` (detached), mean 1 over the
  batch; ``uniform``: w_i = 1 (plain NT-Xent). The batch loss is ``mean_i L_i``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from hardneg.train.fallbacks import FallbackCounts
from hardneg.train.objectives._common import _upcast, cosine_matrix, cosine_rows

WEIGHTS = ("alignment", "uniform")
FALLBACKS = ("syncse_degenerate_weights",)


def projection(hidden: int, dropout: float) -> nn.Module:
    """SynCSE Eq. 5 projection head with dropout."""
    return nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Dropout(dropout))


def confidence_weights(anchors: torch.Tensor, positives: torch.Tensor, mode: str,
                       counts: FallbackCounts | None = None) -> torch.Tensor:
    """w_i of Eq. 7 (see the module docstring); uniform when every alignment is <= 0 (counted)."""
    n = anchors.shape[0]
    ones = torch.ones(n, dtype=torch.float32 if anchors.dtype != torch.float64 else anchors.dtype, device=anchors.device)
    if mode == "uniform":
        return ones
    if mode != "alignment":
        raise ValueError(f"SynCSE weights must be one of {', '.join(WEIGHTS)}, got {mode!r}")
    c = cosine_rows(anchors, positives[:n]).detach().clamp_min(0)
    mean = c.mean()
    bad = mean <= 1e-6
    if counts is not None:
        counts.add("syncse_degenerate_weights", bad.long())
    return torch.where(bad, ones.to(c.dtype), c / mean.clamp_min(1e-6))


class WeightedNTXent(nn.Module):
    """SynCSE Eq. 7. ``negatives`` [N, k, d]: row i's own sampled hard negatives."""

    name = "syncse"

    def __init__(self, temperature: float = 0.05, weights: str = "alignment", in_batch: bool = True,
                 counts: FallbackCounts | None = None) -> None:
        super().__init__()
        if weights not in WEIGHTS:
            raise ValueError(f"SynCSE weights must be one of {', '.join(WEIGHTS)}, got {weights!r}")
        self.temperature, self.weights, self.in_batch, self.counts = temperature, weights, in_batch, counts

    def forward(self, anchors: torch.Tensor, positives: torch.Tensor, negatives: torch.Tensor) -> torch.Tensor:
        n = anchors.shape[0]
        a = F.normalize(_upcast(anchors), dim=-1)
        neg = torch.einsum("nd,nkd->nk", a, F.normalize(_upcast(negatives), dim=-1))
        if self.in_batch:
            pos = cosine_matrix(anchors, positives)
            target = torch.arange(n, device=anchors.device)
        else:
            pos = cosine_rows(anchors, positives[:n]).unsqueeze(1)
            target = torch.zeros(n, dtype=torch.long, device=anchors.device)
        logits = torch.cat([pos, neg], dim=1) / self.temperature
        per_row = F.cross_entropy(logits, target, reduction="none")
        w = confidence_weights(anchors, positives, self.weights, self.counts).to(per_row.dtype)
        return (w * per_row).mean()
