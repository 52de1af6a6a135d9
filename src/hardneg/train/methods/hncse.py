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
    switch = "method_settings.hncse.mode"  # on when not none
    # mode: pm (HNCSE-PM, §3.1) or hnm (HNCSE-HNM, §3.2); pm_margin: the authors' code mixes also
    # when (s_p - s_n)/s_p <= 0.1; pm_single: Table 5 HNCSE-PM_single (mix only where s_n >= s_p);
    # top_k, mixes: the authors' code's K hard negatives and s synthetic negatives per anchor;
    # mix_alpha: None = Eq. 8 adaptive, 1.0 = HNCSE-HNM_single
    own_defaults: ClassVar[dict[str, object]] = {"mode": "none", "pm_margin": 0.1, "pm_single": False,
                                                 "top_k": 10, "mixes": 40, "mix_alpha": None}
    nullable: ClassVar[dict[str, type]] = {"mix_alpha": float}

    def enabled(self, s) -> bool:
        return self.options(s).mode != "none"

    def validate(self, s, bad) -> None:
        o = self.options(s)
        if o.mode not in MODES:
            bad("method_settings.hncse.mode", f"must be one of {', '.join(MODES)}")
        if o.mix_alpha is not None and not 0 <= o.mix_alpha <= 1:
            bad("method_settings.hncse.mix_alpha", "must be a number in [0, 1] or null (Eq. 8 adaptive)")
        for name in ("top_k", "mixes"):
            if getattr(o, name) < 1:
                bad(f"method_settings.hncse.{name}", "must be >= 1")
        if o.pm_margin < 0:
            bad("method_settings.hncse.pm_margin", "must be >= 0")

    def build(self, s, encoder) -> Term:
        return _Term(self.options(s), s.temperature)


METHOD = HNCSE()
