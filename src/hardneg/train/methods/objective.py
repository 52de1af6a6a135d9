"""The one dispatcher: the configured methods' terms combined into the loss (SimCSE's
``models.py`` read, one term per method module as sentence-transformers keeps one loss per module).

loss = contrast + sum(weight x global term) + sum(weight x local term), e.g. SAN Eq. 6:
beta*Lcons + gamma*LListMLE + LHiNCE + lambda*LListMLE+SAN; Eq. 7: mu*LBML + lambda*LListMLE +
zeta*LHiNCE + beta*LListMLE+SAN (zeta = 1); OssCSE Eq. 5: L = lc + lr + lambda*lm.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from hardneg.train import distributed as D
from hardneg.train.methods import methods as registered
from hardneg.train.methods.unit import Batch, Method

if TYPE_CHECKING:
    from hardneg.train.fallbacks import FallbackCounts
    from hardneg.train.model import ContrastiveEncoder
    from hardneg.train.negindex import NegativeIndex
    from hardneg.train.settings import TrainSettings


def active(s: TrainSettings) -> list[Method]:
    """The run's methods in the order their terms are added: its contrast method (InfoNCE unless
    another brings one), then the global, then the local ones."""
    units = [m for m in registered().values() if m.enabled(s)]
    contrast = [m for m in units if m.role == "contrast" and not m.default]
    if not contrast:
        contrast = [m for m in units if m.default]
    return contrast + [m for m in units if m.role == "global"] + [m for m in units if m.role == "local"]


def validate(s: TrainSettings, bad) -> None:
    """Every method's own checks, then one contrast term per run."""
    for m in registered().values():
        m.validate(s, bad)
    chosen = [m for m in registered().values()
              if m.role == "contrast" and not m.default and m.enabled(s)]
    _validate_negative_views(s, bad)
    if len(chosen) > 1:
        first, second = chosen[0], chosen[1]
        if first.switch == "negatives":  # HiNCE or the mined hard negative
            bad(second.switch, "replaces the InfoNCE term: needs negatives: none")
        names = ", ".join(m.name for m in registered().values()
                          if m.role == "contrast" and m.name != "hince" and not m.default)
        bad(second.switch, f"cannot be combined with {first.name} (one of {names} per run)")


def data_views(s: TrainSettings, order: tuple[str, ...], extra: tuple[str, ...] = ()) -> dict[str, str]:
    """view -> augmentation column for every view the run's methods read and ``extra``, views in
    ``order`` (others sorted after). A view one of the run's methods declares ``swappable`` reads
    the column ``negative_views`` names for it (for every method reading that view)."""
    units = active(s)
    swap = {v: c for v, c in (s.negative_views or {}).items() if any(v in m.swappable for m in units)}
    wanted = {v for m in units for v in m.columns} | set(extra)
    return {v: swap.get(v, v) for v in [v for v in order if v in wanted] + sorted(wanted - set(order))}


def needed_columns(s: TrainSettings, order: tuple[str, ...], extra: tuple[str, ...] = ()) -> list[str]:
    """Augmentation columns the run's views read (:func:`data_views`), each once, in view order."""
    return list(dict.fromkeys(data_views(s, order, extra).values()))


def _validate_negative_views(s: TrainSettings, bad) -> None:
    """negative_views names views a method of the run lets read another augmentation column."""
    if s.negative_views is None:
        return
    if not isinstance(s.negative_views, dict):
        bad("negative_views", "must be a mapping view -> augmentation column, e.g. {san: mined}")
    from hardneg.augment import units as augmenters

    units = active(s)
    swappable = {v: m.name for m in units for v in m.swappable}
    for view, col in s.negative_views.items():
        if view not in swappable:
            known = ", ".join(f"{v} ({m.name})" for m in registered().values() for v in m.swappable)
            bad("negative_views", f"view {view!r}: no method of this run reads it from another column "
                                  f"(swappable views: {known})")
        if col not in augmenters.columns():
            bad("negative_views", f"view {view!r}: {col!r} is not an augmentation column "
                                  f"(known: {', '.join(augmenters.columns())})")
    if s.negative_views.get("negation", "negation") != "negation" and s.negation_period_fallback:
        bad("negative_views", "negation_period_fallback rewrites the negation as 'Not ' + sentence: "
                              "not with the negation view taken from another column")
    if s.negative_views.get("san", "san") != "san" and s.post_process:
        bad("negative_views", "post_process replaces dropped SAN negatives by the negation: set "
                              "post_process: false when the SAN view is taken from another column")


