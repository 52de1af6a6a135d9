"""RankCSE's terms (Liu et al. 2023; SAN Eq. 6: beta*L_consistency + gamma*L_ListMLE): JS
consistency between the two views' in-batch similarity distributions, and ranking distillation
from the teachers."""

from __future__ import annotations

from typing import ClassVar

from hardneg.train.methods import papers
from hardneg.train.methods.unit import Batch, Method, Term
from hardneg.train.objectives import RankingConsistency, RankingDistillation

CONSISTENCY_FORMS = ("js", "reference_clamped")
DISTILL_LOSSES = ("listmle", "listnet")


class _Term(Term):
    def __init__(self, o, temperature: float, ties: bool) -> None:
        super().__init__()
        self.o = o
        self.consistency = RankingConsistency(temperature, o.consistency_form) if o.consistency_weight > 0 else None
        self.distill = (RankingDistillation(o.distill_tau, o.distill_loss, o.eps, ties)
                        if o.distill_weight > 0 else None)

    def forward(self, batch: Batch):
        out = []
        if self.consistency is not None:
            out.append(("consistency", self.consistency(batch.anchor, batch.positive), self.o.consistency_weight))
        if self.distill is not None:
            value = self.distill(batch.anchor, batch.positive, batch.teacher_sims["distill"])
            out.append((f"distill_{self.o.distill_loss}", value, self.o.distill_weight))
        return out


class Ranking(Method):
    name = "ranking"
    paper = papers.RANKCSE
    summary = ("beta x JS consistency of the two views' similarity lists + gamma x ranking distillation "
               "from the teachers (RankCSE; SAN Eq. 6)")
    role = "global"
    switch = "distill_weight"
    settings: ClassVar[dict[str, str]] = {"consistency_weight": "consistency_weight", "consistency_form": "consistency_form",
                "distill_weight": "distill_weight", "distill_loss": "distill_loss", "distill_tau": "distill_tau",
                "eps": "listmle_eps", "teacher_precision": "teacher_precision"}

    def enabled(self, s) -> bool:
        return s.consistency_weight > 0 or s.distill_weight > 0

    def teaches(self, s) -> bool:
        return s.distill_weight > 0

    def validate(self, s, bad) -> None:
        for name, choices in (("distill_loss", DISTILL_LOSSES), ("consistency_form", CONSISTENCY_FORMS)):
            if getattr(s, name) not in choices:
                bad(name, f"must be one of {', '.join(choices)}")
        if s.distill_tau <= 0:
            bad("distill_tau", "must be > 0")
        for name in ("consistency_weight", "distill_weight"):
            if getattr(s, name) < 0:
                bad(name, "must be >= 0")

    def build(self, s, encoder) -> Term:
        o = self.options(s)
        return _Term(o, s.temperature, o.teacher_precision == "fp16")


METHOD = Ranking()
