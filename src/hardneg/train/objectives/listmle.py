"""ListMLE over anchor–SAN similarities ranked by a teacher (SAN paper Eq. 5)."""

from __future__ import annotations

import torch
from torch import nn

from hardneg.train.objectives._common import cosine_matrix


def listmle(scores: torch.Tensor, teacher_scores: torch.Tensor, eps: float = 0.0,
            random_ties: bool = False) -> torch.Tensor:
    """Mean over rows of ``-log P(pi^T | s)`` (Xia et al. 2008): ``pi^T`` sorts each row of
    ``teacher_scores`` descending and ``P(pi|s) = prod_k e^{s_pi(k)} / sum_{m>=k} e^{s_pi(m)}``.

    ``eps`` > 0 is the reference code's reading (RankCSE/SAN ``ListMLE``: ``log(cumsum + 1e-7)``
    over max-shifted scores); ``random_ties`` breaks equal teacher scores by a random column
    permutation (the reference's shuffle, drawn from torch's global generator) instead of by
    column order. The defaults (0, False) are the paper's ListMLE."""
    if random_ties:
        perm = torch.randperm(scores.shape[-1]).to(scores.device)
        scores, teacher_scores = scores[:, perm], teacher_scores[:, perm]
    order = torch.argsort(teacher_scores.detach(), dim=1, descending=True, stable=True)
    s = torch.gather(scores, 1, order)
    if eps > 0:  # log(sum_{m>=k} e^{s_m - max} + eps) - (s_k - max), as the reference computes it
        z = s - s.max(dim=1, keepdim=True).values
        tail = torch.log(torch.cumsum(z.exp().flip(1), dim=1).flip(1) + eps)
        return (tail - z).sum(dim=1).mean()
    # log sum_{m>=k} e^{s_m}: a reversed cumulative logsumexp
    tail = torch.logcumsumexp(s.flip(1), dim=1).flip(1)
    return (tail - s).sum(dim=1).mean()


class ListMLESAN(nn.Module):
    """SAN paper Eq. 5: ``L = -sum_i log P(pi^T_i | S'(x_i), tau3)`` with
    ``S'(x_i) = {sim(h_i, h-_j)/tau3}_j`` over the SAN negatives of the batch and ``pi^T_i``
    the order of the teacher encoder's similarities (averaged over anchors, as RankCSE's
    implementation does; the weight lambda in Eq. 6 is applied by the caller). The paper writes
    ``e^{S/tau}`` with S already divided by tau3: we divide once."""

    def __init__(self, tau3: float = 0.05, eps: float = 0.0, random_ties: bool = False) -> None:
        super().__init__()
        if tau3 <= 0:
            raise ValueError(f"ListMLE temperature must be > 0, got {tau3}")
        self.tau3, self.eps, self.random_ties = tau3, eps, random_ties

    def forward(
        self, anchors: torch.Tensor, negatives: torch.Tensor, teacher_sims: torch.Tensor
    ) -> torch.Tensor:
        scores = cosine_matrix(anchors, negatives) / self.tau3
        if teacher_sims.shape != scores.shape:
            raise ValueError(
                f"ListMLE: teacher similarities {tuple(teacher_sims.shape)} do not match "
                f"student scores {tuple(scores.shape)}"
            )
        return listmle(scores, teacher_sims, self.eps, self.random_ties)
