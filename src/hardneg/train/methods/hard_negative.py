"""Supervised SimCSE's contrast with one hard negative per sentence (Gao et al. 2021 §4 Eq. 5;
princeton-nlp/SimCSE ``simcse/models.py`` cl_forward with three sentences), the hard negative
being the corpus-mined neighbour (``hardneg.augment.mine``, column ``mined``)."""

from __future__ import annotations

from typing import ClassVar

from hardneg.train.methods import papers
from hardneg.train.methods.unit import Batch, Method, Term
from hardneg.train.objectives import HardNegativeInfoNCE


class _Term(Term):
    def __init__(self, temperature: float, weight: float) -> None:
        super().__init__()
        self.loss = HardNegativeInfoNCE(temperature, weight)

    def forward(self, batch: Batch):
        return [("infonce_hard_negative", self.loss(batch.anchor, batch.positive, batch.gathered("mined")), None)]


class HardNegative(Method):
    name = "hard_negative"
    paper = papers.SIMCSE
    summary = ("InfoNCE with each sentence's mined neighbour as its hard negative, over the whole batch's "
               "hard negatives (SimCSE §4 Eq. 5)")
    role = "contrast"
    # negatives (top-level: it picks the contrast's negative source, shared with HiNCE) turns it on
    switch = "negatives"
    columns = ("mined",)
    # the logit added to each anchor's own hard negative: SimCSE's default hard_negative_weight 0
    # (simcse/models.py, ModelArguments)
    own_defaults: ClassVar[dict[str, float]] = {"weight": 0.0}

    def enabled(self, s) -> bool:
        return s.negatives == "mined"

    def validate(self, s, bad) -> None:
        if self.present(s) and s.negatives != "mined":
            bad("method_settings.hard_negative", "weighs the mined hard negative: needs negatives: mined")

    def build(self, s, encoder) -> Term:
        return _Term(s.temperature, self.options(s).weight)


METHOD = HardNegative()
