"""SNCSE's bidirectional margin loss on the soft negative (Wang et al. 2022 §3; SAN Eq. 4)."""

from __future__ import annotations

from typing import ClassVar

from hardneg.train.methods import papers
from hardneg.train.methods.unit import Batch, Method, Term
from hardneg.train.objectives import BidirectionalMargin


class _Term(Term):
    def __init__(self, weight: float, alpha: float, beta: float) -> None:
        super().__init__()
        self.weight = weight
        self.loss = BidirectionalMargin(alpha, beta)

    def forward(self, batch: Batch):
        e = batch.emb
        return [("bml", self.loss(e["anchor"], e["positive"], e["negation"]), self.weight)]


class BML(Method):
    name = "bml"
    paper = papers.SNCSE
    summary = "lambda x bidirectional margin between positive and negation similarity (SNCSE §3)"
    role = "local"
    switch = "method_settings.bml.weight"
    columns = ("negation",)
    swappable = ("negation",)  # negative_views: {negation: mined} trains on the mined neighbour instead
    # weight lambda (SAN Eq. 4; SNCSE's 1e-3 in the presets), margins alpha and beta (SNCSE §3)
    own_defaults: ClassVar[dict[str, float]] = {"weight": 0.0, "alpha": 0.1, "beta": 0.3}

    def enabled(self, s) -> bool:
        return self.options(s).weight > 0

    def validate(self, s, bad) -> None:
        if self.options(s).weight < 0:
            bad("method_settings.bml.weight", "must be >= 0")

    def build(self, s, encoder) -> Term:
        o = self.options(s)
        return _Term(o.weight, o.alpha, o.beta)


METHOD = BML()
