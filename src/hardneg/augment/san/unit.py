"""SAN as an augmenter unit (hardneg.augment.units): column ``san``, rules/san.smk, its
``inspect`` view and report section, and how training treats rows SAN dropped."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hardneg.augment.units import AugmenterUnit, FillContext

if TYPE_CHECKING:
    import polars as pl

RAW = "_raw_san"  # the final mask-predict iteration, read beside the filtered negative


def final_iteration(path: str | Path) -> str | None:
    """The SAN shard's last mask-predict iteration column (``iter<k>``, k > 0), or None."""
    import pyarrow.parquet as pq

    its = [(int(m.group(1)), n) for n in pq.read_schema(path).names if (m := re.fullmatch(r"iter(\d+)", n))]
    return max(its)[1] if its and max(its)[0] > 0 else None


def read_final_iteration(path: Path, options: Mapping[str, Any]) -> dict[str, str]:
    """With failed rows kept, the final iteration too: the reference has no quality filter and
    trains on the degenerate output the filter dropped."""
    raw = final_iteration(path) if options.get("failed") == "keep" else None
    return {raw: RAW} if raw else {}


def fill_failed_san(data: pl.DataFrame, ctx: FillContext) -> pl.DataFrame:
    """SAN Eq. 6 post-processing first (``post_process``: a dropped SAN negative takes the row's
    SNCSE negation), then, with failed rows kept, the unfiltered final iteration."""
    import polars as pl

    missing = ctx.missing
    if ctx.options.get("post_process") and "negation" in data.columns:
        replace = missing(data, "san") & ~missing(data, "negation")
        ctx.counts["san_replaced_by_negation"] = int(replace.sum())
        data = data.with_columns(pl.when(replace).then(pl.col("negation")).otherwise(pl.col("san")).alias("san"))
    if RAW in data.columns:
        fix = missing(data, "san") & data[RAW].is_not_null() & (data[RAW].str.strip_chars() != "")
        ctx.counts["kept_failed_san"] = int(fix.sum())
        data = data.with_columns(pl.when(fix).then(pl.col(RAW)).otherwise(pl.col("san")).alias("san"))
    return data


UNIT = AugmenterUnit(
    name="san",
    column="san",
    config_section="san",
    title="the SAN augmentation rule",
    rule_file="rules/san.smk",
    shard_helper="san_shard",
    renderer="hardneg.augment.san.inspect:render_san",
    render_columns=("iter0", "san"),
    # SAN's SNCSE+SAN script wraps the SAN negative in the positive's template ("This sentence of ...")
    view_template="positive",
    append_period=False,  # SAN's scripts comment the " ." line out for their negative
    views_pass=False,  # SAN's negative has a forward pass of its own (train/step_model.py)
    report_section="hardneg.report.san_examples:san_section",
    read_extra=read_final_iteration,
    fill_failed=fill_failed_san,
    fill_reads=("negation",),  # post-processing reads the negation after its own fill
)
