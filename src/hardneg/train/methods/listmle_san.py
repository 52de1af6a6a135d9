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
    switch = "method_settings.listmle_san.weight"
    columns = ("san",)
    # lambda (SAN Eq. 6) / beta (Eq. 7) and tau3; ListMLE's eps and the teachers' precision are
    # shared with RankCSE's distillation (top-level listmle_eps, teacher_precision)
    own_defaults: ClassVar[dict[str, float]] = {"weight": 0.0, "tau": 0.05}

    def enabled(self, s) -> bool:
        return self.options(s).weight > 0

    def teaches(self, s) -> bool:
        return self.options(s).weight > 0

    def validate(self, s, bad) -> None:
        o = self.options(s)
        if o.weight < 0:
            bad("method_settings.listmle_san.weight", "must be >= 0")
        if o.tau <= 0:
            bad("method_settings.listmle_san.tau", "must be > 0")
        if o.weight > 0 and s.negatives != "san":
            bad("method_settings.listmle_san.weight", "ListMLE+SAN needs negatives: san")

    def build(self, s, encoder) -> Term:
        o = self.options(s)
        # fp16 teacher scores tie: the reference shuffles them
        return _Term(o.weight, o.tau, s.listmle_eps, s.teacher_precision == "fp16")


METHOD = ListMLESAN()
