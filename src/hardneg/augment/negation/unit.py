"""Negation as an augmenter unit (hardneg.augment.units): column ``negation``,
rules/negation.smk, its ``inspect`` view, and how training treats rows without a negation."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hardneg.augment.units import AugmenterUnit, FillContext

if TYPE_CHECKING:
    import polars as pl


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


def check_shard(path: Path, options: Mapping[str, Any]) -> None:
    """The shard was made with the rules ``train.negation_rules`` names (when it names any)."""
    if options.get("negation_rules"):
        check_negation_rules(path, options["negation_rules"])


def fill_failed_negation(data: pl.DataFrame, ctx: FillContext) -> pl.DataFrame:
    """With failed rows kept, SNCSE's value for a missing negation
    (train_SNCSE.py: ``negation.get(sentence, "Not " + sentence)``)."""
    import polars as pl

    if ctx.options.get("failed") != "keep":
        return data
    fix = ctx.missing(data, "negation")
    ctx.counts["kept_failed_negation"] = int(fix.sum())
    return data.with_columns(pl.when(fix).then(pl.lit("Not ") + pl.col("text")).otherwise(pl.col("negation"))
                             .alias("negation"))


UNIT = AugmenterUnit(
    name="negation",
    column="negation",
    config_section="negation",
    title="the negation rule",
    rule_file="rules/negation.smk",
    shard_helper="negation_shard",
    renderer="hardneg.augment.negation.inspect:render_negation",
    render_columns=("negation", "rule"),
    # SNCSE train_SNCSE.py (Different_Prompt_Negation): the negation takes the positive's template
    view_template="positive",
    append_period=True,  # train_SNCSE.py appends " ." to the negation as to the sentence
    check_shard=check_shard,
    fill_failed=fill_failed_negation,
)
