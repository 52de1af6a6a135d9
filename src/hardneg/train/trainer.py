"""The training loop (nanoGPT-style: one readable function, state in plain dicts).

One run = one method x seed. Per step: the anchor and positive views (two dropout masks, or the
two prompt templates) plus negation/paraphrase go through the encoder in one pass; SAN negatives
in a second pass at their own dropout p2 (SAN Table 6). Embeddings are all-gathered so in-batch
negatives span the global batch (per-device batch x world size). STS-B dev every ``eval_every``
steps keeps the best weights (SimCSE convention); ``last.pt`` checkpoints let a killed job resume
mid-epoch and reach the same final weights as an uninterrupted run.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn
from tqdm.auto import tqdm

from hardneg.encoders.tokenize import PromptTokenizer
from hardneg.models.device import pick_device
from hardneg.models.precision import autocast_dtype, resolve_precision
from hardneg.models.resolve import resolve_model
from hardneg.plotting import pyplot, save_png
from hardneg.shards import write_json_atomic
from hardneg.train import distributed as D
from hardneg.train import replacement_terms, views  # HNCSE, HiCL, SynCSE; view -> data column
from hardneg.train.cached_gradient import CachedStep, refusal
from hardneg.train.checkpoint import (
    Checkpointer,
    IncompatibleCheckpoint,  # noqa: F401  # re-exported: callers catch it here
    remove_resume_state,
    save_atomic,
    trim_metrics,
)
from hardneg.train.data import TrainingData, batch_rows, batches_per_epoch, load_training_data
from hardneg.train.determinism import ordered_cpu_kernels
from hardneg.train.inputs import input_digests
from hardneg.train.model import ContrastiveEncoder
from hardneg.train.reading import reading
from hardneg.train.settings import TrainSettings
from hardneg.train.step_model import Objective, StepModel
from hardneg.train.teachers import Teachers, load_teachers, resolve_specs
from hardneg.train.tracking import Trackers

log = logging.getLogger(__name__)


class TrainingDiverged(RuntimeError):
    """A non-finite loss: training stops and names the step."""


# ----------------------------------------------------------------------------------------------
def lr_lambda(total_steps: int, warmup_ratio: float) -> Callable[[int], float]:
    """Linear warm-up then linear decay to 0 (the transformers/SimCSE schedule)."""
    warmup = round(total_steps * warmup_ratio)

    def f(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup))

    return f


def _plot_curve(metrics_path: Path, png: Path) -> None:
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


# ---------------------------------------------------------------------------- GPU speed
class TrainingOutOfMemory(RuntimeError):
    """The device ran out of memory: names batch_size and the measured peak."""


def out_of_memory(exc: BaseException, s: TrainSettings, device: torch.device) -> TrainingOutOfMemory:
    """The error for an out-of-memory step (instead of a CUDA traceback)."""
    if device.type == "cuda":
        peak = torch.cuda.max_memory_allocated(device) / 2**30
        total = torch.cuda.get_device_properties(device).total_memory / 2**30
        where = f"{device} ({torch.cuda.get_device_name(device)}): peak {peak:.2f} GiB allocated of {total:.2f} GiB"
    else:
        where = f"{device}"
    cache = (f"use a smaller mini_batch_size (now {s.mini_batch_size})" if s.mini_batch_size is not None
             else "set mini_batch_size (cached gradients: same batch, less memory)" if refusal(s) is None else None)
    fixes = "lower batch_size or max_length, " + (f"{cache}, " if cache else "") + "or give the job a whole GPU"
    return TrainingOutOfMemory(
        f"out of memory with train setting batch_size={s.batch_size} (max_length={s.max_length}) on {where}; "
        f"{fixes} ({str(exc).splitlines()[0][:200]})"
    )


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


def compile_backbone(backbone: nn.Module, device: torch.device) -> bool:
    """``train.compile``: torch.compile the backbone in place (state_dict keys unchanged; CUDA
    graphs on CUDA, see ``COMPILE_MODE``) when a compiler works on this platform; else warn and
    train eagerly."""
    try:
        probe = torch.compile(lambda x: torch.nn.functional.gelu(x) * 2 + 1, dynamic=False)
        probe(torch.randn(8, device=device))
    except Exception as exc:  # noqa: BLE001  # no C compiler / Triton: inductor fails at the first call
        log.warning("train.compile: torch.compile does not work here (%s: %s); training without it",
                    type(exc).__name__, str(exc).splitlines()[0][:200] if str(exc) else "")
        return False
    mode = COMPILE_MODE
    if mode == "auto":  # CUDA graphs on CUDA (static shapes make them possible)
        mode = "reduce-overhead" if device.type == "cuda" else None
    backbone.compile(dynamic=False, mode=mode)
    return True


# torch.compile mode for train.compile. "auto": "reduce-overhead" (CUDA graphs) on CUDA, the
# default elsewhere. Measured (H100, bert-base, batch 64, docs/benchmarks.md): simcse 1,540 ->
# 3,480 sent/s, simcse_san 805 -> 2,546, logged losses equal to plain compile's to ~1e-3.
COMPILE_MODE: str | None = "auto"
PREFETCH_DEPTH = 4  # steps tokenized ahead by the worker thread; 0: in the loop (bench compares)


class Inline:
    """``Prefetch``'s interface, computed in the loop."""

    def __init__(self, fn: Callable[[int], Any], start: int) -> None:
        self.fn, self.at = fn, start

    def next(self) -> Any:
        self.at += 1
        return self.fn(self.at - 1)

    def close(self) -> None:
        pass


