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
    def __init__(self, o, temperature: float, eps: float, ties: bool) -> None:
        super().__init__()
        self.o = o
        self.consistency = RankingConsistency(temperature, o.consistency_form) if o.consistency_weight > 0 else None
        self.distill = (RankingDistillation(o.distill_tau, o.distill_loss, eps, ties)
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
    switch = "method_settings.ranking.distill_weight"
    # beta (consistency) and gamma (distillation) of SAN Eq. 6, the JS form, the ranking loss and
    # its tau2; ListMLE's eps and the teachers' precision are shared with ListMLE+SAN (top-level)
    own_defaults: ClassVar[dict[str, float | str]] = {
        "consistency_weight": 0.0, "consistency_form": "js",
        "distill_weight": 0.0, "distill_loss": "listmle", "distill_tau": 0.05,
    }

    def enabled(self, s) -> bool:
        o = self.options(s)
        return o.consistency_weight > 0 or o.distill_weight > 0

    def teaches(self, s) -> bool:
        return self.options(s).distill_weight > 0

    def validate(self, s, bad) -> None:
        o = self.options(s)
        for name, choices in (("distill_loss", DISTILL_LOSSES), ("consistency_form", CONSISTENCY_FORMS)):
            if getattr(o, name) not in choices:
                bad(f"method_settings.ranking.{name}", f"must be one of {', '.join(choices)}")
        if o.distill_tau <= 0:
            bad("method_settings.ranking.distill_tau", "must be > 0")
        for name in ("consistency_weight", "distill_weight"):
            if getattr(o, name) < 0:
                bad(f"method_settings.ranking.{name}", "must be >= 0")

    def build(self, s, encoder) -> Term:
        return _Term(self.options(s), s.temperature, s.listmle_eps, s.teacher_precision == "fp16")


METHOD = Ranking()
