"""Snakemake adapter: corpus shards -> a fitted MLM folder (hardneg.augment.san.run.run_bootstrap_mlm)."""

from hardneg.augment.san.run import run_bootstrap_mlm
from hardneg.runlog import run_rule

sm = snakemake  # noqa: F821 (snakemake injects this object)
run_rule(run_bootstrap_mlm, sm.log[0], list(sm.input.corpus), sm.output.model, dict(sm.params.cfg),
         seed=sm.params.seed, threads=sm.threads, source_file=next(iter(sm.input.source_file), None),
         senteval_dir=next(iter(sm.input.senteval), None))