class Prefetch:
    """``fn(step)`` for steps ``start..stop-1``, computed ``depth`` steps ahead in a daemon thread
    (results in step order; an exception surfaces at the step that raised it)."""

    def __init__(self, fn: Callable[[int], Any], start: int, stop: int, depth: int = 4) -> None:
        import queue
        import threading

        self._q: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()

        def work() -> None:
            for at in range(start, stop):
                if self._stop.is_set():
                    return
                try:
                    item = (True, fn(at))
                except BaseException as exc:  # noqa: BLE001  # handed to the consumer
                    item = (False, exc)
                self._q.put(item)  # blocks while `depth` steps wait; close() drains
                if not item[0]:
                    return

        self._thread = threading.Thread(target=work, name="train-tokenize", daemon=True)
        self._thread.start()

    def next(self) -> Any:
        ok, value = self._q.get()
        if not ok:
            raise value
        return value

    def close(self) -> None:
        import queue

        self._stop.set()
        while self._thread.is_alive():
            try:
                self._q.get(timeout=0.05)
            except queue.Empty:
                pass


# ----------------------------------------------------------------------------------------------
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
    s = settings
    info = D.init_distributed()
    device = pick_device(index=info.local_rank)  # cuda:<local rank> when CUDA is present, else cpu
    out_dir = Path(out_dir)
    fp = s.fingerprint(info.world_size)
    work = Path(work_dir) if work_dir else out_dir / f"work-{fp[:8]}"
    work.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(s.seed)  # identical initial weights (MLP) on every rank

    teacher_specs = resolve_specs(s)  # bad teacher settings fail before any data or model is read
    # a tracker whose package is missing fails here, before any data or model is read
    trackers = Trackers.create(report_to if info.is_main else None, out_dir, f"{s.method}-seed{s.seed}")
    trackers.log_settings(s.to_dict())
    if data is None:
        data = load_training_data(corpus_shards, augment_shards, s.needed_columns(), s.post_process,
                                  failed=s.failed_augmentation, negation_rules=s.negation_rules)
    global_batch = s.batch_size * info.world_size
    n_batches = batches_per_epoch(len(data), global_batch)
    if n_batches == 0:
        raise ValueError(f"global batch {global_batch} (train setting batch_size={s.batch_size} x {info.world_size} "
                         f"device(s)) is larger than the {len(data)} usable training rows")
    total_steps = s.max_steps or s.epochs * n_batches
    log.info("method=%s seed=%d rows=%d global_batch=%d (= %d per device x %d) steps=%d (%d per epoch)",
             s.method, s.seed, len(data), global_batch, s.batch_size, info.world_size, total_steps, n_batches)

    encoder = ContrastiveEncoder.from_pretrained(s.init_model, s.pooler, s.max_length, s.mlp_only_train, s.dropout)
    replacement_terms.install_projection(encoder, s)  # SynCSE's projection head (else no-op)
    encoder.to(device).train()
    max_pos = getattr(encoder.backbone.config, "max_position_embeddings", None) or s.eval_max_length
    eval_len = min(s.eval_max_length, int(max_pos))
    step_model: nn.Module = StepModel(encoder, s)
    core_model = step_model  # StepModel.tokenize, also when DDP wraps it
    # the worker thread tokenizes with its own tokenizer copy (a fast tokenizer's truncation
    # settings are mutable state: evaluation must not share it across threads)
    core_model.prompt = PromptTokenizer(copy.deepcopy(encoder.tokenizer), s.max_length)
    if s.compile and compile_backbone(encoder.backbone, device):
        core_model.static_width = True  # fixed shapes: one compiled graph, no recompiles
    objective = Objective(s, encoder).to(device)
    if info.enabled:
        step_model = torch.nn.parallel.DistributedDataParallel(
            step_model, device_ids=[info.local_rank] if device.type == "cuda" else None)
    teachers = (Teachers(teacher_specs, load_teachers(teacher_specs, encoder, s.max_length, device), s)
                if teacher_specs else None)

    params = [p for p in encoder.parameters() if p.requires_grad]
    # fused AdamW on CUDA: one kernel for all parameters; CPU keeps the default
    optimizer = torch.optim.AdamW(encoder.param_groups(s.lr, s.head_lr), lr=s.lr, weight_decay=s.weight_decay,
                                  **({"fused": True} if device.type == "cuda" else {}))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda(total_steps, s.warmup_ratio))
    amp_dtype = autocast_dtype(resolve_precision(s.precision, device, setting="train.precision"))
    scaler = torch.amp.GradScaler(device.type, enabled=amp_dtype == torch.float16)

    # --- state, possibly restored from the last checkpoint ---------------------------------
    step, best_score, best_step = 0, -math.inf, None
    metrics_path = work / "metrics.jsonl"
    torch.manual_seed(s.seed * 1000 + info.rank)  # different dropout masks per rank
    # the content of every file read: a resume on other data starts over (train/inputs.py)
    models = {"init_model": resolve_model(s.init_model, setting="train.init_model"),
              **{f"teachers[{i}]": t.model for i, t in enumerate(teacher_specs)}}
    inputs = input_digests(corpus_shards, {c: (augment_shards or {}).get(c, ()) for c in s.needed_columns()}, models)
    checkpoint = Checkpointer(work, s, info, fp, {"model": encoder, "optimizer": optimizer,
                                                  "scheduler": scheduler, "scaler": scaler}, inputs=inputs)
    if resume and (restored := checkpoint.restore()) is not None:
        step, best_score, best_step = restored
        log.info("resumed from %s at step %d", checkpoint.path, step)
    if info.is_main:  # drop metric lines past the resumed step (they will be recomputed)
        trim_metrics(metrics_path, step)

    def write_metric(rec: dict[str, Any]) -> None:
        if info.is_main:
            with metrics_path.open("a") as fh:
                fh.write(json.dumps(rec, sort_keys=True) + "\n")
            trackers.log_record(rec)  # metrics.jsonl stays the source of truth

    def evaluate() -> float | None:
        if senteval_dir is None:
            return None
        from hardneg.encoders import Encoder
        from hardneg.evaluate.sts import stsb_dev_spearman

        enc = Encoder(model=encoder.backbone, tokenizer=encoder.tokenizer, pooler=s.export_pooler,
                      max_length=eval_len, device=str(device),
                      template=s.templates[0] if s.templates else None, name=s.method)
        score = float(stsb_dev_spearman(enc.encode, senteval_dir, max_pairs=s.dev_max_pairs))
        encoder.train()
        return score

    if step == 0 and info.is_main:
        score = evaluate()
        if score is not None:
            write_metric({"kind": "eval", "step": 0, "stsb_dev": score})
            log.info("step 0 (initial model): STS-B dev %.2f", score)

    frame = data.frame
    texts_all = frame["text"].to_list()
    extra_all = {view: frame[c].to_list() for view, c in views.data_views(s).items()}
    neg_index = replacement_terms.build_index(s, texts_all)  # SynCSE's corpus-pool index (else None)
    counters = replacement_terms.counters(objective.methods, neg_index)
    checkpoint.restore_counters(counters)  # a resumed run keeps the counts of its earlier steps
    bar = tqdm(total=total_steps, initial=step, desc=f"train {s.method}", unit="step",
               disable=not (s.show_progress and info.is_main))
    t_last, n_sent = time.perf_counter(), 0
    steps_this_run = 0

    def prepare(at: int) -> tuple[list[int], list[str], dict[str, list[str]], dict[str, Any]]:
        ep, ix = divmod(at, n_batches)
        rows = batch_rows(len(data), s.seed, ep, ix, global_batch, info.rank, info.world_size)
        texts = [texts_all[i] for i in rows]
        extra = {c: [v[i] for i in rows] for c, v in extra_all.items()}
        # SynCSE's pool negatives join the batch only at its step: tokenized then, not here
        return rows, texts, extra, core_model.tokenize(texts, extra) if neg_index is None else None

    # tokenization of the next steps runs in a worker thread (the fast tokenizer releases the
    # GIL) while the device runs this one; non-finite losses are checked on the device and read
    # back only at logging/eval/checkpoint steps on CUDA (every step on CPU, where it is free)
    upcoming = Prefetch(prepare, step, total_steps, PREFETCH_DEPTH) if PREFETCH_DEPTH > 0 else Inline(prepare, step)
    deferred = device.type == "cuda"

    def autocast() -> torch.autocast:
        return torch.autocast(device.type, dtype=amp_dtype or torch.float32, enabled=amp_dtype is not None)

    bad_step = torch.zeros((), dtype=torch.long, device=device)  # first non-finite step (1-based), 0 = none
    parts: dict[str, torch.Tensor] = {}
    while step < total_steps:
        epoch = step // n_batches
        rows, texts, extra, tokens = upcoming.next()
        if neg_index is not None:  # SynCSE: pool negatives depend on this step's encoder
            extra["syncse"] = neg_index.negatives(encoder, rows, step, info)
            tokens = core_model.tokenize(texts, extra)
        teacher_sims = teachers.similarities(texts, extra.get("san"), info) if teachers is not None else None
        try:
            cached = (CachedStep(core_model, texts, extra, tokens, s.mini_batch_size, device)
                      if s.mini_batch_size is not None else None)  # train.mini_batch_size: GradCache
            with autocast():
                emb = step_model(texts, extra, tokens) if cached is None else cached.embed()
            assert emb["anchor"].shape[0] * info.world_size == global_batch
            loss, parts = objective(emb, info, teacher_sims)
            finite = torch.isfinite(parts["loss"])
            bad_step = torch.where((bad_step == 0) & ~finite, step + 1, bad_step)
            if not deferred:
                check_finite(bad_step, parts, n_batches, info)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            if cached is not None:  # the loss's gradient reached the embeddings: now the encoder
                cached.backward(step_model, autocast)
            scaler.unscale_(optimizer)
            grad_norm = torch.nn.utils.clip_grad_norm_(params, s.grad_clip if s.grad_clip > 0 else float("inf"))
            scaler.step(optimizer)
            scaler.update()
            if objective.recall is not None and s.recall_form == "decoupled":  # RecAdam-style option
                objective.recall.decoupled_step(objective.recall_params, scheduler.get_last_lr()[0])
        except torch.OutOfMemoryError as exc:
            upcoming.close()
            raise out_of_memory(exc, s, device) from None
        scheduler.step()
        step += 1
        steps_this_run += 1
        n_sent += global_batch
        bar.update(1)
        sync_now = (step % s.log_every == 0 or step % s.eval_every == 0 or step % s.checkpoint_every == 0
                    or step == total_steps)
        if deferred and sync_now:  # before any metric, evaluation or checkpoint of this step
            check_finite(bad_step, parts, n_batches, info)
        if step % s.log_every == 0 or step == total_steps:
            values = {k: float(v) for k, v in parts.items()}  # the only read-back of the step
            now = time.perf_counter()
            rec = {"kind": "train", "step": step, "epoch": epoch, "lr": scheduler.get_last_lr()[0],
                   "grad_norm": float(grad_norm), "global_batch": global_batch, "world_size": info.world_size,
                   "sent_per_s": n_sent / max(now - t_last, 1e-9), **values}
            write_metric(rec)
            bar.set_postfix(loss=f"{values['loss']:.4f}")
            t_last, n_sent = now, 0
        if step % s.eval_every == 0 or step == total_steps:
            if info.is_main:
                score = evaluate()
                if score is not None:
                    improved = score > best_score
                    if improved:
                        best_score, best_step = score, step
                        save_atomic({k: v.detach().cpu() for k, v in encoder.state_dict().items()}, work / "best.pt")
                    write_metric({"kind": "eval", "step": step, "stsb_dev": score, "best": best_score})
                    log.info("step %d: STS-B dev %.2f (best %.2f at step %s)", step, score, best_score, best_step)
            D.barrier(info)
        if step % s.checkpoint_every == 0 or step == total_steps:
            checkpoint.save(step, best_score, best_step, counters)
        if step % s.eval_every == 0 or step % s.checkpoint_every == 0:
            t_last, n_sent = time.perf_counter(), 0  # throughput excludes evaluation and saving
        if halt_after_steps is not None and steps_this_run >= halt_after_steps and step < total_steps:
            bar.close()
            upcoming.close()
            trackers.close()
            return {"halted_at": step}
    bar.close()
    upcoming.close()

    summary: dict[str, Any] = {}
    method_fallbacks = replacement_terms.fallbacks(objective.methods, neg_index, info)  # every rank (all-reduce)
    if info.is_main:
        if best_step is not None and (work / "best.pt").exists():
            encoder.load_state_dict(torch.load(work / "best.pt", weights_only=True))
        final_dev = evaluate() if best_step is None else best_score
        summary = {
            "method": s.method, "seed": s.seed, "steps": total_steps, "global_batch": global_batch,
            "per_device_batch": s.batch_size, "world_size": info.world_size,
            "best_step": best_step if best_step is not None else total_steps,
            "stsb_dev": final_dev, "data": data.counts, "settings": s.to_dict(), "fingerprint": fp,
            "reading": reading(s.to_dict()),  # paper vs reference code (hardneg.train.reading)
        }
        if method_fallbacks:
            summary["fallbacks"] = method_fallbacks
        from hardneg.train.export import export_sentence_transformers

        export_sentence_transformers(
            encoder.backbone, encoder.tokenizer, out_dir / "model", pooler=s.export_pooler,
            max_length=eval_len, template=s.templates[0] if s.templates else None,
            card=summary,
        )
        (out_dir / "metrics.jsonl").write_bytes(metrics_path.read_bytes())
        _plot_curve(metrics_path, out_dir / "curve.png")
        write_json_atomic(summary, out_dir / "summary.json")
        trackers.log_final({"stsb_dev": final_dev, "best_step": summary["best_step"]})
    trackers.close()
    D.barrier(info)
    if info.is_main and not keep_checkpoints:  # the job is complete: resume state is dead weight
        freed = remove_resume_state(work)
        log.info("removed the resume state in %s (%.1f MB; train.keep_checkpoints keeps it)", work, freed / 1e6)
    return summary
