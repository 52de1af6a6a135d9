"""Snakemake adapter: corpus shard -> SAN shard + stats (hardneg.augment.san.run.run_san)."""

import logging

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

from hardneg.cluster.gpus import lease_gpu  # noqa: E402

if snakemake.resources.get("gpu", 0):  # one device per job on a multi-GPU machine, before CUDA starts
    lease_gpu()

from hardneg.augment.san.run import run_san  # noqa: E402

# batch_size, chunk_rows: keyed unless fp32 (hardneg.augment.san.key); these and finish_workers are
# params that never trigger a re-run (rules/functions/san.smk)
run_san(
    snakemake.input.shard, snakemake.output.shard, snakemake.params.mlm, snakemake.input.lexicon,
    dict(snakemake.params.cfg), seed=snakemake.params.seed, batch_size=snakemake.params.batch_size,
    chunk_rows=snakemake.params.chunk_rows, stats_out=snakemake.output.stats,
    negation=snakemake.input.negation[0] if snakemake.input.negation else None, threads=snakemake.threads,
    finish_workers=snakemake.params.finish_workers,
)  # fmt: skip
