"""SimCSE's in-batch InfoNCE (Gao et al. 2021 §3, Eq. 1): the contrast term of every run whose
methods bring no other."""

from __future__ import annotations

from hardneg.train.methods import papers
from hardneg.train.methods.unit import Batch, Method, Term
from hardneg.train.objectives import InfoNCE as _InfoNCE


class _Term(Term):
    def __init__(self, temperature: float) -> None:
        super().__init__()
        self.loss = _InfoNCE(temperature)

    def forward(self, batch: Batch):
        return [("infonce", self.loss(batch.anchor, batch.positive), None)]


class InfoNCE(Method):
    name = "infonce"
    paper = papers.SIMCSE
    summary = "in-batch InfoNCE over the global batch (SimCSE §3 Eq. 1); the default contrast term"
    role = "contrast"
    default = True  # no settings of its own: temperature is shared by every contrast term

    def enabled(self, s) -> bool:
        return True

    def build(self, s, encoder) -> Term:
        return _Term(s.temperature)


METHOD = InfoNCE()
