"""Snakemake adapter: the model card of one trained model (hardneg.train.model_card.write_card)."""

from hardneg.runlog import run_rule
from hardneg.train.model_card import write_card

sm = snakemake  # noqa: F821 (snakemake injects this object)
run_rule(
    write_card, sm.log[0], sm.input.model, sm.input.summary, sm.output.card,
    sts_path=sm.input.sts, datasets=list(sm.params.datasets),
)  # fmt: skip
