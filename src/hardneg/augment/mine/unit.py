"""Mined hard negatives as an augmenter unit (hardneg.augment.units): column ``mined``,
rules/mine.smk, its ``inspect`` view and report section. Rows without an admissible neighbour
are left out of training (counted as ``dropped_no_mined``)."""

from __future__ import annotations

from hardneg.augment.units import AugmenterUnit

UNIT = AugmenterUnit(
    name="mine",
    column="mined",
    config_section="mine",
    title="the mine_shard rule",
    rule_file="rules/mine.smk",
    shard_helper="mined_shard",
    renderer="hardneg.augment.mine.inspect:render_mine",
    render_columns=("mined", "mined_id", "mined_score", "mined_rank", "mined_ids", "mined_scores", "mined_ranks"),
    # SNCSE train_SNCSE.py wraps its negatives (the negation) in the positive's template, as SAN's
    # SNCSE+SAN script does its SAN negative; a mined negative is templated like them
    view_template="positive",
    # a mined negative is another corpus sentence: with append_period it gets the " ." train_SNCSE.py
    # appends to every corpus sentence
    append_period=True,
    report_section="hardneg.augment.mine.report:mine_section",
    # mined only for a configured run that reads the column (the encoder and the search cost more
    # than the other augmenters': docs/mine.md); `snakemake ... mine` builds them on request
    on_demand=True,
)
