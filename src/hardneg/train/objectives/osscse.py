"""OssCSE objectives (surface-structure bias paper §4)."""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn

from hardneg.train.objectives.margin import two_way_margin


class TwoWayMaxMargin(nn.Module):
    """OssCSE Eq. 3, between the paraphrase p and the negation n of each anchor:
    ``l_m = max(sim(h,h^n) - sim(h,h^p) + alpha, 0) + max(sim(h,h^p) - sim(h,h^n) - beta, 0)``,
    averaged over the batch (paper: alpha 0.05, beta 0.2)."""

    def __init__(self, alpha: float = 0.05, beta: float = 0.2) -> None:
        super().__init__()
        if alpha > beta:
            raise ValueError(f"two-way margin needs alpha <= beta, got {alpha} > {beta}")
        self.alpha = alpha
        self.beta = beta

    def forward(
        self, anchors: torch.Tensor, paraphrases: torch.Tensor, negations: torch.Tensor
    ) -> torch.Tensor:
        return two_way_margin(anchors, paraphrases, negations, self.alpha, self.beta)


class RecallLoss(nn.Module):
    """OssCSE Eq. 4 (recall / pretraining simulation, Chen et al. 2020):
    ``l_r = gamma/2 * sum_i (theta_i - theta*_i)^2`` with theta* the initial weights
    (paper: gamma 2e-3). The initial weights are stored as buffers (not parameters)."""

    def __init__(self, named_params: Iterable[tuple[str, torch.Tensor]], gamma: float = 2e-3) -> None:
        super().__init__()
        if gamma < 0:
            raise ValueError(f"recall gamma must be >= 0, got {gamma}")
        self.gamma = gamma
        self.names: list[str] = []
        for name, p in named_params:
            key = name.replace(".", "__")
            self.register_buffer(key, p.detach().clone(), persistent=False)
            self.names.append(key)

    def forward(self, params: Iterable[torch.Tensor]) -> torch.Tensor:
        params = list(params)
        if len(params) != len(self.names):
            raise ValueError(f"recall loss: expected {len(self.names)} tensors, got {len(params)}")
        total = None
        for key, p in zip(self.names, params):
            term = (p - getattr(self, key).to(p.dtype)).pow(2).sum()
            total = term if total is None else total + term
        if total is None:
            return torch.zeros(())
        return 0.5 * self.gamma * total

    @torch.no_grad()
    def decoupled_step(self, params: Iterable[torch.Tensor], lr: float) -> None:
        """RecAdam-style decoupled form (Chen et al. 2020, cited by OssCSE §4): after the optimizer
        step, ``theta <- theta - lr * gamma * (theta - theta*)``, i.e. the gradient of Eq. 4 applied
        outside Adam's moment normalisation (as AdamW decouples weight decay). Not OssCSE's default:
        Eq. 5 adds l_r to the loss (``method_settings.recall.form: coupled``)."""
        params = list(params)
        if len(params) != len(self.names):
            raise ValueError(f"recall loss: expected {len(self.names)} tensors, got {len(params)}")
        for key, p in zip(self.names, params):
            p.sub_(lr * self.gamma * (p - getattr(self, key).to(p.dtype)))
