"""Training rows: the corpus shards joined by sentence ``id`` with the augmentation shards.

Each objective names the augmentation columns it needs (``TrainSettings.needed_columns``); each
column is an augmenter unit's (``hardneg.augment.units``), and a shard lacking one is an error
naming the column and the rule that makes it.

Rows whose augmentation failed (the augmenter dropped them): the references train on every row,
so by default (``failed="keep"``) they stay, with the reference's value: SAN's unfiltered final
mask-predict output (the reference has no quality filter), SNCSE's ``"Not " + sentence`` for a
missing negation (train_SNCSE.py: ``negation.get(sentence, "Not " + sentence)``). A row with no
value at all (a SAN input rejected before mask-predict; a missing paraphrase, which OssCSE
selects by MER) is left out with a counted reason. What a unit does with its failed rows is its
own hook (``AugmenterUnit.fill_failed``); this module only joins, counts and drops. ``failed="drop"`` leaves every failed row out.
Both ways are counted in ``counts`` (``failed_<col>``, ``kept_failed_<col>``, ``dropped_no_<col>``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from hardneg.augment import units as augmenters
from hardneg.shards import read_shard

log = logging.getLogger(__name__)

@dataclass
class TrainingData:
    """Joined training rows plus the accounting of what was left out and why."""

    frame: pl.DataFrame  # columns: id, text, and the needed augmentation columns
    counts: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return self.frame.height

    def column(self, name: str) -> list[str]:
        return self.frame[name].to_list()


def _read(path: str | Path, columns: list[str], kind: str, rule: str | None) -> pl.DataFrame:
    path = Path(path)
    if not path.exists():
        hint = f" (made by {rule})" if rule else ""
        raise FileNotFoundError(f"{kind} shard not found: {path}{hint}")
    import pyarrow.parquet as pq

    have = set(pq.read_schema(path).names)
    for col in columns:
        if col not in have:
            hint = f"; it is made by {rule}" if rule else ""
            raise ValueError(f"{path}: column '{col}' is missing (has: {', '.join(sorted(have))}){hint}")
    return read_shard(path, columns=columns)


def check_unique_ids(frame: pl.DataFrame, path: str | Path, rule: str | None) -> None:
    """Raise naming the shard, the first repeated id and its rows: the join by id would otherwise
    repeat corpus rows (training on more rows than the corpus has)."""
    dup = frame.with_row_index("_row").filter(pl.col("id").is_duplicated())
    if dup.height:
        first = dup["id"][0]
        rows = dup.filter(pl.col("id") == first)["_row"].to_list()
        hint = f": re-run {rule}" if rule else ""
        raise ValueError(f"{path}: id {first} occurs {len(rows)} times (rows {', '.join(map(str, rows[:5]))}); "
                         f"{dup['id'].n_unique()} id(s) repeat, and every id must be unique in a shard{hint}")


def load_training_data(
    corpus_shards: Sequence[str | Path],
    augment_shards: dict[str, Sequence[str | Path]] | None = None,
    needed: Sequence[str] = (),
    post_process: bool = False,
    failed: str = "keep",
    negation_rules: str | None = None,
) -> TrainingData:
    """Join corpus shard i with augmentation shard i of each needed column, by ``id``.

    ``augment_shards`` maps a column (an augmenter unit's, e.g. ``san``, ``negation``,
    ``paraphrase``) to its shards, in the same order as ``corpus_shards``. ``failed``: keep|drop
    (module docstring); ``post_process`` (SAN Eq. 6) and ``negation_rules`` go to the units' hooks.
    """
    if failed not in ("keep", "drop"):
        raise ValueError(f"train setting 'failed_augmentation': must be keep or drop (got {failed!r})")
    augment_shards = augment_shards or {}
    if not corpus_shards:
        raise ValueError("training needs at least one corpus shard")
    options = {"failed": failed, "post_process": post_process, "negation_rules": negation_rules}
    units = {col: augmenters.by_column(col) for col in needed}
    for col, unit in units.items():
        shards = augment_shards.get(col)
        if not shards:
            raise ValueError(f"the training objective needs column '{col}', but no shards were given; "
                             f"they are made by {unit.producer}")
        if len(shards) != len(corpus_shards):
            raise ValueError(f"{len(shards)} '{col}' shards for {len(corpus_shards)} corpus shards")
    parts = []
    counts: dict[str, int] = {"rows_in": 0}
    for i, cpath in enumerate(corpus_shards):
        frame = _read(cpath, ["id", "text"], "corpus", "rule prepare_corpus (rules/data.smk)")
        check_unique_ids(frame, cpath, "rule prepare_corpus (rules/data.smk)")
        counts["rows_in"] += frame.height
        for col, unit in units.items():
            rule = unit.producer
            apath = Path(augment_shards[col][i])
            if unit.check_shard is not None:
                unit.check_shard(apath, options)
            extra = unit.read_extra(apath, options) if unit.read_extra is not None else {}
            aug = _read(apath, ["id", col, *extra], unit.name, rule)
            check_unique_ids(aug, apath, rule)
            if extra:  # kept under the unit's own names, for its fill_failed hook
                aug = aug.rename(extra)
            stray = aug.join(frame.select("id"), on="id", how="anti")
            if stray.height:
                raise ValueError(f"{apath}: {stray.height} id(s) not in corpus shard {cpath} (e.g. {stray['id'][0]}); "
                                 f"the shard is from a different corpus: re-run {rule}")
            missing = frame.select("id").join(aug, on="id", how="anti")
            if missing.height:
                raise ValueError(f"{apath}: {missing.height} corpus id(s) of {cpath} are absent (e.g. "
                                 f"{missing['id'][0]}); every corpus row must appear: re-run {rule}")
            frame = frame.join(aug, on="id", how="left", maintain_order="left")
        parts.append(frame)
    data = pl.concat(parts, how="vertical") if parts else pl.DataFrame()
    if counts["rows_in"] == 0:
        raise ValueError(f"the corpus shards are all empty ({len(corpus_shards)} shard(s), e.g. {corpus_shards[0]}): "
                         f"nothing to train on")
    ctx = augmenters.FillContext(needed=list(needed), options=options, counts=counts)

    def missing(col: str) -> pl.Series:
        return ctx.missing(data, col)

    any_failed = pl.Series([False] * data.height)
    for col in needed:
        counts[f"failed_{col}"] = int(missing(col).sum())  # what the augmenter dropped
        any_failed = any_failed | missing(col)
    # the other way: the rows left if every failed row were dropped (failed_augmentation: drop)
    counts["rows_if_failed_dropped"] = counts["rows_in"] - int(any_failed.sum())
    # each unit's value for its failed rows; a unit that reads other views' values goes after them
    for unit in sorted(units.values(), key=lambda u: bool(u.fill_reads)):
        if unit.fill_failed is not None:
            data = unit.fill_failed(data, ctx)
    keep = pl.Series([True] * data.height)
    for col in needed:
        null = missing(col)
        counts[f"dropped_no_{col}"] = int((null & keep).sum())
        keep = keep & ~null
    data = data.filter(keep)
    counts["rows_used"] = data.height
    dropped = sum(v for k, v in counts.items() if k.startswith("dropped_"))
    if counts["rows_used"] + dropped != counts["rows_in"]:  # nothing vanishes or appears silently
        raise RuntimeError(f"training rows do not add up ({counts}) for corpus shards {', '.join(map(str, corpus_shards))}")
    if data.height < 2:
        raise ValueError(f"only {data.height} usable training row(s) out of {counts['rows_in']} ({counts}): "
                         f"in-batch negatives need at least 2")
    log.info("training rows: %s", counts)
    return TrainingData(frame=data.select(["id", "text", *needed]), counts=counts)


def epoch_order(n_rows: int, seed: int, epoch: int) -> np.ndarray:
    """The row permutation of one epoch: a pure function of (seed, epoch), so a resumed run
    replays exactly the same batches whatever happened before."""
    return np.random.default_rng([seed, epoch]).permutation(n_rows)


def batches_per_epoch(n_rows: int, global_batch: int) -> int:
    """Full global batches per epoch (the tail smaller than one batch is skipped, so every
    step sees the same number of in-batch negatives)."""
    return n_rows // global_batch


def batch_rows(n_rows: int, seed: int, epoch: int, index: int, global_batch: int, rank: int, world: int) -> np.ndarray:
    """Row indices for ``rank``'s slice of global batch ``index`` of ``epoch``."""
    order = epoch_order(n_rows, seed, epoch)
    g = order[index * global_batch : (index + 1) * global_batch]
    per = global_batch // world
    return g[rank * per : (rank + 1) * per]
