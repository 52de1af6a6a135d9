"""SAN's HiNCE (SAN §3.2 Eq. 2): InfoNCE with the SAN negatives of the whole batch at their own
temperature tau2; they are encoded in a second pass at dropout p2 (``StepModel``)."""

from __future__ import annotations

from typing import ClassVar

from hardneg.train.methods import papers
from hardneg.train.methods.unit import Batch, Method, Term
from hardneg.train.objectives import HiNCE as _HiNCE


class _Term(Term):
    def __init__(self, temperature: float, tau2: float) -> None:
        super().__init__()
        self.loss = _HiNCE(temperature, tau2)

    def forward(self, batch: Batch):
        return [("hince", self.loss(batch.anchor, batch.positive, batch.gathered("san")), None)]


class HiNCE(Method):
    name = "hince"
    paper = papers.SAN
    summary = "InfoNCE plus the batch's SAN negatives at temperature tau2 (SAN §3.2 Eq. 2)"
    role = "contrast"
    switch = "negatives"
    columns = ("san",)
    swappable = ("san",)  # negative_views: {san: mined} trains on the mined neighbour instead
    settings: ClassVar[dict[str, str]] = {"negative_views": "negative_views", "temperature": "temperature", "tau2": "tau2", "dropout": "san_dropout"}

    def enabled(self, s) -> bool:
        return s.negatives == "san"

    def build(self, s, encoder) -> Term:
        o = self.options(s)
        return _Term(o.temperature, o.tau2)


METHOD = HiNCE()
