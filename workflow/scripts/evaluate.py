"""Snakemake adapter: evaluate one model (hardneg.evaluate.run.evaluate_model)."""

import logging

from hardneg.cluster.gpus import lease_gpu

if snakemake.resources.get("gpu", 0):  # noqa: F821  (one device per job, before CUDA starts)
    lease_gpu()

import torch

from hardneg.config import with_defaults
from hardneg.evaluate.run import evaluate_model

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO,  # noqa: F821
                    format="%(asctime)s %(levelname)s %(name)s: %(message)s")
torch.set_num_threads(max(1, snakemake.threads))  # noqa: F821
m = snakemake.params.model  # noqa: F821
cfg = with_defaults("evaluate", snakemake.params.cfg)  # noqa: F821
evaluate_model(
    m["model"], snakemake.input.senteval, snakemake.output.sts,  # noqa: F821
    pooler=m["pooler"], template=m["template"], max_length=cfg["max_length"],
    device=snakemake.params.device, batch_size=snakemake.params.batch_size,  # noqa: F821
    max_pairs=cfg.get("max_pairs"), predictions_out=snakemake.output.predictions,  # noqa: F821
    splits_path=snakemake.input.splits, cont_oppn_out=snakemake.output.cont_oppn,  # noqa: F821
    show_progress=False,
)
