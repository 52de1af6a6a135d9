"""Snakemake adapter: rule select_paraphrase -> hardneg.augment.backtranslation.run.run_select_paraphrase."""

from hardneg.augment.backtranslation.run import run_select_paraphrase
from hardneg.runlog import run_rule

sm = snakemake  # noqa: F821 (snakemake injects this object)
run_rule(run_select_paraphrase, sm.log[0], sm.input[0], sm.output.shard, sm.output.summary, dict(sm.params.cfg))
