"""Snakemake adapter: corpus shard -> SAN shard + stats (hardneg.augment.san.run.run_san)."""

from hardneg.cluster.gpus import lease_gpu

sm = snakemake  # noqa: F821 (snakemake injects this object)
if sm.resources.get("gpu", 0):  # one device per job on a multi-GPU machine, before CUDA starts
    lease_gpu()

from hardneg.augment.san.run import run_san
from hardneg.runlog import run_rule

# batch_size, chunk_rows: keyed unless fp32 (hardneg.augment.san.key); these and finish_workers are
# params that never trigger a re-run (rules/functions/san.smk)
run_rule(
    run_san, sm.log[0], sm.input.shard, sm.output.shard, sm.params.mlm, sm.input.lexicon,
    dict(sm.params.cfg), seed=sm.params.seed, batch_size=sm.params.batch_size,
    chunk_rows=sm.params.chunk_rows, stats_out=sm.output.stats,
    negation=sm.input.negation[0] if sm.input.negation else None, threads=sm.threads,
    finish_workers=sm.params.finish_workers,
)  # fmt: skip
