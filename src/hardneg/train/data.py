"""Training rows: the corpus shards joined by sentence ``id`` with the augmentation shards.

Each objective names the augmentation columns it needs (``TrainSettings.needed_columns``); a
shard lacking one is an error naming the column and the rule that makes it.

Rows whose augmentation failed (the augmenter dropped them): the references train on every row,
so by default (``failed="keep"``) they stay, with the reference's value: SAN's unfiltered final
mask-predict output (the reference has no quality filter), SNCSE's ``"Not " + sentence`` for a
missing negation (train_SNCSE.py: ``negation.get(sentence, "Not " + sentence)``). A row with no
value at all (a SAN input rejected before mask-predict; a missing paraphrase, which OssCSE
selects by MER) is left out with a counted reason. ``failed="drop"`` leaves every failed row out.
Both ways are counted in ``counts`` (``failed_<col>``, ``kept_failed_<col>``, ``dropped_no_<col>``).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from hardneg.shards import read_shard

log = logging.getLogger(__name__)

# column -> (shard kind, the rule (file) that produces it)
SOURCES: dict[str, tuple[str, str]] = {
    "san": ("san", "the SAN augmentation rule in rules/san.smk (helper san_shard)"),
    "negation": ("negation", "the negation rule in rules/negation.smk (helper negation_shard)"),
    "paraphrase": ("paraphrase", "the back-translation rule in rules/backtranslation.smk (helper paraphrase_shard)"),
    "mined": ("mined", "the mine_shard rule in rules/mine.smk (helper mined_shard)"),
}


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


def check_negation_rules(path: str | Path, expected: str) -> None:
    """Raise naming ``train.negation_rules`` when the negation shard's manifest (``<shard>.json``,
    key ``rules``) records other rules than the run expects. Manifests without the key predate
    the rules option: they are accepted."""
    manifest = Path(path).with_suffix(".json")
    if not manifest.exists():
        return
    try:
        rules = json.loads(manifest.read_text()).get("rules")
    except (ValueError, AttributeError):
        return
    if isinstance(rules, dict):
        rules = rules.get("name") or rules.get("rules")
    if rules is not None and rules != expected:
        raise ValueError(f"{path}: negation shard made with rules {rules!r} (manifest {manifest}), but train "
                         f"setting 'negation_rules' expects {expected!r}: set negation.rules: {expected} and "
                         f"re-run the negation rule, or set train negation_rules: {rules}")


def _final_iteration(path: str | Path) -> str | None:
    """The SAN shard's last mask-predict iteration column (``iter<k>``), or None."""
    import pyarrow.parquet as pq

    its = [(int(m.group(1)), n) for n in pq.read_schema(path).names if (m := re.fullmatch(r"iter(\d+)", n))]
    return max(its)[1] if its and max(its)[0] > 0 else None


def load_training_data(
    corpus_shards: Sequence[str | Path],
    augment_shards: dict[str, Sequence[str | Path]] | None = None,
    needed: Sequence[str] = (),
    post_process: bool = False,
    failed: str = "keep",
    negation_rules: str | None = None,
) -> TrainingData:
    """Join corpus shard i with augmentation shard i of each needed column, by ``id``.

    ``augment_shards`` maps a column (``san``, ``negation``, ``paraphrase``) to its shards, in
    the same order as ``corpus_shards``. With ``post_process`` (SAN Eq. 6 post-processing), a
    row whose SAN negative was dropped uses its SNCSE negation instead. ``failed``: keep|drop
    (module docstring); ``negation_rules``: the rules the negation shards must be made with.
    """
    if failed not in ("keep", "drop"):
        raise ValueError(f"train setting 'failed_augmentation': must be keep or drop (got {failed!r})")
    augment_shards = augment_shards or {}
    if not corpus_shards:
        raise ValueError("training needs at least one corpus shard")
    for col in needed:
        if col not in SOURCES:
            raise ValueError(f"unknown augmentation column {col!r} (known: {', '.join(SOURCES)})")
        shards = augment_shards.get(col)
        if not shards:
            raise ValueError(f"the training objective needs column '{col}', but no shards were given; "
                             f"they are made by {SOURCES[col][1]}")
        if len(shards) != len(corpus_shards):
            raise ValueError(f"{len(shards)} '{col}' shards for {len(corpus_shards)} corpus shards")
    parts = []
    counts: dict[str, int] = {"rows_in": 0}
    for i, cpath in enumerate(corpus_shards):
        frame = _read(cpath, ["id", "text"], "corpus", "rule prepare_corpus (rules/data.smk)")
        check_unique_ids(frame, cpath, "rule prepare_corpus (rules/data.smk)")
        counts["rows_in"] += frame.height
        for col in needed:
            kind, rule = SOURCES[col]
            apath = augment_shards[col][i]
            if col == "negation" and negation_rules:
                check_negation_rules(apath, negation_rules)
            raw = _final_iteration(apath) if col == "san" and failed == "keep" else None
            aug = _read(apath, ["id", col] + ([raw] if raw else []), kind, rule)
            check_unique_ids(aug, apath, rule)
            if raw:  # the degenerate output the quality filter dropped: the reference trains on it
                aug = aug.with_columns(pl.col(raw).alias("_raw_san")).drop(raw)
            extra = aug.join(frame.select("id"), on="id", how="anti")
            if extra.height:
                raise ValueError(f"{apath}: {extra.height} id(s) not in corpus shard {cpath} (e.g. {extra['id'][0]}); "
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
    def missing(col: str) -> pl.Series:
        return data[col].is_null() | (data[col].str.strip_chars() == "")

    any_failed = pl.Series([False] * data.height)
    for col in needed:
        counts[f"failed_{col}"] = int(missing(col).sum())  # what the augmenter dropped
        any_failed = any_failed | missing(col)
    # the other way: the rows left if every failed row were dropped (failed_augmentation: drop)
    counts["rows_if_failed_dropped"] = counts["rows_in"] - int(any_failed.sum())
    if failed == "keep" and "negation" in needed:  # SNCSE: negation.get(sentence, "Not " + sentence)
        fix = missing("negation")
        counts["kept_failed_negation"] = int(fix.sum())
        data = data.with_columns(pl.when(fix).then(pl.lit("Not ") + pl.col("text")).otherwise(pl.col("negation"))
                                 .alias("negation"))
    if post_process and "san" in needed and "negation" in data.columns:
        replace = missing("san") & ~missing("negation")
        counts["san_replaced_by_negation"] = int(replace.sum())
        data = data.with_columns(pl.when(replace).then(pl.col("negation")).otherwise(pl.col("san")).alias("san"))
    if "_raw_san" in data.columns:
        fix = missing("san") & data["_raw_san"].is_not_null() & (data["_raw_san"].str.strip_chars() != "")
        counts["kept_failed_san"] = int(fix.sum())
        data = data.with_columns(pl.when(fix).then(pl.col("_raw_san")).otherwise(pl.col("san")).alias("san"))
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
