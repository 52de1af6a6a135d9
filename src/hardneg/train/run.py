"""Training stage runner: one method x seed, in this process or under torchrun (DDP).

Shared by the ``hardneg train`` command and the workflow's ``train`` rule
(workflow/scripts/train.py, a thin adapter). With ``nproc_per_node > 1`` the runner starts
``torchrun ... -m hardneg train --settings FILE``, whose processes come back here with
``nproc_per_node=1``: one code path either way.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hardneg.train.settings import TrainSettings


def run_train(
    settings: TrainSettings,
    corpus: Sequence[str | Path],
    out_dir: str | Path,
    *,
    augment: Mapping[str, Sequence[str | Path]] | None = None,
    senteval_dir: str | Path | None = None,
    nproc_per_node: int = 1,
    threads: int | None = None,
    resume: bool = True,
    keep_checkpoints: bool = False,
    report_to: str | Sequence[str] | None = None,
    log_path: str | Path | None = None,
) -> dict[str, Any] | None:
    """Train ``settings`` on the corpus (+ augmentation shards per column) into ``out_dir``
    (model/, metrics.jsonl, curve.png, summary.json); returns the summary (None under torchrun).
    ``threads`` sets this process's torch CPU threads (torchrun's processes keep their own);
    ``keep_checkpoints`` keeps the resume state (``work-*/``) after the model is exported;
    ``report_to``: ``train.report_to`` trackers (hardneg.train.tracking)."""
    import torch

    out_dir = Path(out_dir)
    if threads:
        torch.set_num_threads(max(1, threads))
    aug = {c: [str(p) for p in paths] for c, paths in (augment or {}).items()}
    if nproc_per_node > 1:
        out_dir.mkdir(parents=True, exist_ok=True)
        settings_file = out_dir / "settings.json"
        settings_file.write_text(json.dumps(settings.to_dict(), indent=2, sort_keys=True))
        cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={nproc_per_node}", "-m",
               "hardneg", "train", "--settings", str(settings_file), "--corpus", *map(str, corpus)]
        if senteval_dir is not None:
            cmd += ["--senteval-dir", str(senteval_dir)]
        cmd += ["--out", str(out_dir)]
        if not resume:
            cmd += ["--no-resume"]
        if keep_checkpoints:
            cmd += ["--keep-checkpoints"]
        from hardneg.train.tracking import parse_report_to

        cmd += ["--report-to", *(parse_report_to(report_to) or ["none"])]
        from hardneg.augment.units import BUILTIN_UNIT_MODULES, by_column, external_specs

        for spec in external_specs():  # augmenters of your own, registered again in each process
            cmd += ["--augmenter", spec]
        for col, paths in aug.items():  # a packaged unit's own option, else --shards COLUMN
            packaged = by_column(col).module in BUILTIN_UNIT_MODULES
            cmd += [f"--{col}", *paths] if packaged else ["--shards", col, *paths]
        if log_path is None:
            subprocess.run(cmd, check=True)
        else:
            with open(log_path, "a") as fh:
                subprocess.run(cmd, check=True, stdout=fh, stderr=subprocess.STDOUT)
        return None
    from hardneg.train.trainer import train

    return train(settings, list(corpus), out_dir, augment_shards=aug, senteval_dir=senteval_dir, resume=resume,
                 keep_checkpoints=keep_checkpoints, report_to=report_to)
