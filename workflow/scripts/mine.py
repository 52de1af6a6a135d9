"""Snakemake adapter: rule mine_shard -> hardneg.augment.mine.run.run_mine (one mined shard)."""

from hardneg.augment.mine.run import run_mine
from hardneg.runlog import run_rule

sm = snakemake  # noqa: F821 (snakemake injects this object)
run_rule(run_mine, sm.log[0], sm.input.embeddings, list(sm.input.corpus), sm.input.shard, sm.output.shard,
         sm.output.summary, dict(sm.params.embed_cfg) | {k: v for k, v in dict(sm.params.cfg).items() if k != "seed"},
         seed=sm.params.seed, threads=sm.threads)  # fmt: skip
