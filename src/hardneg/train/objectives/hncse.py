"""HNCSE: positive mixing (HNCSE-PM, §3.1) and hard negative mixing (HNCSE-HNM, §3.2).

The equation symbols are missing from our copy of the paper; the reconstruction below comes
from the prose, from Kalantidis et al. 2020 (MoCHi, the cited hard negative mixing paper) and
from the authors' public code (github.com/Rcrossmeister/HNCSE, model/method1_models.py and
method2_models.py: read for conventions only). Notation: a_i anchor view, p_i positive view
(the other dropout mask), s(x, y) cosine similarity, tau the temperature.

PM, Eq. 2 (reconstructed). The hardest negative of anchor i is n_i = p_h with
``h = argmax_{j != i} s(a_i, p_j)``; with ``s_p = s(a_i, p_i)`` and ``s_n = s(a_i, n_i)`` the
generated positive is the similarity-weighted mix
``p~_i = s_p/(s_p + s_n) * p_i + s_n/(s_p + s_n) * n_i``.
The authors' code mixes (i) when the hardest negative is at least as similar as the positive
(``s_n >= s_p``) and (ii) when the positive wins by a relative gap ``(s_p - s_n)/s_p <= 0.1``;
otherwise ``p~_i = p_i``. Eq. 2's weights are a mix only when both similarities are >= 0 (the
code applies them to any sign); a row with a negative similarity keeps p_i (counted fallback). In case (ii) the code draws its two weights per step from an Optuna
search (2,000 trials per step); we use the Eq. 2 weights in both cases (docs/deviations.md).
Eq. 3 is InfoNCE with p~ in place of p for every column:
``L = -1/N sum_i log( e^{s(a_i,p~_i)/tau} / sum_j e^{s(a_i,p~_j)/tau} )``.
Table 5's HNCSE-PM_single optimises one case only: we keep case (i) (the Eq. 2 case).

HNM, Eq. 7-8 (reconstructed). For anchor i take its top-K hard negatives
``N_i = topK_{j != i} s(a_i, p_j)`` (code: K = 10); draw ``s`` pairs (u, v), u < v, uniformly
with replacement from N_i (code: s = 40) and form (Eq. 7, MoCHi §4.1)
``h~ = (alpha * n_u + (1 - alpha) * n_v) / ||alpha * n_u + (1 - alpha) * n_v||``.
Eq. 8 makes alpha a function f of the similarities to the query, with alpha in [0, 1]
(Appendix A.2); we reconstruct f as Eq. 2's normalisation on similarities shifted to [0, 2]
(cosines can be negative): ``alpha = (1 + s(a_i,n_u)) / (2 + s(a_i,n_u) + s(a_i,n_v))``, so the
harder negative weighs more and equal similarities give 0.5 (detached: a mixing coefficient,
not a path for gradients). The authors' code uses a constant alpha = 0.5
(``hncse_mix_alpha: 0.5``). The synthetic negatives of anchor i join its denominator only
(Eq. 4 with the extended bank):
``L = -1/N sum_i log( e^{s(a_i,p_i)/tau} / (sum_j e^{s(a_i,p_j)/tau} + sum_m e^{s(a_i,h~_im)/tau}) )``.
Table 5's HNCSE-HNM_single "replaces h~ by n in Eq. 7": alpha = 1 (no mixing).
As in the authors' code, gradients flow through the mixed vectors into the positives.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from hardneg.train.fallbacks import FallbackCounts
from hardneg.train.objectives._common import _upcast, cosine_matrix

_EPS = 1e-6  # a weight denominator s_p + s_n at or below this is degenerate (cosines can be <= 0)

PM_FALLBACKS = ("hncse_pm_degenerate_weights",)
HNM_FALLBACKS = ("hncse_hnm_topk_clipped", "hncse_hnm_single_candidate", "hncse_hnm_degenerate_alpha")


def _offdiag_sims(anchors: torch.Tensor, positives: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(all similarities [N, M], the same with each row's own positive set to -inf)."""
    sims = cosine_matrix(anchors, positives)
    n = anchors.shape[0]
    own = torch.zeros_like(sims, dtype=torch.bool)
    own[torch.arange(n), torch.arange(n)] = True
    return sims, sims.masked_fill(own, float("-inf"))


def mix_positives(
    anchors: torch.Tensor, positives: torch.Tensor, margin: float = 0.1, single: bool = False,
    counts: FallbackCounts | None = None,
) -> torch.Tensor:
    """HNCSE-PM Eq. 2: each positive mixed with its anchor's hardest in-batch negative where
    the negative wins (``s_n >= s_p``) or nearly wins (relative gap <= ``margin``, skipped when
    ``single``). Rows ``N = len(anchors)`` of ``positives`` are mixed; extra columns kept."""
    n = anchors.shape[0]
    sims, off = _offdiag_sims(anchors, positives)
    s_p = sims[torch.arange(n), torch.arange(n)]
    s_n, hard = off.max(dim=1)
    p = _upcast(positives)
    neg_wins = s_n >= s_p
    near = (s_p > s_n) & ((s_p - s_n) / s_p.abs().clamp_min(_EPS) <= margin)
    mix = neg_wins if single else neg_wins | near
    denom = s_p + s_n
    degenerate = mix & ((denom <= _EPS) | (s_p < 0) | (s_n < 0))  # weights outside [0, 1]
    if counts is not None:
        counts.add("hncse_pm_degenerate_weights", degenerate.sum())
    mix = mix & ~degenerate  # fallback: keep the plain positive
    safe = torch.where(mix, denom, torch.ones_like(denom))
    w_p = torch.where(mix, s_p / safe, torch.ones_like(s_p)).unsqueeze(1)
    w_n = torch.where(mix, s_n / safe, torch.zeros_like(s_n)).unsqueeze(1)
    mixed = w_p * p[:n] + w_n * p[hard]
    return torch.cat([mixed, p[n:]], dim=0)


