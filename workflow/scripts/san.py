"""Snakemake adapter: corpus shard -> SAN shard + stats (hardneg.augment.san.mask_predict)."""

import logging

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

from hardneg.cluster.gpus import lease_gpu  # noqa: E402

if snakemake.resources.get("gpu", 0):  # one device per job on a multi-GPU machine, before CUDA starts
    lease_gpu()

import torch  # noqa: E402

from hardneg.augment.san.mask_predict import SanConfig, augment_shard  # noqa: E402
from hardneg.shards import write_json_atomic  # noqa: E402

torch.set_num_threads(max(1, snakemake.threads))
raw = dict(snakemake.params.cfg)
raw.pop("mlm", None)
raw.pop("chunk_rows", None)  # keyed (san_key) but an augment_shard argument, not a SanConfig field
unkeyed = snakemake.config.get("san", {})  # batch_size, chunk_rows: keyed unless fp32 (san_key)
cfg = SanConfig.from_dict({**raw, "seed": snakemake.params.seed, "batch_size": unkeyed.get("batch_size", 64)})
chunk_rows = unkeyed.get("chunk_rows", 8192)
negation = snakemake.input.negation[0] if snakemake.input.negation else None
stats = augment_shard(
    snakemake.input.shard, snakemake.output.shard, snakemake.params.mlm, snakemake.input.lexicon, cfg,
    negation_path=negation, chunk_rows=chunk_rows, progress=False,
    finish_workers=unkeyed.get("finish_workers", 0),
)  # fmt: skip
write_json_atomic({"config": cfg.as_dict(), "mlm": snakemake.params.mlm, **stats}, snakemake.output.stats)
