"""Everything a training run builds before its first step, in one record (``Run``), and its
resumable progress (``Progress``): what the loop in ``trainer.py`` reads and advances.

``set_up`` keeps the order that determinism depends on: the seed before the model (identical
initial weights on every rank), then the per-rank seed (dropout masks) before a checkpoint's RNG
state may replace it in ``restore_progress``.
"""

from __future__ import annotations

import copy
import json
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from hardneg.encoders.tokenize import PromptTokenizer
from hardneg.models.device import pick_device
from hardneg.models.precision import autocast_dtype, resolve_precision
from hardneg.models.resolve import resolve_model
from hardneg.train import distributed as D
from hardneg.train.batches import StepBatches
from hardneg.train.checkpoint import Checkpointer, trim_metrics
from hardneg.train.data import TrainingData, batches_per_epoch, load_training_data
from hardneg.train.inputs import input_digests
from hardneg.train.methods.objective import Objective, prepare_encoder
from hardneg.train.model import ContrastiveEncoder
from hardneg.train.settings import TrainSettings
from hardneg.train.speed import compile_backbone
from hardneg.train.step_model import StepModel
from hardneg.train.teachers import Teachers, load_teachers, resolve_specs
from hardneg.train.tracking import Trackers

if TYPE_CHECKING:
    from hardneg.train.fallbacks import FallbackCounts
    from hardneg.train.negindex import NegativeIndex

log = logging.getLogger(__name__)


def lr_lambda(total_steps: int, warmup_ratio: float) -> Callable[[int], float]:
    """Linear warm-up then linear decay to 0 (the transformers/SimCSE schedule)."""
    warmup = round(total_steps * warmup_ratio)

    def f(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup))

    return f


@dataclass
class Run:
    """One method x seed as built by ``set_up``: settings, devices, sizes, models, optimizer,
    checkpointer, trackers and the step inputs. No field is reassigned once the loop starts (the
    objects they hold train); what the loop advances is in ``Progress``."""

    s: TrainSettings
    info: D.DistInfo
    device: torch.device
    out_dir: Path
    work: Path  # resume state: last.pt, best.pt, rng-rank*.pt, metrics.jsonl
    fingerprint: str
    data: TrainingData
    global_batch: int  # per-device batch x world size
    n_batches: int  # per epoch
    total_steps: int
    encoder: ContrastiveEncoder
    core_model: StepModel  # tokenizes; step_model is the same module, or DDP around it
    step_model: nn.Module
    objective: Objective
    teachers: Teachers | None
    params: list[nn.Parameter]  # clipped together
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    amp_dtype: torch.dtype | None
    scaler: torch.amp.GradScaler
    eval_len: int  # evaluation/export max length (the model's position limit caps it)
    trackers: Trackers
    checkpoint: Checkpointer
    batches: StepBatches
    neg_index: NegativeIndex | None  # SynCSE's corpus-pool index
    counters: dict[str, FallbackCounts]  # fallback counts, checkpointed per rank

    @property
    def metrics_path(self) -> Path:
        return self.work / "metrics.jsonl"

    def autocast(self) -> torch.autocast:
        """The step's mixed-precision context (``train.precision``); float32 when off."""
        return torch.autocast(self.device.type, dtype=self.amp_dtype or torch.float32,
                              enabled=self.amp_dtype is not None)

    def write_metric(self, rec: dict[str, Any]) -> None:
        """Append one record to metrics.jsonl (main rank), then hand it to the trackers;
        metrics.jsonl stays the source of truth."""
        if self.info.is_main:
            with self.metrics_path.open("a") as fh:
                fh.write(json.dumps(rec, sort_keys=True) + "\n")
            self.trackers.log_record(rec)


@dataclass
class Progress:
    """What the loop advances and a checkpoint restores: the step and the best dev score so far."""

    step: int = 0
    best_score: float = -math.inf
    best_step: int | None = None


