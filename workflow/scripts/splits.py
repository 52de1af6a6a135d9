"""Snakemake adapter: build the Cont./Oppn. splits artifact (hardneg.evaluate.run.run_splits)."""

import logging

from hardneg.evaluate.run import run_splits

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO,  # noqa: F821
                    format="%(asctime)s %(levelname)s %(name)s: %(message)s")
run_splits(snakemake.input[0], snakemake.output.splits, snakemake.output.stats, snakemake.params.cfg)  # noqa: F821
