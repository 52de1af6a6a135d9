"""Back-translation as an augmenter unit (hardneg.augment.units): the MER-selected paraphrase,
column ``paraphrase``, rules/backtranslation.smk, and its ``inspect`` view. A row without a
paraphrase has no value to fall back on: training leaves it out, counted."""

from __future__ import annotations

from hardneg.augment.units import AugmenterUnit

UNIT = AugmenterUnit(
    name="backtranslation",
    column="paraphrase",
    config_section="backtranslation",
    title="the back-translation rule",
    rule_file="rules/backtranslation.smk",
    shard_helper="paraphrase_shard",
    renderer="hardneg.augment.backtranslation.inspect:render_backtranslation",
    render_columns=("paraphrase", "paraphrase_pivot"),
    # OssCSE has no code and builds on SNCSE: its paraphrase takes the positive's template like
    # SNCSE's negation (docs/deviations.md)
    view_template="positive",
)
