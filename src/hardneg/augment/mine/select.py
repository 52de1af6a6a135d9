"""Which neighbours become negatives: the rank band, score ceiling/floor and margins of
:mod:`hardneg.augment.mine.settings` applied to each sentence's nearest neighbours, with a
reason for every sentence left without one and a count of what each filter removed."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hardneg.augment.mine.settings import FILTERS, POSITIVE_SCORE, MineConfig

# why a sentence has no mined negative (every sentence has exactly one status: ok or a reason)
NO_OTHER = "no_other_sentence"  # the corpus holds no text but its own
BELOW_RANGE_MIN = "below_range_min"  # admissible candidates, but no more than range_min of them
FILTERED = {f: f"filtered_{f}" for f in FILTERS}  # every candidate removed; the filter that removed most
REASONS = (NO_OTHER, *FILTERED.values(), BELOW_RANGE_MIN)


@dataclass
class Selection:
    """Per query row: chosen candidates (window columns, best first) and a reason when none."""

    columns: list[np.ndarray]  # window columns chosen, ascending (= score descending)
    ranks: list[np.ndarray]  # each chosen neighbour's rank among the row's other sentences (0 = nearest)
    reasons: list[str | None]
    skipped: dict[str, int] = field(default_factory=dict)  # candidates each filter removed


def _rejects(cfg: MineConfig, scores: np.ndarray) -> dict[str, np.ndarray]:
    """Filter -> mask of candidates it rejects (before the earlier filters are taken out)."""
    pos = POSITIVE_SCORE
    out: dict[str, np.ndarray] = {}
    if cfg.absolute_margin is not None:  # reference: scores + absolute_margin > positive
        out["absolute_margin"] = scores + np.float32(cfg.absolute_margin) > pos
    if cfg.relative_margin is not None:  # reference: scores > positive - |positive| * relative_margin
        out["relative_margin"] = scores > pos - abs(pos) * cfg.relative_margin
    if cfg.max_score is not None:
        out["max_score"] = scores > cfg.max_score
    if cfg.min_score is not None:
        out["min_score"] = scores < cfg.min_score
    return out


def select(scores: np.ndarray, positions: np.ndarray, self_positions: np.ndarray, ids: np.ndarray,
           cfg: MineConfig, seed: int) -> Selection:
    """Choose negatives for each query row.

    ``scores``/``positions``: each row's nearest distinct texts (best first, ties by position),
    as :func:`hardneg.augment.mine.search.top_neighbours` returns them, at least ``range_max + 1``
    wide where the corpus allows; ``self_positions``: each row's own text's position (excluded);
    ``ids``: the rows' ids (key of the ``random`` draw with ``seed``).
    """
    window = cfg.window()
    other = positions != self_positions[:, None]
    rank = np.cumsum(other, axis=1) - 1  # rank among the row's other sentences
    live = other & (rank < window)
    rejected_by = np.full(scores.shape, -1, dtype=np.int8)
    skipped: dict[str, int] = {}
    for f, mask in _rejects(cfg, scores).items():
        hit = live & mask
        rejected_by[hit] = FILTERS.index(f)
        skipped[f] = int(hit.sum())
        live &= ~hit
    admissible_rank = np.cumsum(live, axis=1) - 1
    eligible = live & (admissible_rank >= cfg.range_min)
    columns, ranks, reasons = [], [], []
    for r in range(scores.shape[0]):
        cols = np.flatnonzero(eligible[r])
        if cfg.sampling_strategy == "top":
            cols = cols[: cfg.num_negatives]
        elif len(cols) > cfg.num_negatives:  # random: a draw of its own per (seed, id)
            rng = np.random.default_rng([seed, int(ids[r])])
            cols = np.sort(rng.choice(cols, size=cfg.num_negatives, replace=False))
        columns.append(cols)
        ranks.append(rank[r, cols])
        if len(cols):
            reasons.append(None)
        elif not (other[r] & (rank[r] < window)).any():
            reasons.append(NO_OTHER)
        elif not live[r].any():
            counts = np.bincount(rejected_by[r][rejected_by[r] >= 0], minlength=len(FILTERS))
            reasons.append(FILTERED[FILTERS[int(np.argmax(counts))]])  # argmax: first filter on ties
        else:
            reasons.append(BELOW_RANGE_MIN)
    return Selection(columns, ranks, reasons, skipped)
