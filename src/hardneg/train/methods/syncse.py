"""SynCSE (Eq. 5-7): a projection head replaces SimCSE's MLP, k pool negatives above a cosine
threshold delta join each anchor (``hardneg.train.negindex``), loss a confidence-weighted
NT-Xent. Degenerate weights and a pool too small are counted fallbacks."""

from __future__ import annotations

from typing import ClassVar

from hardneg.train import distributed as D
from hardneg.train import views
from hardneg.train.fallbacks import FallbackCounts
from hardneg.train.methods import papers
from hardneg.train.methods.unit import Batch, Method, Term
from hardneg.train.objectives import syncse


class _Term(Term):
    def __init__(self, o, temperature: float) -> None:
        super().__init__()
        self.counts = FallbackCounts(global_keys=syncse.FALLBACKS)
        self.loss = syncse.WeightedNTXent(temperature, o.weights, o.in_batch, self.counts)

    def forward(self, batch: Batch):
        emb = batch.emb
        n_local = emb["anchor"].shape[0]
        neg = emb["syncse"].reshape(n_local, -1, emb["syncse"].shape[-1])
        return [("syncse", self.loss(batch.anchor, batch.positive, D.gather_with_grad(neg, batch.info)), None)]


class SynCSE(Method):
    name = "syncse"
    paper = papers.SYNCSE
    summary = "projection head, k corpus-pool negatives above delta, weighted NT-Xent (SynCSE Eq. 5-7)"
    role = "contrast"
    switch = "method_settings.syncse.enabled"
    # negatives: k pool negatives per anchor above the cosine threshold delta (Eq. 6), the pool
    # re-encoded every refresh_every steps; pool_size: None = the whole training corpus; in_batch:
    # keep in-batch negatives besides the pool's; weights: Eq. 7 confidence weights; projection_dropout:
    # the projection head's (Eq. 5). The paper gives no values: ours (docs/deviations.md)
    own_defaults: ClassVar[dict[str, object]] = {"enabled": False, "negatives": 4, "delta": 0.6, "refresh_every": 1000, "pool_size": None,
                                                 "in_batch": True, "weights": "alignment", "projection_dropout": 0.1}
    nullable: ClassVar[dict[str, type]] = {"pool_size": int}

    def enabled(self, s) -> bool:
        return self.options(s).enabled

    def validate(self, s, bad) -> None:
        o = self.options(s)
        for name in ("negatives", "refresh_every"):
            if getattr(o, name) < 1:
                bad(f"method_settings.syncse.{name}", "must be >= 1")
        if not 0 <= o.projection_dropout < 1:
            bad("method_settings.syncse.projection_dropout", "must be in [0, 1)")
        if not -1 <= o.delta <= 1:
            bad("method_settings.syncse.delta", "is a cosine threshold: must be in [-1, 1]")
        if o.weights not in syncse.WEIGHTS:
            bad("method_settings.syncse.weights", f"must be one of {', '.join(syncse.WEIGHTS)}")
        if o.pool_size is not None and o.pool_size < 2:
            bad("method_settings.syncse.pool_size", "must be an integer >= 2 or null (the whole training corpus)")

    def build(self, s, encoder) -> Term:
        return _Term(self.options(s), s.temperature)

    def prepare_encoder(self, encoder, s) -> None:
        """Its projection head (Eq. 5 + dropout) replaces SimCSE's training-only MLP."""
        encoder.mlp = syncse.projection(int(encoder.backbone.config.hidden_size), self.options(s).projection_dropout)

    def negative_index(self, s, texts):
        """The corpus-pool index the step's ``syncse`` view is drawn from."""
        from hardneg.train.negindex import NegativeIndex

        o = self.options(s)
        return NegativeIndex(texts, o.negatives, o.delta, o.refresh_every, s.seed, o.pool_size,
                             template=views.view_template(s, "anchor"))


METHOD = SynCSE()
