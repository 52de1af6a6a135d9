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
    switch = "negatives"
    columns = ("mined",)
    settings: ClassVar[dict[str, str]] = {"temperature": "temperature", "weight": "hard_negative_weight"}

    def enabled(self, s) -> bool:
        return s.negatives == "mined"

    def validate(self, s, bad) -> None:
        if s.hard_negative_weight is not None and s.negatives != "mined":
            bad("hard_negative_weight", "weighs the mined hard negative: needs negatives: mined")

    def build(self, s, encoder) -> Term:
        o = self.options(s)
        # None: SimCSE's default hard_negative_weight 0 (simcse/models.py, ModelArguments)
        return _Term(o.temperature, o.weight or 0.0)


METHOD = HardNegative()
