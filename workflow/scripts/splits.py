"""Snakemake adapter: build the Cont./Oppn. splits artifact (hardneg.evaluate.run.run_splits)."""

from hardneg.evaluate.run import run_splits
from hardneg.runlog import run_rule

sm = snakemake  # noqa: F821 (snakemake injects this object)
run_rule(run_splits, sm.log[0], sm.input[0], sm.output.splits, sm.output.stats, sm.params.cfg)
