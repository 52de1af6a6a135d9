"""Snakemake adapter: corpus shards -> a fitted MLM folder (hardneg.augment.san.run.run_bootstrap_mlm)."""

import logging

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

from hardneg.augment.san.run import run_bootstrap_mlm  # noqa: E402

run_bootstrap_mlm(list(snakemake.input.corpus), snakemake.output.model, dict(snakemake.params.cfg),
                  seed=snakemake.params.seed, threads=snakemake.threads)
