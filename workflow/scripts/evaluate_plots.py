"""Snakemake adapter: plots of one evaluation (hardneg.evaluate.run.run_plots)."""

from hardneg.evaluate.run import run_plots
from hardneg.runlog import run_rule

sm = snakemake  # noqa: F821 (snakemake injects this object)
wc = sm.wildcards
run_rule(run_plots, sm.log[0], sm.input.cont_oppn, sm.input.predictions, sm.output.cont_oppn,
         sm.output.hard_pairs, label=f"{wc.experiment}/{wc.method}/seed{wc.seed}")
