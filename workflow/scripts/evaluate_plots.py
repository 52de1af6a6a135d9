"""Snakemake adapter: plots of one evaluation (hardneg.evaluate.run.run_plots)."""

import logging

from hardneg.evaluate.run import run_plots

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO)  # noqa: F821
wc = snakemake.wildcards  # noqa: F821
run_plots(snakemake.input.cont_oppn, snakemake.input.predictions, snakemake.output.cont_oppn,  # noqa: F821
          snakemake.output.hard_pairs, label=f"{wc.experiment}/{wc.method}/seed{wc.seed}")  # noqa: F821
