"""The loss terms that replace in-batch InfoNCE, wired behind one object so the trainer needs
only a few hook lines:
HNCSE-PM / HNCSE-HNM (``objectives.hncse``), HiCL (``objectives.hicl`` + ``segments`` +
``hicl_views``), SynCSE (``objectives.syncse`` + ``negindex``). Each replaces the in-batch
InfoNCE term over the gathered global batch; the fallbacks they take are counted
(``fallbacks.FallbackCounts``) and reported in ``summary.json`` under ``fallbacks``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from hardneg.train import distributed as D
from hardneg.train import views
from hardneg.train.fallbacks import FallbackCounts
from hardneg.train.objectives import hncse, syncse
from hardneg.train.objectives.hicl import HiCLLoss

if TYPE_CHECKING:
    from hardneg.train.model import ContrastiveEncoder
    from hardneg.train.negindex import NegativeIndex
    from hardneg.train.settings import TrainSettings

HNCSE_MODES = ("none", "pm", "hnm")
HICL_COUNTS = ("hicl_empty_sequence", "hicl_single_segment", "hicl_truncated")  # sorted: hicl_views order


def validate(s: TrainSettings, bad) -> None:
    """HNCSE / HiCL / SynCSE settings checks (called from ``TrainSettings.validate``; ``bad`` raises)."""
    if s.hncse not in HNCSE_MODES:
        bad("hncse", f"must be one of {', '.join(HNCSE_MODES)}")
    if s.hncse_mix_alpha is not None and (isinstance(s.hncse_mix_alpha, bool)
                                          or not isinstance(s.hncse_mix_alpha, (int, float))
                                          or not 0 <= s.hncse_mix_alpha <= 1):
        bad("hncse_mix_alpha", "must be a number in [0, 1] or null (Eq. 8 adaptive)")
    for name in ("hncse_top_k", "hncse_mixes", "hicl_segment_length", "hicl_max_tokens",
                 "syncse_negatives", "syncse_refresh_every"):
        if getattr(s, name) < 1:
            bad(name, "must be >= 1")
    if s.hncse_pm_margin < 0:
        bad("hncse_pm_margin", "must be >= 0")
    if not 0 <= s.hicl_alpha <= 1:
        bad("hicl_alpha", "must be in [0, 1]")
    if not 0 <= s.syncse_projection_dropout < 1:
        bad("syncse_projection_dropout", "must be in [0, 1)")
    if not -1 <= s.syncse_delta <= 1:
        bad("syncse_delta", "is a cosine threshold: must be in [-1, 1]")
    if s.syncse_weights not in syncse.WEIGHTS:
        bad("syncse_weights", f"must be one of {', '.join(syncse.WEIGHTS)}")
    if s.syncse_pool_size is not None and (isinstance(s.syncse_pool_size, bool)
                                           or not isinstance(s.syncse_pool_size, int) or s.syncse_pool_size < 2):
        bad("syncse_pool_size", "must be an integer >= 2 or null (the whole training corpus)")
    chosen = [n for n, on in (("hncse", s.hncse != "none"), ("hicl", s.hicl), ("syncse", s.syncse)) if on]
    if len(chosen) > 1:
        bad(chosen[1], f"cannot be combined with {chosen[0]} (one of hncse, hicl, syncse per run)")
    if chosen and s.negatives != "none":
        bad(chosen[0], "replaces the InfoNCE term: needs negatives: none")
    if s.hicl and s.margin_weight > 0:
        bad("hicl", "HiCL wraps SimCSE and SNCSE (the paper's baselines); not OssCSE's margin")


def enabled(s: TrainSettings) -> bool:
    return s.hncse != "none" or s.hicl or s.syncse


class ReplacementTerms(nn.Module):
    """The configured HNCSE / HiCL / SynCSE contrast term; ``forward`` returns the logged parts, the first
    being the term that replaces InfoNCE (the trainer adds it to the global terms)."""

    def __init__(self, s: TrainSettings) -> None:
        super().__init__()
        self.s = s
        g: tuple[str, ...] = ()
        local: tuple[str, ...] = ()
        if s.hncse == "pm":
            g = hncse.PM_FALLBACKS
        elif s.hncse == "hnm":
            g = hncse.HNM_FALLBACKS
        elif s.hicl:
            local = HICL_COUNTS
        elif s.syncse:
            g = syncse.FALLBACKS
        self.counts = FallbackCounts(global_keys=g, local_keys=local)
        if s.hncse == "pm":
            self.loss: nn.Module = hncse.PositiveMixing(s.temperature, s.hncse_pm_margin, s.hncse_pm_single, self.counts)
        elif s.hncse == "hnm":
            self.loss = hncse.HardNegativeMixing(s.temperature, s.hncse_top_k, s.hncse_mixes, s.hncse_mix_alpha,
                                                 self.counts)
        elif s.hicl:
            self.loss = HiCLLoss(s.hicl_alpha, s.temperature)
        else:
            self.loss = syncse.WeightedNTXent(s.temperature, s.syncse_weights, s.syncse_in_batch, self.counts)

    @classmethod
    def build(cls, s: TrainSettings) -> ReplacementTerms | None:
        return cls(s) if enabled(s) else None

    def forward(self, emb: dict[str, torch.Tensor], g1: torch.Tensor, g2: torch.Tensor,
                info: D.DistInfo) -> dict[str, torch.Tensor]:
        if self.s.hncse != "none":
            return {self.loss.name: self.loss(g1, g2)}
        if self.s.hicl:
            for key, n in zip(HICL_COUNTS, emb["hicl_counts"].tolist()):
                self.counts.add(key, n)
            n_local = emb["anchor"].shape[0]
            owner = emb["hicl_seg_owner"] + info.rank * n_local  # sequence ids in the global batch
            seg_a = gather_varlen(emb["hicl_seg_anchor"], info, with_grad=True)
            seg_p = gather_varlen(emb["hicl_seg_positive"], info, with_grad=True)
            owner = gather_varlen(owner, info, with_grad=False)
            total, loc, glob = self.loss(g1, g2, seg_a, seg_p, owner)
            return {"hicl": total, "hicl_local": loc, "hicl_global": glob}
        n_local = emb["anchor"].shape[0]
        neg = emb["syncse"].reshape(n_local, -1, emb["syncse"].shape[-1])
        return {"syncse": self.loss(g1, g2, D.gather_with_grad(neg, info))}


def gather_varlen(x: torch.Tensor, info: D.DistInfo, with_grad: bool) -> torch.Tensor:
    """All-gather rows of a tensor whose length differs per rank (HiCL: segments per batch):
    pad to the longest, gather (the local slice keeps its gradient), trim."""
    if not info.enabled:
        return x
    import torch.distributed as dist

    n = torch.tensor([x.shape[0]], device=x.device)
    sizes = [torch.zeros_like(n) for _ in range(info.world_size)]
    dist.all_gather(sizes, n)
    sizes_i = [int(t) for t in sizes]
    width = max(sizes_i)
    pad = torch.zeros((width - x.shape[0], *x.shape[1:]), dtype=x.dtype, device=x.device)
    full = torch.cat([x, pad])
    gathered = D.gather_with_grad(full, info) if with_grad else D.gather_no_grad(full, info)
    return torch.cat([gathered[r * width : r * width + sizes_i[r]] for r in range(info.world_size)])


def install_projection(encoder: ContrastiveEncoder, s: TrainSettings) -> None:
    """SynCSE: its projection head (Eq. 5 + dropout) replaces SimCSE's training-only MLP."""
    if s.syncse:
        encoder.mlp = syncse.projection(int(encoder.backbone.config.hidden_size), s.syncse_projection_dropout)


def build_index(s: TrainSettings, texts: list[str]) -> NegativeIndex | None:
    """SynCSE's corpus-pool negative index (None for other methods)."""
    if not s.syncse:
        return None
    from hardneg.train.negindex import NegativeIndex

    return NegativeIndex(texts, s.syncse_negatives, s.syncse_delta, s.syncse_refresh_every, s.seed,
                         s.syncse_pool_size, template=views.view_template(s, "anchor"))


def counters(terms: ReplacementTerms | None, index: NegativeIndex | None) -> dict[str, FallbackCounts]:
    """The run's fallback counters by name (what a checkpoint saves and restores per rank)."""
    out = {}
    if terms is not None:
        out["terms"] = terms.counts
    if index is not None:
        out["index"] = index.counts
    return out


def fallbacks(terms: ReplacementTerms | None, index: NegativeIndex | None, info: D.DistInfo) -> dict[str, Any]:
    """Fallback totals for summary.json (call on every rank: local counters are all-reduced)."""
    out: dict[str, Any] = {}
    if terms is not None:
        out.update(terms.counts.as_dict(info))
    if index is not None:
        out.update(index.counts.as_dict(info))
        out["syncse_k_used"] = index.k
    return out
