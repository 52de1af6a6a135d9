"""SAN's ListMLE+SAN (SAN Eq. 5): anchor-SAN similarities ranked by the teachers' order."""

from __future__ import annotations

from typing import ClassVar

from hardneg.train.methods import papers
from hardneg.train.methods.unit import Batch, Method, Term
from hardneg.train.objectives import ListMLESAN as _ListMLESAN


class _Term(Term):
    def __init__(self, weight: float, tau: float, eps: float, ties: bool) -> None:
        super().__init__()
        self.weight = weight
        self.loss = _ListMLESAN(tau, eps, ties)

    def forward(self, batch: Batch):
        value = self.loss(batch.anchor, batch.gathered("san"), batch.teacher_sims["san"])
        return [("listmle_san", value, self.weight)]


class ListMLESAN(Method):
    name = "listmle_san"
    paper = papers.SAN
    summary = "lambda x ListMLE of anchor-SAN similarities in the teachers' order (SAN Eq. 5-7)"
    role = "global"
    switch = "listmle_weight"
    columns = ("san",)
    settings: ClassVar[dict[str, str]] = {"weight": "listmle_weight", "tau": "listmle_tau", "eps": "listmle_eps",
                "teacher_precision": "teacher_precision"}

    def enabled(self, s) -> bool:
        return s.listmle_weight > 0

    def teaches(self, s) -> bool:
        return s.listmle_weight > 0

    def validate(self, s, bad) -> None:
        if s.listmle_weight < 0:
            bad("listmle_weight", "must be >= 0")
        if s.listmle_tau <= 0:
            bad("listmle_tau", "must be > 0")
        if s.listmle_weight > 0 and s.negatives != "san":
            bad("listmle_weight", "ListMLE+SAN needs negatives: san")

    def build(self, s, encoder) -> Term:
        o = self.options(s)
        # fp16 teacher scores tie: the reference shuffles them
        return _Term(o.weight, o.tau, o.eps, o.teacher_precision == "fp16")


METHOD = ListMLESAN()
