"""Snakemake adapter: train one method x seed (hardneg.train.run.run_train).

With train.nproc_per_node > 1 the runner starts the same work under torchrun (DDP) via the CLI.
"""

from pathlib import Path

from hardneg.cluster.gpus import lease_gpu

# one device per single-process job on a multi-GPU machine, before CUDA starts (torchrun jobs
# use every visible GPU)
sm = snakemake  # noqa: F821 (snakemake injects this object)
if sm.resources.get("gpu", 0) and int(sm.params.nproc_per_node) <= 1:
    lease_gpu()

from hardneg.augment.units import load_augmenters
from hardneg.runlog import run_rule
from hardneg.train.run import run_train
from hardneg.train.settings import TrainSettings

load_augmenters(sm.params.augmenters)  # augmenters of your own: their columns are views
settings = TrainSettings.from_dict(sm.params.settings)
run_rule(
    run_train, sm.log[0], settings, list(sm.input.corpus), Path(sm.output.model).parent,
    augment={c: list(sm.input[c]) for c in settings.needed_columns()}, senteval_dir=sm.input.senteval,
    nproc_per_node=int(sm.params.nproc_per_node), threads=sm.threads,
    keep_checkpoints=bool(sm.params.keep_checkpoints), report_to=sm.params.report_to, log_path=sm.log[0],
)  # fmt: skip
