"""HiCL (§3.1-3.2 Eq. 1-2): sequences sliced into segments of L sentence tokens, encoded
separately (``hardneg.train.hicl_views``) and aggregated; loss alpha x local (segments) +
(1 - alpha) x global (sequences). Sequences with one or no segment are counted fallbacks."""

from __future__ import annotations

from typing import ClassVar

import torch

from hardneg.train import distributed as D
from hardneg.train.fallbacks import FallbackCounts
from hardneg.train.methods import papers
from hardneg.train.methods.unit import Batch, Method, Term
from hardneg.train.objectives.hicl import HiCLLoss

COUNTS = ("hicl_empty_sequence", "hicl_single_segment", "hicl_truncated")  # sorted: hicl_views order


class _Term(Term):
    def __init__(self, alpha: float, temperature: float) -> None:
        super().__init__()
        self.counts = FallbackCounts(local_keys=COUNTS)
        self.loss = HiCLLoss(alpha, temperature)

    def forward(self, batch: Batch):
        emb, info = batch.emb, batch.info
        for key, n in zip(COUNTS, emb["hicl_counts"].tolist()):
            self.counts.add(key, n)
        n_local = emb["anchor"].shape[0]
        owner = emb["hicl_seg_owner"] + info.rank * n_local  # sequence ids in the global batch
        seg_a = gather_varlen(emb["hicl_seg_anchor"], info, with_grad=True)
        seg_p = gather_varlen(emb["hicl_seg_positive"], info, with_grad=True)
        owner = gather_varlen(owner, info, with_grad=False)
        total, loc, glob = self.loss(batch.anchor, batch.positive, seg_a, seg_p, owner)
        return [("hicl", total, None), ("hicl_local", loc, None), ("hicl_global", glob, None)]  # the first is the term


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


class HiCL(Method):
    name = "hicl"
    paper = papers.HICL
    summary = "alpha x segment-level + (1 - alpha) x sequence-level InfoNCE (HiCL §3.1-3.2 Eq. 1-2)"
    role = "contrast"
    switch = "method_settings.hicl.enabled"
    # alpha: the local loss's weight (Table 13: 0.01/0.05/0.15); segment_length: the slicing length
    # L in sentence tokens (§5.3: 32); max_tokens: sequence truncation, not max_length (A.1: 512)
    own_defaults: ClassVar[dict[str, bool | float | int]] = {"enabled": False, "alpha": 0.15, "segment_length": 32,
                                                             "max_tokens": 512}

    def enabled(self, s) -> bool:
        return self.options(s).enabled

    def validate(self, s, bad) -> None:
        o = self.options(s)
        for name in ("segment_length", "max_tokens"):
            if getattr(o, name) < 1:
                bad(f"method_settings.hicl.{name}", "must be >= 1")
        if not 0 <= o.alpha <= 1:
            bad("method_settings.hicl.alpha", "must be in [0, 1]")
        from hardneg.train.methods import methods

        if o.enabled and methods()["margin"].enabled(s):
            bad("method_settings.hicl.enabled", "HiCL wraps SimCSE and SNCSE (the paper's baselines); not OssCSE's margin")

    def build(self, s, encoder) -> Term:
        o = self.options(s)
        return _Term(o.alpha, s.temperature)


METHOD = HiCL()
