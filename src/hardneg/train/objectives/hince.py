"""Hierarchical InfoNCE (SAN paper §3.2)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from hardneg.train.objectives._common import cosine_matrix


class HiNCE(nn.Module):
    """SAN paper Eq. 2:
    ``L = -1/N sum_i log( e^{sim(h_i,h+_i)/tau1} /
    sum_j (e^{sim(h_i,h+_j)/tau1} + e^{sim(h_i,h-_j)/tau2}) )``.

    ``negatives`` [M, d] are the syntactically aligned negatives of the WHOLE batch: Eq. 2 sums
    over every h-_j, and SAN's code does the same (bcai01/SAN ``models/SimCSE/simcse/models.py``
    l. 176-178 appends the full anchor x negative similarity matrix, as SimCSE does with hard
    negatives). They are scored at their own temperature tau2; the in-batch positives use tau1. Logits are ``[S(h,h+)/tau1 | S(h,h-)/tau2]``
    and the target of row i is column i.
    """

    def __init__(self, tau1: float = 0.05, tau2: float = 0.08) -> None:
        super().__init__()
        if tau1 <= 0 or tau2 <= 0:
            raise ValueError(f"HiNCE temperatures must be > 0, got tau1={tau1} tau2={tau2}")
        self.tau1 = tau1
        self.tau2 = tau2

    def forward(
        self, anchors: torch.Tensor, positives: torch.Tensor, negatives: torch.Tensor
    ) -> torch.Tensor:
        pos = cosine_matrix(anchors, positives) / self.tau1
        neg = cosine_matrix(anchors, negatives) / self.tau2
        logits = torch.cat([pos, neg], dim=1)
        labels = torch.arange(anchors.shape[0], device=anchors.device)
        return F.cross_entropy(logits, labels)
