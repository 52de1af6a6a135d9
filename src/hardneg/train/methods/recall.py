"""OssCSE's recall loss (OssCSE Eq. 4-5): gamma/2 x the squared distance of the backbone's
weights from the pretrained ones, in the loss (coupled, as written) or as a RecAdam-style pull
after each optimizer step (decoupled; Chen et al. 2020)."""

from __future__ import annotations

from typing import ClassVar

from hardneg.train.methods import papers
from hardneg.train.methods.unit import Batch, Method, Term
from hardneg.train.objectives import RecallLoss

RECALL_FORMS = ("coupled", "decoupled")


class _Term(Term):
    def __init__(self, encoder, gamma: float, form: str) -> None:
        super().__init__()
        self.form = form
        # the pretrained model's parameters (OssCSE Eq. 4)
        self.params = [p for p in encoder.backbone.parameters() if p.requires_grad]
        self.loss = RecallLoss([(n, p) for n, p in encoder.backbone.named_parameters() if p.requires_grad], gamma)

    def forward(self, batch: Batch):
        if self.form != "coupled":
            return []
        return [("recall", self.loss(self.params), None)]  # OssCSE Eq. 5: L = lc + lr + lambda*lm

    def after_optimizer_step(self, lr: float) -> None:
        if self.form == "decoupled":
            self.loss.decoupled_step(self.params, lr)


class Recall(Method):
    name = "recall"
    paper = papers.OSSCSE
    summary = "gamma/2 x ||theta - theta*||^2 towards the pretrained weights (OssCSE Eq. 4-5)"
    role = "local"
    switch = "method_settings.recall.gamma"
    # gamma of OssCSE Eq. 4; form: Eq. 4-5 as written (coupled: the penalty is part of the loss,
    # Adam sees its gradient) or a RecAdam-style pull applied outside Adam (decoupled; Chen et al. 2020)
    own_defaults: ClassVar[dict[str, float | str]] = {"gamma": 0.0, "form": "coupled"}

    def enabled(self, s) -> bool:
        return self.options(s).gamma > 0

    def validate(self, s, bad) -> None:
        o = self.options(s)
        if o.gamma < 0:
            bad("method_settings.recall.gamma", "must be >= 0")
        if o.form not in RECALL_FORMS:
            bad("method_settings.recall.form", f"must be one of {', '.join(RECALL_FORMS)}")

    def build(self, s, encoder) -> Term:
        o = self.options(s)
        return _Term(encoder, o.gamma, o.form)


METHOD = Recall()
