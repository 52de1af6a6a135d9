"""HNCSE's positive mixing (PM, §3.1 Eq. 2-3) and hard negative mixing (HNM, §3.2 Eq. 4, 7-8):
each replaces InfoNCE over the gathered global batch; degenerate cases are counted fallbacks."""

from __future__ import annotations

from typing import ClassVar

from hardneg.train.fallbacks import FallbackCounts
from hardneg.train.methods import papers
from hardneg.train.methods.unit import Batch, Method, Term
from hardneg.train.objectives import hncse

MODES = ("none", "pm", "hnm")


class _Term(Term):
    def __init__(self, o, temperature: float) -> None:
        super().__init__()
        if o.mode == "pm":
            self.counts = FallbackCounts(global_keys=hncse.PM_FALLBACKS)
            self.loss = hncse.PositiveMixing(temperature, o.pm_margin, o.pm_single, self.counts)
        else:
            self.counts = FallbackCounts(global_keys=hncse.HNM_FALLBACKS)
            self.loss = hncse.HardNegativeMixing(temperature, o.top_k, o.mixes, o.mix_alpha, self.counts)

    def forward(self, batch: Batch):
        return [(self.loss.name, self.loss(batch.anchor, batch.positive), None)]


class HNCSE(Method):
    name = "hncse"
    paper = papers.HNCSE
    summary = "InfoNCE with mixed positives (pm, §3.1) or synthetic hard negatives mixed from the top K (hnm, §3.2)"
    role = "contrast"
    switch = "hncse"
    settings: ClassVar[dict[str, str]] = {"mode": "hncse", "pm_margin": "hncse_pm_margin", "pm_single": "hncse_pm_single",
                "top_k": "hncse_top_k", "mixes": "hncse_mixes", "mix_alpha": "hncse_mix_alpha"}

    def enabled(self, s) -> bool:
        return s.hncse != "none"

    def validate(self, s, bad) -> None:
        if s.hncse not in MODES:
            bad("hncse", f"must be one of {', '.join(MODES)}")
        if s.hncse_mix_alpha is not None and (isinstance(s.hncse_mix_alpha, bool)
                                              or not isinstance(s.hncse_mix_alpha, (int, float))
                                              or not 0 <= s.hncse_mix_alpha <= 1):
            bad("hncse_mix_alpha", "must be a number in [0, 1] or null (Eq. 8 adaptive)")
        for name in ("hncse_top_k", "hncse_mixes"):
            if getattr(s, name) < 1:
                bad(name, "must be >= 1")
        if s.hncse_pm_margin < 0:
            bad("hncse_pm_margin", "must be >= 0")

    def build(self, s, encoder) -> Term:
        return _Term(self.options(s), s.temperature)


METHOD = HNCSE()
