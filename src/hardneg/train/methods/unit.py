"""What a training method is: one self-describing unit (``Method``), the loss module it builds
(``Term``) and the batch its terms read (``Batch``).

A method contributes loss terms in one of three roles, which is how the dispatcher
(``hardneg.train.methods.objective.Objective``) combines them:

- ``contrast``: the term over the gathered global batch that every run has exactly one of
  (InfoNCE, or the one that replaces it: HiNCE, HNCSE, HiCL, SynCSE);
- ``global``: further weighted terms over the gathered batch (ListMLE+SAN, RankCSE's terms);
- ``local``: weighted terms over this device's rows (SNCSE's BML, OssCSE's margin and recall).

The dispatcher scales global terms by the world size (DDP averages gradients), local ones not.
Papers and presets are plain records (``hardneg.train.methods.records``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from torch import nn

from hardneg.train import distributed as D
from hardneg.train.methods.records import Paper

if TYPE_CHECKING:
    from hardneg.train.model import ContrastiveEncoder
    from hardneg.train.negindex import NegativeIndex
    from hardneg.train.settings import TrainSettings

ROLES = ("contrast", "global", "local")
Bad = Callable[[str, str], None]  # TrainSettings.validate's error: bad(setting, why) raises


@dataclass
class Batch:
    """One step's embeddings as the terms read them: ``emb`` holds this device's views (anchor,
    positive, negation, paraphrase, san, ... and the HiCL/SynCSE extras); ``anchor`` and
    ``positive`` are gathered over the global batch; ``gathered`` gathers any other view once."""

    emb: dict[str, torch.Tensor]
    info: D.DistInfo
    teacher_sims: dict[str, torch.Tensor] | None
    anchor: torch.Tensor
    positive: torch.Tensor
    _gathered: dict[str, torch.Tensor] = field(default_factory=dict)

    def gathered(self, view: str) -> torch.Tensor:
        """``view`` all-gathered with gradient (computed at the first call, then reused)."""
        if view not in self._gathered:
            self._gathered[view] = D.gather_with_grad(self.emb[view], self.info)
        return self._gathered[view]


class Term(nn.Module):
    """The loss module a method builds for one run. ``forward(batch)`` returns
    ``[(logged name, value, weight)]`` in the order they are added; weight None adds the value as
    it is (OssCSE's recall, whose gamma is inside it). A contrast term's first item is the term,
    further items are logged only (HiCL's local and global parts)."""

    counts = None  # a FallbackCounts when the method counts fallbacks (reported in summary.json)

    def forward(self, batch: Batch) -> list[tuple[str, torch.Tensor, float | None]]:  # pragma: no cover
        raise NotImplementedError

    def after_optimizer_step(self, lr: float) -> None:
        """Called after each optimizer step (OssCSE's decoupled recall pull); default: nothing."""


class Method:
    """One training method. A subclass sets the class attributes and implements ``enabled`` and
    ``build``; ``validate``, ``prepare_encoder`` and ``negative_index`` are optional.

    A method's own settings live in one mapping under its name in the train setting
    ``method_settings`` (``{hicl: {alpha: 0.15}}``), for the built-in methods as for a researcher's
    own (``train.method_modules``): ``own_defaults`` declares them with their defaults (a built-in
    method's equal the config schema's ``train.overrides.method_settings.<name>``, tied by a test),
    ``nullable`` the type of those whose default is None, and ``options(s)`` gives them as one
    object, defaults filled in. Settings several methods read (temperature, negatives, teachers,
    listmle_eps, ...) stay top-level train settings and are read from ``s``."""

    name: ClassVar[str]
    paper: ClassVar[Paper]
    summary: ClassVar[str]  # one line: what the method adds, with the paper section
    role: ClassVar[str]
    # the setting that turns it on, named in errors (dotted: method_settings.bml.weight)
    switch: ClassVar[str] = "method_settings"
    default: ClassVar[bool] = False  # InfoNCE: the contrast term when no other method brings one
    columns: ClassVar[tuple[str, ...]] = ()  # augmentation columns (views) its terms read
    # views of ``columns`` whose text the train setting negative_views may take from another
    # augmentation column (HiNCE's san, BML's negation: e.g. {san: mined}); the view keeps its encoding
    swappable: ClassVar[tuple[str, ...]] = ()
    own_defaults: ClassVar[dict[str, Any]] = {}  # its own settings (method_settings.<name>) and defaults
    nullable: ClassVar[dict[str, type]] = {}  # own settings whose default is None -> their type when set

    def present(self, s: TrainSettings) -> bool:
        """True when the run's ``method_settings`` has an entry for this method."""
        return self.name in (s.method_settings or {})

    def enabled(self, s: TrainSettings) -> bool:
        raise NotImplementedError

    def views(self, s: TrainSettings) -> dict[str, str]:
        """view -> the augmentation column its text comes from (a ``swappable`` view: the column
        ``negative_views`` names, else its own)."""
        swap = s.negative_views or {}
        return {c: swap.get(c, c) if c in self.swappable else c for c in self.columns}

    def teaches(self, s: TrainSettings) -> bool:
        """True when its terms rank by teacher similarities (``Batch.teacher_sims``)."""
        return False

    def validate(self, s: TrainSettings, bad: Bad) -> None:
        """Check the method's own settings (called for every run; ``bad`` raises)."""

    def build(self, s: TrainSettings, encoder: ContrastiveEncoder) -> Term:
        raise NotImplementedError

    def options(self, s: TrainSettings) -> SimpleNamespace:
        """The method's own settings as one object (``opts.alpha``), defaults filled in."""
        return SimpleNamespace(**{**self.own_defaults, **((s.method_settings or {}).get(self.name) or {})})

    def prepare_encoder(self, encoder: ContrastiveEncoder, s: TrainSettings) -> None:
        """Change the encoder before training (SynCSE's projection head); default: nothing."""

    def negative_index(self, s: TrainSettings, texts: list[str]) -> NegativeIndex | None:
        """State over the training corpus that feeds each step's extra view (SynCSE's pool); default: none."""
        return None

    def describe(self) -> dict[str, Any]:
        """The method as data (``hardneg train --list-methods``)."""
        return {"name": self.name, "paper": self.paper.name, "url": self.paper.url, "role": self.role,
                "columns": list(self.columns), "swappable": list(self.swappable),
                "settings": {f"method_settings.{self.name}.{k}": v for k, v in self.own_defaults.items()},
                "switch": self.switch, "summary": self.summary}
