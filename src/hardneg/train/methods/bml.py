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
    switch = "bml_weight"
    columns = ("negation",)
    swappable = ("negation",)  # negative_views: {negation: mined} trains on the mined neighbour instead
    settings: ClassVar[dict[str, str]] = {"negative_views": "negative_views", "weight": "bml_weight", "alpha": "bml_alpha", "beta": "bml_beta"}

    def enabled(self, s) -> bool:
        return s.bml_weight > 0

    def validate(self, s, bad) -> None:
        if s.bml_weight < 0:
            bad("bml_weight", "must be >= 0")

    def build(self, s, encoder) -> Term:
        o = self.options(s)
        return _Term(o.weight, o.alpha, o.beta)


METHOD = BML()
