"""RankCSE's terms (Liu et al. 2023), as SAN Eq. 6 / Eq. 7 combine them.

- ranking consistency: Jensen–Shannon divergence between the in-batch similarity distributions
  of the two views, ``p_i = softmax(S(h_i, h+)/tau)`` and ``q_i = softmax(S(h+_i, h)/tau)``;
- ranking distillation: ListMLE (Xia et al. 2008) or ListNet (Cao et al. 2007, top-1) between the
  student's in-batch similarity lists ``S(h_i, h+_j)/tau2`` and the teachers' (weighted sum).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from hardneg.train.objectives._common import cosine_matrix
from hardneg.train.objectives.listmle import listmle


def js_divergence(logits_p: torch.Tensor, logits_q: torch.Tensor) -> torch.Tensor:
    """Mean over rows of ``JS(p_i, q_i) = 1/2 KL(p_i||m_i) + 1/2 KL(q_i||m_i)``, ``m = (p+q)/2``,
    with ``p = softmax(logits_p)`` row-wise (natural log; RankCSE's batchmean reduction)."""
    lp = F.log_softmax(logits_p, dim=-1)
    lq = F.log_softmax(logits_q, dim=-1)
    lm = torch.logsumexp(torch.stack([lp, lq]), dim=0) - math.log(2.0)
    kl_pm = (lp.exp() * (lp - lm)).sum(-1)
    kl_qm = (lq.exp() * (lq - lm)).sum(-1)
    return (0.5 * (kl_pm + kl_qm)).mean()


def reference_clamped_js(logits_p: torch.Tensor, logits_q: torch.Tensor) -> torch.Tensor:
    """The community RankCSE code's "Divergence" as the SAN repository runs it: ``log m`` is
    clamped at min 1e-7, which replaces every ``log m`` (<= 0) by 1e-7, so the term equals
    ``-1/2 (H(p) + H(q)) - 1e-7`` (probabilities clamped at 1e-7). Kept only to reproduce it."""
    p = logits_p.softmax(-1).clamp(min=1e-7)
    q = logits_q.softmax(-1).clamp(min=1e-7)
    lm = (0.5 * (p + q)).log().clamp(min=1e-7)
    return 0.5 * ((p * (p.log() - lm)).sum(-1) + (q * (q.log() - lm)).sum(-1)).mean()


def listnet(scores: torch.Tensor, teacher_scores: torch.Tensor) -> torch.Tensor:
    """ListNet top-1 cross entropy as RankCSE: ``-sum q log p / sum q`` over all rows, with
    ``p = softmax(student)`` and ``q = softmax(teacher)``, the diagonal (self-pair) excluded."""
    eye = torch.eye(scores.shape[0], scores.shape[1], dtype=torch.bool, device=scores.device)
    logp = F.log_softmax(scores.masked_fill(eye, float("-inf")), dim=-1).masked_fill(eye, 0.0)
    q = F.softmax(teacher_scores.detach().masked_fill(eye, float("-inf")), dim=-1)
    return -(q * logp).sum() / q.sum()


class RankingConsistency(nn.Module):
    """RankCSE L_consistency (SAN Eq. 6, beta): JS between ``softmax(cos(h, h+)/tau)`` and
    ``softmax(cos(h+, h)/tau)`` row-wise (tau = the InfoNCE temperature, as RankCSE's code)."""

    def __init__(self, tau: float = 0.05, form: str = "js") -> None:
        super().__init__()
        self.tau = tau
        self.fn = js_divergence if form == "js" else reference_clamped_js

    def forward(self, anchors: torch.Tensor, positives: torch.Tensor) -> torch.Tensor:
        s12 = cosine_matrix(anchors, positives) / self.tau
        s21 = cosine_matrix(positives, anchors) / self.tau
        return self.fn(s12, s21)


class RankingDistillation(nn.Module):
    """RankCSE L_rank (SAN Eq. 6, gamma; Eq. 7, lambda): the student's in-batch similarity lists
    ``cos(h_i, h+_j)/tau2`` ranked by the teachers' ``teacher_sims`` (already /tau2, summed with
    the teachers' weights). ``loss``: listmle (SAN's choice, §3.3) or listnet."""

    def __init__(self, tau2: float = 0.05, loss: str = "listmle", eps: float = 0.0, random_ties: bool = False) -> None:
        super().__init__()
        self.tau2 = tau2
        self.loss = loss
        self.eps, self.random_ties = eps, random_ties  # ListMLE's reference-code options (listmle())

    def forward(self, anchors: torch.Tensor, positives: torch.Tensor, teacher_sims: torch.Tensor) -> torch.Tensor:
        scores = cosine_matrix(anchors, positives) / self.tau2
        if teacher_sims.shape != scores.shape:
            raise ValueError(f"ranking distillation: teacher similarities {tuple(teacher_sims.shape)} do not "
                             f"match student scores {tuple(scores.shape)}")
        if self.loss == "listmle":
            return listmle(scores, teacher_sims, self.eps, self.random_ties)
        return listnet(scores, teacher_sims)