def set_up(s: TrainSettings, corpus_shards: Sequence[str | Path], out_dir: str | Path,
           augment_shards: dict[str, Sequence[str | Path]] | None, work_dir: str | Path | None,
           data: TrainingData | None, report_to: str | Sequence[str] | None) -> Run:
    """Build the run: process group and device, data and sizes, models, optimizer, checkpointer.
    Bad settings (teachers, trackers, a batch larger than the data) fail before a model is read."""
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
    prepare_encoder(encoder, s)  # each method's change to the encoder (SynCSE's projection head)
    encoder.to(device).train()
    max_pos = getattr(encoder.backbone.config, "max_position_embeddings", None) or s.eval_max_length
    core_model = StepModel(encoder, s)
    # the worker thread tokenizes with its own tokenizer copy (a fast tokenizer's truncation
    # settings are mutable state: evaluation must not share it across threads)
    core_model.prompt = PromptTokenizer(copy.deepcopy(encoder.tokenizer), s.max_length)
    if s.compile and compile_backbone(encoder.backbone, device):
        core_model.static_width = True  # fixed shapes: one compiled graph, no recompiles
    objective = Objective(s, encoder).to(device)
    step_model: nn.Module = core_model
    if info.enabled:
        step_model = torch.nn.parallel.DistributedDataParallel(
            core_model, device_ids=[info.local_rank] if device.type == "cuda" else None)
    teachers = (Teachers(teacher_specs, load_teachers(teacher_specs, encoder, s.max_length, device), s)
                if teacher_specs else None)

    params = [p for p in encoder.parameters() if p.requires_grad]
    # fused AdamW on CUDA: one kernel for all parameters; CPU keeps the default
    optimizer = torch.optim.AdamW(encoder.param_groups(s.lr, s.head_lr), lr=s.lr, weight_decay=s.weight_decay,
                                  **({"fused": True} if device.type == "cuda" else {}))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda(total_steps, s.warmup_ratio))
    amp_dtype = autocast_dtype(resolve_precision(s.precision, device, setting="train.precision"))
    scaler = torch.amp.GradScaler(device.type, enabled=amp_dtype == torch.float16)

    torch.manual_seed(s.seed * 1000 + info.rank)  # different dropout masks per rank
    # the content of every file read: a resume on other data starts over (train/inputs.py)
    models = {"init_model": resolve_model(s.init_model, setting="train.init_model"),
              **{f"teachers[{i}]": t.model for i, t in enumerate(teacher_specs)}}
    inputs = input_digests(corpus_shards, {c: (augment_shards or {}).get(c, ()) for c in s.needed_columns()}, models)
    checkpoint = Checkpointer(work, s, info, fp, {"model": encoder, "optimizer": optimizer,
                                                  "scheduler": scheduler, "scaler": scaler}, inputs=inputs)

    batches = StepBatches(data, s, global_batch, n_batches, info, core_model)
    neg_index = objective.negative_index(batches.texts)  # SynCSE's corpus-pool index (else None)
    batches.tokenize_ahead = neg_index is None  # SynCSE's pool negatives join the batch at its step
    return Run(s=s, info=info, device=device, out_dir=out_dir, work=work, fingerprint=fp, data=data,
               global_batch=global_batch, n_batches=n_batches, total_steps=total_steps, encoder=encoder,
               core_model=core_model, step_model=step_model, objective=objective, teachers=teachers,
               params=params, optimizer=optimizer, scheduler=scheduler, amp_dtype=amp_dtype, scaler=scaler,
               eval_len=min(s.eval_max_length, int(max_pos)), trackers=trackers, checkpoint=checkpoint,
               batches=batches, neg_index=neg_index,
               counters=objective.counters(neg_index))


def restore_progress(run: Run, resume: bool) -> Progress:
    """The progress of the last checkpoint (weights, optimizer, RNG and fallback counts loaded into
    the run), or a fresh start; metric lines past the resumed step are dropped (recomputed)."""
    progress = Progress()
    if resume and (restored := run.checkpoint.restore()) is not None:
        progress.step, progress.best_score, progress.best_step = restored
        log.info("resumed from %s at step %d", run.checkpoint.path, progress.step)
    if run.info.is_main:
        trim_metrics(run.metrics_path, progress.step)
    run.checkpoint.restore_counters(run.counters)  # a resumed run keeps the counts of its earlier steps
    return progress