class PositiveMixing(nn.Module):
    """HNCSE-PM loss (Eq. 2 + Eq. 3): InfoNCE against the mixed positives."""

    name = "hncse_pm"

    def __init__(self, temperature: float = 0.05, margin: float = 0.1, single: bool = False,
                 counts: FallbackCounts | None = None) -> None:
        super().__init__()
        self.temperature, self.margin, self.single, self.counts = temperature, margin, single, counts

    def forward(self, anchors: torch.Tensor, positives: torch.Tensor) -> torch.Tensor:
        mixed = mix_positives(anchors, positives, self.margin, self.single, self.counts)
        logits = cosine_matrix(anchors, mixed) / self.temperature
        return F.cross_entropy(logits, torch.arange(anchors.shape[0], device=anchors.device))


def pair_table(k: int, device: torch.device) -> torch.Tensor:
    """All pairs (u, v), u < v, of k candidates as a [k(k-1)/2, 2] tensor (row-major order);
    a single candidate gives the pair (0, 0)."""
    if k < 2:
        return torch.zeros((1, 2), dtype=torch.long, device=device)
    return torch.triu_indices(k, k, offset=1, device=device).T


def hard_negative_mixes(
    anchors: torch.Tensor, positives: torch.Tensor, top_k: int = 10, n_mixes: int = 40,
    alpha: float | None = None, counts: FallbackCounts | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """HNCSE-HNM Eq. 7-8: ``n_mixes`` synthetic negatives per anchor, unit vectors [N, s, d]."""
    n, m = anchors.shape[0], positives.shape[0]
    k = min(top_k, m - 1)
    if counts is not None and k < top_k:
        counts.add("hncse_hnm_topk_clipped", n)  # K larger than the batch: every candidate used
    if counts is not None and k < 2:
        counts.add("hncse_hnm_single_candidate", n)  # one candidate: h~ = that negative
    _, off = _offdiag_sims(anchors, positives)
    top_s, top_i = off.topk(k, dim=1)  # [N, k]
    pairs = pair_table(k, anchors.device)
    pick = torch.randint(pairs.shape[0], (n, n_mixes), generator=generator, device=anchors.device)
    u, v = pairs[pick, 0], pairs[pick, 1]  # [N, s] positions in the top-k list
    nu = top_i.gather(1, u)
    nv = top_i.gather(1, v)
    p = _upcast(positives)
    if alpha is None:  # Eq. 8 (reconstructed): shifted-similarity weighted, detached
        su, sv = 1 + top_s.gather(1, u).detach(), 1 + top_s.gather(1, v).detach()
        denom = su + sv
        bad = denom <= _EPS
        if counts is not None:
            counts.add("hncse_hnm_degenerate_alpha", bad.sum())
        a = torch.where(bad, torch.full_like(su, 0.5), su / torch.where(bad, torch.ones_like(denom), denom))
    else:
        a = torch.full(u.shape, float(alpha), dtype=p.dtype, device=p.device)
    a = a.unsqueeze(-1).to(p.dtype)
    mixed = a * p[nu] + (1 - a) * p[nv]  # [N, s, d]
    return F.normalize(mixed, dim=-1)


class HardNegativeMixing(nn.Module):
    """HNCSE-HNM loss (Eq. 4 with the Eq. 7 negatives in each anchor's denominator)."""

    name = "hncse_hnm"

    def __init__(self, temperature: float = 0.05, top_k: int = 10, n_mixes: int = 40,
                 alpha: float | None = None, counts: FallbackCounts | None = None) -> None:
        super().__init__()
        self.temperature, self.top_k, self.n_mixes, self.alpha, self.counts = temperature, top_k, n_mixes, alpha, counts

    def forward(self, anchors: torch.Tensor, positives: torch.Tensor,
                generator: torch.Generator | None = None) -> torch.Tensor:
        mixes = hard_negative_mixes(anchors, positives, self.top_k, self.n_mixes, self.alpha, self.counts, generator)
        batch = cosine_matrix(anchors, positives)
        extra = torch.einsum("nd,nsd->ns", F.normalize(_upcast(anchors), dim=-1), mixes)
        logits = torch.cat([batch, extra], dim=1) / self.temperature
        return F.cross_entropy(logits, torch.arange(anchors.shape[0], device=anchors.device))
