"""Snakemake adapter: the transformation probe of one model on the probe set
(hardneg.evaluate.run.score_probe_set)."""

import torch

from hardneg.evaluate.run import score_probe_set
from hardneg.runlog import run_rule

sm = snakemake  # noqa: F821 (snakemake injects this object)
torch.set_num_threads(max(1, sm.threads))
p = sm.params
run_rule(
    score_probe_set, sm.log[0], p.model, sm.input.probe_rows, sm.input.probe_meta, sm.output.summary,
    pairs_out=sm.output.pairs, max_length=p.max_length, device=p.device, batch_size=p.batch_size,
)  # fmt: skip
