"""Training settings: one flat, validated record per run (a preset plus overrides)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from hardneg.encoders.pooling import POOLERS

PRECISIONS = ("auto", "fp32", "bf16", "fp16")
NEGATIVES = ("none", "san")
# Settings that do not change what is computed: a checkpoint stays resumable across them.
# compile: how, not what, is computed (like the GPU model): a run may resume with it toggled
NON_STRUCTURAL = frozenset({"eval_every", "checkpoint_every", "log_every", "show_progress", "compile"})


@dataclass
class TrainSettings:
    """Every knob of one training run. Defaults are unsupervised SimCSE's (notes: SimCSE)."""

    method: str = "simcse"
    init_model: str = "bert-base-uncased"
    # representation: SimCSE trains [CLS] + an MLP and evaluates [CLS] before the MLP
    pooler: str = "cls_before_pooler"
    mlp_only_train: bool = True
    templates: list[str] | None = None  # [anchor view, positive view] for pooler "mask"
    max_length: int = 32  # training inputs: tokens incl. special and prompt tokens (SimCSE: 32)
    # evaluation/export inputs: SimCSE evaluates untruncated sentences, so not the training 32
    eval_max_length: int = 128
    dropout: float | None = None  # None: the model's own hidden/attention dropout (0.1 for BERT)
    # optimisation
    batch_size: int = 64  # per device; global batch = batch_size x world size
    lr: float = 3e-5
    epochs: int = 1
    max_steps: int | None = None
    warmup_ratio: float = 0.0
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    precision: str = "auto"
    seed: int = 42
    # InfoNCE / HiNCE
    temperature: float = 0.05
    negatives: str = "none"
    tau2: float = 0.08
    san_dropout: float = 0.2
    # SNCSE bidirectional margin on negations
    bml_weight: float = 0.0
    bml_alpha: float = 0.1
    bml_beta: float = 0.3
    # OssCSE two-way max margin (paraphrase vs negation) and recall loss
    margin_weight: float = 0.0
    margin_alpha: float = 0.05
    margin_beta: float = 0.2
    recall_gamma: float = 0.0
    # ListMLE over anchor-SAN similarities ranked by a teacher (SAN Eq. 5)
    listmle_weight: float = 0.0
    listmle_tau: float = 0.05
    teacher_model: str | None = None  # None: the initial model
    teacher_pooler: str = "avg"
    post_process: bool = False  # replace dropped SAN negatives by the SNCSE negation
    # model selection on STS-B dev (null: all 1500 pairs; an integer subsamples: CI only)
    dev_max_pairs: int | None = None
    # bookkeeping
    eval_every: int = 125
    checkpoint_every: int = 125
    log_every: int = 10
    show_progress: bool = True
    compile: bool = False  # torch.compile the backbone (CUDA graphs on CUDA), batches padded to max_length

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ValueError naming the offending setting."""

        def bad(name: str, why: str) -> None:
            raise ValueError(f"train setting '{name}': {why} (got {getattr(self, name)!r})")

        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(f.default, bool):
                if not isinstance(value, bool):
                    bad(f.name, "must be true or false")
            elif isinstance(f.default, (int, float)) or f.name in ("max_steps", "dropout", "dev_max_pairs"):
                if value is None and f.name in ("max_steps", "dropout", "dev_max_pairs"):
                    continue
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    bad(f.name, "must be a number")
                if isinstance(f.default, int) and not isinstance(f.default, bool) and not float(value).is_integer():
                    bad(f.name, "must be an integer")
        if self.pooler not in POOLERS:
            bad("pooler", f"must be one of {', '.join(POOLERS)}")
        if self.pooler == "mask" and (not self.templates or len(self.templates) != 2):
            bad("templates", "pooler 'mask' needs two prompt template names [anchor, positive]")
        if self.precision not in PRECISIONS:
            bad("precision", f"must be one of {', '.join(PRECISIONS)}")
        if self.negatives not in NEGATIVES:
            bad("negatives", f"must be one of {', '.join(NEGATIVES)}")
        for name in ("batch_size", "max_length", "eval_max_length", "epochs", "eval_every", "checkpoint_every", "log_every"):
            if getattr(self, name) < 1:
                bad(name, "must be >= 1")
        if self.batch_size < 2:
            bad("batch_size", "in-batch negatives need at least 2 sentences per device")
        if self.dev_max_pairs is not None and self.dev_max_pairs < 3:
            bad("dev_max_pairs", "must be >= 3 or null")
        if self.max_steps is not None and self.max_steps < 1:
            bad("max_steps", "must be >= 1 or null")
        for name in ("lr", "temperature", "tau2", "listmle_tau"):
            if getattr(self, name) <= 0:
                bad(name, "must be > 0")
        for name in ("san_dropout", "warmup_ratio"):
            if not 0 <= getattr(self, name) < 1:
                bad(name, "must be in [0, 1)")
        if self.dropout is not None and not 0 <= self.dropout < 1:
            bad("dropout", "must be in [0, 1) or null")
        for name in ("bml_weight", "margin_weight", "recall_gamma", "listmle_weight", "weight_decay", "grad_clip"):
            if getattr(self, name) < 0:
                bad(name, "must be >= 0")
        if self.listmle_weight > 0 and self.negatives != "san":
            bad("listmle_weight", "ListMLE+SAN needs negatives: san")

    # ----- which augmentation columns the objectives read -----
    def needed_columns(self) -> list[str]:
        """Augmentation columns the configured objectives need, besides the corpus text."""
        cols = []
        if self.negatives == "san":
            cols.append("san")
        if self.bml_weight > 0 or self.margin_weight > 0 or self.post_process:
            cols.append("negation")
        if self.margin_weight > 0:
            cols.append("paraphrase")
        return cols

    @property
    def export_pooler(self) -> str:
        """The pooler evaluation uses: never SimCSE's training-only MLP."""
        return self.pooler

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def fingerprint(self, world_size: int = 1) -> str:
        """Hash of everything that changes what training computes (for resume compatibility)."""
        d = {k: v for k, v in self.to_dict().items() if k not in NON_STRUCTURAL}
        d["world_size"] = world_size
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrainSettings:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown train setting(s): {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        return cls(**d)
