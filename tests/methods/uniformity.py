"""A method defined outside the package (``train.method_modules``): SimCSE plus Wang & Isola's
uniformity term (ICML 2020, "Understanding Contrastive Representation Learning through Alignment
and Uniformity on the Hypersphere", Eq. 3), log E[exp(-t ||x - y||^2)] over the batch's pairs of
normalised anchor embeddings, weighted. The workflow trains, evaluates and reports it like a
built-in method (tests/test_method_extension.py, overlay tests/methods/own_method.yaml)."""

from __future__ import annotations

from typing import ClassVar

import torch
import torch.nn.functional as F

from hardneg.train.methods import Paper, Preset, preset
from hardneg.train.methods.unit import Batch, Method, Term

PAPER = Paper("Alignment and Uniformity", "https://arxiv.org/abs/2005.10242")


def uniformity(x: torch.Tensor, t: float) -> torch.Tensor:
    """log of the mean Gaussian potential exp(-t ||x_i - x_j||^2) over pairs i < j (Eq. 3)."""
    z = F.normalize(x, dim=-1)
    return torch.pdist(z, p=2).pow(2).mul(-t).exp().mean().log()


class _Term(Term):
    def __init__(self, weight: float, t: float) -> None:
        super().__init__()
        self.weight, self.t = weight, t

    def forward(self, batch: Batch):
        return [("uniformity", uniformity(batch.anchor, self.t), self.weight)]


class Uniformity(Method):
    name = "uniformity"
    paper = PAPER
    summary = "weight x log E exp(-t ||x - y||^2) over the gathered anchors (Wang & Isola 2020 Eq. 3)"
    role = "global"
    own_defaults: ClassVar[dict[str, float]] = {"weight": 0.1, "t": 2.0}  # t = 2: the paper's choice (§4.2)

    def enabled(self, s) -> bool:
        return "uniformity" in (s.method_settings or {}) and self.options(s).weight > 0

    def validate(self, s, bad) -> None:
        if "uniformity" not in (s.method_settings or {}):
            return
        o = self.options(s)
        for name in ("weight", "t"):
            value = getattr(o, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                bad("method_settings", f"uniformity.{name}: must be a number >= 0")

    def build(self, s, encoder) -> Term:
        o = self.options(s)
        return _Term(o.weight, o.t)


METHOD = Uniformity()
PRESETS = [Preset("simcse_uniformity", PAPER, "SimCSE's setting + 0.1 x uniformity (Wang & Isola 2020 Eq. 3, t = 2)",
                  {**preset("simcse").settings, "method_settings": {"uniformity": {"weight": 0.1}}})]
