"""InfoNCE with in-batch negatives (unsupervised SimCSE)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from hardneg.train.objectives._common import cosine_matrix


class InfoNCE(nn.Module):
    """SAN paper Eq. 1 / OssCSE Eq. 2 / SimCSE:
    ``L = -1/N sum_i log( e^{sim(h_i,h+_i)/tau} / sum_j e^{sim(h_i,h+_j)/tau} )``.

    ``anchors`` [N, d] and ``positives`` [M, d] with M >= N: row i's positive is column i
    (under DDP the caller passes the gathered global batch, so negatives span every device).
    The mean over anchors follows SimCSE's cross-entropy convention.
    """

    def __init__(self, temperature: float = 0.05) -> None:
        super().__init__()
        if temperature <= 0:
            raise ValueError(f"InfoNCE temperature must be > 0, got {temperature}")
        self.temperature = temperature

    def forward(self, anchors: torch.Tensor, positives: torch.Tensor) -> torch.Tensor:
        logits = cosine_matrix(anchors, positives) / self.temperature
        labels = torch.arange(anchors.shape[0], device=anchors.device)
        return F.cross_entropy(logits, labels)
