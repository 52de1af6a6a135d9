"""Snakemake adapter: corpus shards -> a fitted MLM folder (hardneg.augment.san.bootstrap_mlm)."""

import logging

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

from hardneg.augment.san.bootstrap_mlm import BootstrapConfig, bootstrap_mlm  # noqa: E402

cfg = BootstrapConfig(**{**dict(snakemake.params.cfg), "seed": snakemake.params.seed, "threads": snakemake.threads})
metrics = bootstrap_mlm(list(snakemake.input.corpus), snakemake.output.model, cfg)
logging.getLogger("bootstrap_mlm").info("metrics: %s", metrics)
