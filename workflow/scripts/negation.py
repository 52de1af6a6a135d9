"""Snakemake adapter: rule negate -> hardneg.augment.negation.run.run_negate (corpus shard -> negation shard)."""

from hardneg.augment.negation.run import run_negate
from hardneg.runlog import run_rule

sm = snakemake  # noqa: F821 (snakemake injects this object)
run_rule(run_negate, sm.log[0], sm.input[0], sm.output.shard, sm.output.summary, dict(sm.params.cfg) | {"batch_size": sm.params.batch_size},
         n_process=sm.threads)  # fmt: skip
