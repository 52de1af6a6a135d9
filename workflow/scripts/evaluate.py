"""Snakemake adapter: evaluate one model (hardneg.evaluate.run.evaluate_model)."""

from hardneg.cluster.gpus import lease_gpu

sm = snakemake  # noqa: F821 (snakemake injects this object)
if sm.resources.get("gpu", 0):  # one device per job, before CUDA starts
    lease_gpu()

import torch

from hardneg.config import with_defaults
from hardneg.evaluate.run import evaluate_model
from hardneg.runlog import run_rule

torch.set_num_threads(max(1, sm.threads))
m = sm.params.model
cfg = with_defaults("evaluate", sm.params.cfg)
run_rule(
    evaluate_model, sm.log[0], m["model"], sm.input.senteval, sm.output.sts,
    pooler=m["pooler"], template=m["template"], max_length=cfg["max_length"],
    device=sm.params.device, batch_size=sm.params.batch_size,
    max_pairs=cfg["max_pairs"], predictions_out=sm.output.predictions,
    splits_path=sm.input.splits, cont_oppn_out=sm.output.cont_oppn,
    show_progress=False,
)  # fmt: skip
