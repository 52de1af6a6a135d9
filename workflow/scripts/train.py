"""Snakemake adapter: train one method x seed (hardneg.train.trainer.train).

With train.nproc_per_node > 1 the same work runs under torchrun (DDP) via the CLI.
"""

import json
import subprocess
import sys
from pathlib import Path

from hardneg.cluster.gpus import lease_gpu

# one device per single-process job on a multi-GPU machine, before CUDA starts (torchrun jobs
# use every visible GPU)
if snakemake.resources.get("gpu", 0) and int(snakemake.params.nproc_per_node) <= 1:  # noqa: F821
    lease_gpu()

import torch

from hardneg.runlog import log_to
from hardneg.train.settings import TrainSettings
from hardneg.train.trainer import train

sm = snakemake  # noqa: F821
log_to(sm.log[0])
torch.set_num_threads(max(1, sm.threads))
settings = TrainSettings.from_dict(sm.params.settings)
out_dir = Path(sm.output.model).parent
aug = {c: list(sm.input[c]) for c in settings.needed_columns()}
nproc = int(sm.params.nproc_per_node)
if nproc > 1:
    out_dir.mkdir(parents=True, exist_ok=True)
    settings_file = out_dir / "settings.json"
    settings_file.write_text(json.dumps(settings.to_dict(), indent=2, sort_keys=True))
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}", "-m", "hardneg",
           "train", "--settings", str(settings_file), "--corpus", *sm.input.corpus,
           "--senteval-dir", sm.input.senteval, "--out", str(out_dir)]
    for col, paths in aug.items():
        cmd += [f"--{col}", *paths]
    with open(sm.log[0], "a") as fh:
        subprocess.run(cmd, check=True, stdout=fh, stderr=subprocess.STDOUT)
else:
    train(settings, list(sm.input.corpus), out_dir, augment_shards=aug, senteval_dir=sm.input.senteval)
