"""SNCSE's bidirectional margin loss on negation soft negatives."""

from __future__ import annotations

import torch
from torch import nn

from hardneg.train.objectives._common import cosine_rows


def two_way_margin(
    anchors: torch.Tensor,
    positives: torch.Tensor,
    negatives: torch.Tensor,
    alpha: float,
    beta: float,
) -> torch.Tensor:
    """Mean over rows of ``relu(d + alpha) + relu(-d - beta)``, ``d = cos(a,n) - cos(a,p)``.

    Keeps ``alpha <= cos(a,p) - cos(a,n) <= beta``: the soft negative stays below the positive,
    but not too far (it is still semantically related).
    """
    d = cosine_rows(anchors, negatives) - cosine_rows(anchors, positives)
    return (torch.relu(d + alpha) + torch.relu(-d - beta)).mean()


class BidirectionalMargin(nn.Module):
    """SNCSE bidirectional margin loss (BML), SAN paper Eq. 4's L_BML:
    ``d_i = cos(h_i, h^neg_i) - cos(h_i, h+_i)``;
    ``L = mean_i [ relu(d_i + alpha) + relu(-d_i - beta) ]`` (SNCSE: alpha 0.1, beta 0.3).

    ``positives`` are the anchors' dropout/prompt positives, ``negatives`` their negations.
    """

    def __init__(self, alpha: float = 0.1, beta: float = 0.3) -> None:
        super().__init__()
        if alpha > beta:
            raise ValueError(f"BML needs alpha <= beta, got alpha={alpha} beta={beta}")
        self.alpha = alpha
        self.beta = beta

    def forward(
        self, anchors: torch.Tensor, positives: torch.Tensor, negatives: torch.Tensor
    ) -> torch.Tensor:
        return two_way_margin(anchors, positives, negatives, self.alpha, self.beta)
