"""SAN's HiNCE (SAN §3.2 Eq. 2): InfoNCE with the SAN negatives of the whole batch at their own
temperature tau2; they are encoded in a second pass at dropout p2 (``StepModel``)."""

from __future__ import annotations

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
    # negatives: san turns it on. Its knobs stay top-level with that switch: tau2 (the SAN
    # negatives' temperature, the tau2 ablation family's axis) and san_dropout (how the SAN view is
    # encoded, read by ListMLE+SAN as well) parametrise the SAN negatives that negatives: san chooses
    switch = "negatives"
    columns = ("san",)
    swappable = ("san",)  # negative_views: {san: mined} trains on the mined neighbour instead

    def enabled(self, s) -> bool:
        return s.negatives == "san"

    def build(self, s, encoder) -> Term:
        return _Term(s.temperature, s.tau2)


METHOD = HiNCE()
