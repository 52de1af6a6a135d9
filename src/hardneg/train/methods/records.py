"""Plain records of the method registry (no torch import: the CLI's help lists presets cheaply):
a paper and a preset over methods."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Paper:
    """A paper a method or preset follows: its short name and a stable link (None: none confirmed)."""

    name: str
    url: str | None


@dataclass(frozen=True)
class Preset:
    """A named configuration over methods with a paper's hyper-parameters: what ``train.methods``
    lists and the report's rows are. ``settings`` is a partial TrainSettings (config overrides win);
    ``init_model`` a backbone the preset fixes for itself (replaces ``train.init_model``);
    ``also`` further papers it combines (model-card citations)."""

    name: str
    paper: Paper | None
    source: str  # the paper section / reference file its values come from (report's method table)
    settings: dict[str, Any]
    init_model: str | None = None
    also: tuple[str, ...] = ()
