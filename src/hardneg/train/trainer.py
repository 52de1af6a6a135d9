"""The training loop, in the manner of nanoGPT's ``train.py``: ``train`` reads top to bottom.

One run = one method x seed. Per step: the anchor and positive views (two dropout masks, or the
two prompt templates) plus negation/paraphrase go through the encoder in one pass; SAN negatives
in a second pass at their own dropout p2 (SAN Table 6). Embeddings are all-gathered so in-batch
negatives span the global batch (per-device batch x world size). STS-B dev every ``eval_every``
steps keeps the best weights (SimCSE convention); ``last.pt`` checkpoints let a killed job resume
mid-epoch and reach the same final weights as an uninterrupted run.

Beside it: ``set_up.py`` (what the run builds, its resumable progress), ``batches.py`` (a step's
inputs), ``dev_eval.py`` (STS-B dev, best weights), ``finish.py`` (export, clean-up),
``speed.py`` (tokenization ahead, ``train.compile``, out-of-memory errors).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from hardneg.train import distributed as D
from hardneg.train.cached_gradient import CachedStep
from hardneg.train.checkpoint import IncompatibleCheckpoint  # noqa: F401  # re-exported: callers catch it here
from hardneg.train.data import TrainingData
from hardneg.train.determinism import ordered_cpu_kernels
from hardneg.train.dev_eval import evaluate_and_keep_best, score_initial_model
from hardneg.train.finish import close_run, export_run
from hardneg.train.methods.objective import Objective  # noqa: F401  # re-exported
from hardneg.train.set_up import lr_lambda, restore_progress, set_up  # noqa: F401  # lr_lambda re-exported
from hardneg.train.settings import TrainSettings
from hardneg.train.speed import (  # noqa: F401  # re-exported: Prefetch, compile_backbone, TrainingOutOfMemory
    Prefetch,
    TrainingOutOfMemory,
    compile_backbone,
    out_of_memory,
    upcoming_steps,
)
from hardneg.train.step_model import StepModel  # noqa: F401  # re-exported


class TrainingDiverged(RuntimeError):
    """A non-finite loss: training stops and names the step."""


def check_finite(bad_step: torch.Tensor, parts: dict[str, torch.Tensor], n_batches: int, info: D.DistInfo) -> None:
    """Raise TrainingDiverged naming the first step whose loss was not finite (on every rank)."""
    bad = int(bad_step)
    if not D.all_true(bad == 0, info):
        epoch, index = divmod(max(bad, 1) - 1, n_batches)
        values = {k: float(v) for k, v in parts.items()}
        raise TrainingDiverged(
            f"non-finite loss at step {bad} (epoch {epoch}, batch {index}): {values}; "
            f"lower train setting 'lr' or use precision fp32"
        )


@ordered_cpu_kernels
def train(
    settings: TrainSettings,
    corpus_shards: Sequence[str | Path],
    out_dir: str | Path,
    augment_shards: dict[str, Sequence[str | Path]] | None = None,
    senteval_dir: str | Path | None = None,
    work_dir: str | Path | None = None,
    resume: bool = True,
    halt_after_steps: int | None = None,
    data: TrainingData | None = None,
    keep_checkpoints: bool = False,
    report_to: str | Sequence[str] | None = None,
) -> dict[str, Any]:
    """Train one method x seed; export the best model to ``out_dir/model``.

    Writes ``out_dir/{model/, metrics.jsonl, curve.png, summary.json}``; checkpoints live in
    ``work_dir`` (default ``out_dir/work-<settings fingerprint>``) so a re-run resumes; they are
    deleted once the model is exported unless ``keep_checkpoints``. ``report_to`` (``train.report_to``)
    also sends what metrics.jsonl receives to TensorBoard / W&B / MLflow (hardneg.train.tracking).
    ``halt_after_steps`` stops this process after that many steps without exporting (as a job
    killed mid-run would; used by the resume test).
    """
    run = set_up(settings, corpus_shards, out_dir, augment_shards, work_dir, data, report_to)
    s, info, device = run.s, run.info, run.device
    model, objective, optimizer, scaler = run.step_model, run.objective, run.optimizer, run.scaler
    progress = restore_progress(run, resume)
    if progress.step == 0 and info.is_main:
        score_initial_model(run, senteval_dir)

    bar = tqdm(total=run.total_steps, initial=progress.step, desc=f"train {s.method}", unit="step",
               disable=not (s.show_progress and info.is_main))
    t_last, n_sent = time.perf_counter(), 0
    steps_this_run = 0
    # tokenization of the next steps runs in a worker thread (the fast tokenizer releases the
    # GIL) while the device runs this one; non-finite losses are checked on the device and read
    # back only at logging/eval/checkpoint steps on CUDA (every step on CPU, where it is free)
    upcoming = upcoming_steps(run.batches.prepare, progress.step, run.total_steps)
    deferred = device.type == "cuda"
    bad_step = torch.zeros((), dtype=torch.long, device=device)  # first non-finite step (1-based), 0 = none
    parts: dict[str, torch.Tensor] = {}
    while progress.step < run.total_steps:
        step = progress.step
        epoch = step // run.n_batches
        rows, texts, extra, tokens = upcoming.next()
        if run.neg_index is not None:  # SynCSE: pool negatives depend on this step's encoder
            extra["syncse"] = run.neg_index.negatives(run.encoder, rows, step, info)
            tokens = run.core_model.tokenize(texts, extra)
        teacher_sims = run.teachers.similarities(texts, extra.get("san"), info) if run.teachers is not None else None
        try:
            cached = (CachedStep(run.core_model, texts, extra, tokens, s.mini_batch_size, device)
                      if s.mini_batch_size is not None else None)  # train.mini_batch_size: GradCache
            with run.autocast():
                emb = model(texts, extra, tokens) if cached is None else cached.embed()
            assert emb["anchor"].shape[0] * info.world_size == run.global_batch
            loss, parts = objective(emb, info, teacher_sims)
            finite = torch.isfinite(parts["loss"])
            bad_step = torch.where((bad_step == 0) & ~finite, step + 1, bad_step)
            if not deferred:
                check_finite(bad_step, parts, run.n_batches, info)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            if cached is not None:  # the loss's gradient reached the embeddings: now the encoder
                cached.backward(model, run.autocast)
            scaler.unscale_(optimizer)
            grad_norm = torch.nn.utils.clip_grad_norm_(run.params, s.grad_clip if s.grad_clip > 0 else float("inf"))
            scaler.step(optimizer)
            scaler.update()
            objective.after_optimizer_step(run.scheduler.get_last_lr()[0])  # OssCSE's decoupled recall pull
        except torch.OutOfMemoryError as exc:
            upcoming.close()
            raise out_of_memory(exc, s, device) from None
        run.scheduler.step()
        progress.step = step = step + 1
        steps_this_run += 1
        n_sent += run.global_batch
        bar.update(1)

        # logging, evaluation and checkpoint of this step
        last = step == run.total_steps
        if deferred and (step % s.log_every == 0 or step % s.eval_every == 0 or step % s.checkpoint_every == 0
                         or last):  # before any metric, evaluation or checkpoint of this step
            check_finite(bad_step, parts, run.n_batches, info)
        if step % s.log_every == 0 or last:
            values = {k: float(v) for k, v in parts.items()}  # the only read-back of the step
            now = time.perf_counter()
            run.write_metric({"kind": "train", "step": step, "epoch": epoch, "lr": run.scheduler.get_last_lr()[0],
                              "grad_norm": float(grad_norm), "global_batch": run.global_batch,
                              "world_size": info.world_size, "sent_per_s": n_sent / max(now - t_last, 1e-9),
                              **values})
            bar.set_postfix(loss=f"{values['loss']:.4f}")
            t_last, n_sent = now, 0
        if step % s.eval_every == 0 or last:
            evaluate_and_keep_best(run, progress, senteval_dir)
        if step % s.checkpoint_every == 0 or last:
            run.checkpoint.save(step, progress.best_score, progress.best_step, run.counters)
        if step % s.eval_every == 0 or step % s.checkpoint_every == 0:
            t_last, n_sent = time.perf_counter(), 0  # throughput excludes evaluation and saving
        if halt_after_steps is not None and steps_this_run >= halt_after_steps and not last:
            bar.close()
            upcoming.close()
            run.trackers.close()
            return {"halted_at": step}
    bar.close()
    upcoming.close()

    summary = export_run(run, progress, senteval_dir)
    close_run(run, keep_checkpoints)
    return summary
