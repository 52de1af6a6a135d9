"""Snakemake adapter: rule backtranslate -> hardneg.augment.backtranslation.translate (every candidate kept)."""

from hardneg.cluster.gpus import lease_gpu

if snakemake.resources.get("gpu", 0):  # noqa: F821  (transformers backend: one device per job)
    lease_gpu()

from hardneg.augment.backtranslation.translate import backtranslate_frame
from hardneg.runlog import run_rule
from hardneg.shards import read_shard, write_shard

sm = snakemake  # noqa: F821 (snakemake injects this object)


def main() -> None:
    import logging

    if sm.params.cfg.get("backend") == "transformers":  # torch only where it is used
        import torch

        torch.set_num_threads(max(1, sm.threads))
    frame = read_shard(sm.input[0])
    out = backtranslate_frame(frame, dict(sm.params.cfg), show_progress=True)
    if out.height != frame.height:
        raise RuntimeError(f"{sm.input[0]}: {frame.height} rows in, {out.height} out")
    dropped = int((out["status"] == "dropped").sum())
    logging.getLogger("hardneg.backtranslation").info(
        "%s: %d rows, %d dropped", sm.input[0], out.height, dropped
    )
    write_shard(out, sm.output[0])


run_rule(main, sm.log[0])
