"""InfoNCE with one hard negative per anchor (supervised SimCSE's form)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from hardneg.train.objectives._common import cosine_matrix


class HardNegativeInfoNCE(nn.Module):
    """SimCSE §4 Eq. 5 (princeton-nlp/SimCSE ``simcse/models.py`` cl_forward, num_sent == 3):
    logits ``[S(h, h+) / tau | S(h, h-) / tau]`` over the whole batch's positives and hard
    negatives, with ``hard_negative_weight`` added to the logit of each anchor's OWN hard negative
    (column N + i of row i) after the division by tau, as the reference's ``weights`` matrix does;
    the target of row i is column i.
    """

    def __init__(self, temperature: float = 0.05, hard_negative_weight: float = 0.0) -> None:
        super().__init__()
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        self.temperature = temperature
        self.hard_negative_weight = hard_negative_weight

    def forward(self, anchors: torch.Tensor, positives: torch.Tensor, negatives: torch.Tensor) -> torch.Tensor:
        pos = cosine_matrix(anchors, positives) / self.temperature
        neg = cosine_matrix(anchors, negatives) / self.temperature
        if self.hard_negative_weight:
            n = anchors.shape[0]
            neg = neg + self.hard_negative_weight * torch.eye(n, neg.shape[1], device=neg.device, dtype=neg.dtype)
        labels = torch.arange(anchors.shape[0], device=anchors.device)
        return F.cross_entropy(torch.cat([pos, neg], dim=1), labels)