def needs_teacher(s: TrainSettings) -> bool:
    """True when one of the run's methods ranks by teacher similarities (RankCSE / SAN Eq. 5-7)."""
    return any(m.teaches(s) for m in active(s))


def prepare_encoder(encoder: ContrastiveEncoder, s: TrainSettings) -> None:
    """Each of the run's methods changes the encoder as it needs (SynCSE's projection head)."""
    for m in active(s):
        m.prepare_encoder(encoder, s)


class Objective(nn.Module):
    """The configured loss. ``forward`` returns (loss to back-propagate, logged components);
    global-batch terms are scaled by the world size so that DDP's gradient averaging gives the
    single-device gradient."""

    def __init__(self, s: TrainSettings, encoder: ContrastiveEncoder) -> None:
        super().__init__()
        self.s = s
        self.units = active(s)
        self.terms = nn.ModuleDict({m.name: m.build(s, encoder) for m in self.units})

    def forward(self, emb: dict[str, torch.Tensor], info: D.DistInfo,
                teacher_sims: dict[str, torch.Tensor] | None = None) -> tuple[torch.Tensor, dict[str, float]]:
        batch = Batch(emb, info, teacher_sims, D.gather_with_grad(emb["anchor"], info),
                      D.gather_with_grad(emb["positive"], info))
        parts: dict[str, torch.Tensor] = {}
        global_terms = local_terms = None
        for m in self.units:
            items = self.terms[m.name](batch)
            if m.role == "contrast":
                parts.update((name, value) for name, value, _ in items)
                global_terms = items[0][1]
                continue
            if m.role == "local" and local_terms is None:
                local_terms = torch.zeros((), device=batch.anchor.device)
            for name, value, weight in items:
                parts[name] = value
                term = value if weight is None else weight * value
                if m.role == "global":
                    global_terms = global_terms + term
                else:
                    local_terms = local_terms + term
        if local_terms is None:
            local_terms = torch.zeros((), device=batch.anchor.device)
        total = global_terms + local_terms
        backward = global_terms * info.world_size + local_terms
        # detached tensors: the trainer reads them back only at logging steps (no per-step sync)
        logged = {k: v.detach() for k, v in parts.items()}
        logged["loss"] = total.detach()
        return backward, logged

    def after_optimizer_step(self, lr: float) -> None:
        """Each term's post-step update (OssCSE's decoupled recall pull)."""
        for term in self.terms.values():
            term.after_optimizer_step(lr)

    def negative_index(self, texts: list[str]) -> NegativeIndex | None:
        """The corpus-pool index a method draws each step's extra view from (SynCSE), else None."""
        for m in self.units:
            if (index := m.negative_index(self.s, texts)) is not None:
                return index
        return None

    def counters(self, index: NegativeIndex | None = None) -> dict[str, FallbackCounts]:
        """The run's fallback counters by name (what a checkpoint saves and restores per rank)."""
        out = {name: t.counts for name, t in self.terms.items() if t.counts is not None}
        if index is not None:
            out["index"] = index.counts
        return out

    def fallbacks(self, index: NegativeIndex | None, info: D.DistInfo) -> dict[str, Any]:
        """Fallback totals for summary.json (call on every rank: local counters are all-reduced)."""
        out: dict[str, Any] = {}
        for counts in self.counters(index).values():
            out.update(counts.as_dict(info))
        if index is not None:
            out["syncse_k_used"] = index.k
        return out
