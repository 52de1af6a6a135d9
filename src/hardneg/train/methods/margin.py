"""OssCSE's two-way max margin between paraphrase and negation (OssCSE §4 Eq. 3)."""

from __future__ import annotations

from typing import ClassVar

from hardneg.train.methods import papers
from hardneg.train.methods.unit import Batch, Method, Term
from hardneg.train.objectives import TwoWayMaxMargin


class _Term(Term):
    def __init__(self, weight: float, alpha: float, beta: float) -> None:
        super().__init__()
        self.weight = weight
        self.loss = TwoWayMaxMargin(alpha, beta)

    def forward(self, batch: Batch):
        e = batch.emb
        return [("margin", self.loss(e["anchor"], e["paraphrase"], e["negation"]), self.weight)]


class TwoWayMargin(Method):
    name = "margin"
    paper = papers.OSSCSE
    summary = "lambda x two-way max margin: paraphrase closer than negation (OssCSE §4 Eq. 3)"
    role = "local"
    switch = "method_settings.margin.weight"
    columns = ("negation", "paraphrase")
    # lambda, alpha, beta of OssCSE Eq. 3 (Appendix A values in the osscse preset)
    own_defaults: ClassVar[dict[str, float]] = {"weight": 0.0, "alpha": 0.05, "beta": 0.2}

    def enabled(self, s) -> bool:
        return self.options(s).weight > 0

    def validate(self, s, bad) -> None:
        if self.options(s).weight < 0:
            bad("method_settings.margin.weight", "must be >= 0")

    def build(self, s, encoder) -> Term:
        o = self.options(s)
        return _Term(o.weight, o.alpha, o.beta)


METHOD = TwoWayMargin()
