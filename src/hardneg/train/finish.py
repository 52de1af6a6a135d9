"""The end of a run: the best weights exported with summary.json, metrics.jsonl and curve.png,
then the resume state removed (a finished job never resumes)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import torch

from hardneg.plotting import pyplot, save_png
from hardneg.shards import write_json_atomic
from hardneg.train import distributed as D
from hardneg.train.checkpoint import remove_resume_state
from hardneg.train.dev_eval import dev_score
from hardneg.train.reading import reading
from hardneg.train.set_up import Progress, Run

log = logging.getLogger(__name__)


def plot_curve(metrics_path: Path, png: Path) -> None:
    """Train loss per logged step, with the STS-B dev scores on a second axis."""
    plt = pyplot()
    rows = [json.loads(x) for x in metrics_path.read_text().splitlines() if x.strip()]
    tr = [r for r in rows if r.get("kind") == "train"]
    ev = [r for r in rows if r.get("kind") == "eval"]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([r["step"] for r in tr], [r["loss"] for r in tr], color="tab:blue", label="train loss")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    if ev:
        ax2 = ax.twinx()
        ax2.plot([r["step"] for r in ev], [r["stsb_dev"] for r in ev], "o-", color="tab:red", label="STS-B dev")
        ax2.set_ylabel("STS-B dev Spearman x100")
    ax.set_title("training curve")
    fig.legend(loc="upper right")
    fig.tight_layout()
    save_png(fig, png, dpi=100)


def export_run(run: Run, progress: Progress, senteval_dir: str | Path | None) -> dict[str, Any]:
    """Write ``out_dir/{model/, metrics.jsonl, curve.png, summary.json}`` from the best weights
    (main rank; the last weights when nothing was scored); returns the summary ({} on other
    ranks). Every rank calls it: the fallback counts are all-reduced."""
    s, info = run.s, run.info
    summary: dict[str, Any] = {}
    method_fallbacks = run.objective.fallbacks(run.neg_index, info)
    if info.is_main:
        if progress.best_step is not None and (run.work / "best.pt").exists():
            run.encoder.load_state_dict(torch.load(run.work / "best.pt", weights_only=True))
        final_dev = dev_score(run, senteval_dir) if progress.best_step is None else progress.best_score
        summary = {
            "method": s.method, "seed": s.seed, "steps": run.total_steps, "global_batch": run.global_batch,
            "per_device_batch": s.batch_size, "world_size": info.world_size,
            "best_step": progress.best_step if progress.best_step is not None else run.total_steps,
            "stsb_dev": final_dev, "data": run.data.counts, "settings": s.to_dict(), "fingerprint": run.fingerprint,
            "reading": reading(s.to_dict()),  # paper vs reference code (hardneg.train.reading)
        }
        if method_fallbacks:
            summary["fallbacks"] = method_fallbacks
        from hardneg.train.export import export_sentence_transformers

        export_sentence_transformers(
            run.encoder.backbone, run.encoder.tokenizer, run.out_dir / "model", pooler=s.export_pooler,
            max_length=run.eval_len, template=s.templates[0] if s.templates else None,
            card=summary,
        )
        (run.out_dir / "metrics.jsonl").write_bytes(run.metrics_path.read_bytes())
        plot_curve(run.metrics_path, run.out_dir / "curve.png")
        write_json_atomic(summary, run.out_dir / "summary.json")
        run.trackers.log_final({"stsb_dev": final_dev, "best_step": summary["best_step"]})
    return summary


def close_run(run: Run, keep_checkpoints: bool) -> None:
    """Close the trackers and, once every rank is done, delete the resume state unless
    ``train.keep_checkpoints``."""
    run.trackers.close()
    D.barrier(run.info)
    if run.info.is_main and not keep_checkpoints:  # the job is complete: resume state is dead weight
        freed = remove_resume_state(run.work)
        log.info("removed the resume state in %s (%.1f MB; train.keep_checkpoints keeps it)", run.work, freed / 1e6)
