"""The training loop (nanoGPT-style: one readable function, state in plain dicts).

One run = one method x seed. Per step: the anchor and positive views (two dropout masks, or the
two prompt templates) plus negation/paraphrase go through the encoder in one pass; SAN negatives
in a second pass at their own dropout p2 (SAN Table 6). Embeddings are all-gathered so in-batch
negatives span the global batch (per-device batch x world size). STS-B dev every ``eval_every``
steps keeps the best weights (SimCSE convention); ``last.pt`` checkpoints let a killed job resume
mid-epoch and reach the same final weights as an uninterrupted run.
"""

from __future__ import annotations

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

from hardneg.shards import atomic_path, write_json_atomic
from hardneg.train import distributed as D
from hardneg.train.data import TrainingData, batch_rows, batches_per_epoch, load_training_data
from hardneg.train.model import ContrastiveEncoder, dropout_rate
from hardneg.train.objectives import (
    BidirectionalMargin,
    HiNCE,
    InfoNCE,
    ListMLESAN,
    RankingConsistency,
    RankingDistillation,
    RecallLoss,
    TwoWayMaxMargin,
)
from hardneg.train.settings import TrainSettings
from hardneg.train.teachers import Teachers, load_teachers, resolve_specs

log = logging.getLogger(__name__)


class TrainingDiverged(RuntimeError):
    """A non-finite loss: training stops and names the step."""


class IncompatibleCheckpoint(ValueError):
    """A checkpoint written under different settings (or world size)."""


# ----------------------------------------------------------------------------------------------
class StepModel(nn.Module):
    """Every forward pass of one step inside ONE forward call (so DDP sees one forward per
    backward): views (+ negation, paraphrase) at the model's dropout, SAN at ``san_dropout``.
    Each view's template is ``settings.view_template(view)`` (SNCSE: negation and SAN negatives
    in the positive's template)."""

    def __init__(self, encoder: ContrastiveEncoder, settings: TrainSettings) -> None:
        super().__init__()
        self.encoder = encoder
        self.s = settings
        self.t1, self.t2 = settings.view_template("anchor"), settings.view_template("positive")

    def forward(self, texts: list[str], extra: dict[str, list[str]]) -> dict[str, torch.Tensor]:
        p = self.encoder.prompt
        groups = [("anchor", p.ids(texts, self.t1)), ("positive", p.ids(texts, self.t2))]
        for col in ("negation", "paraphrase"):
            if col in extra:
                groups.append((col, p.ids(extra[col], self.s.view_template(col))))
        rows = [r for _, g in groups for r in g]
        batch = {k: v.to(self.encoder.device) for k, v in p.pad(rows).items()}
        vecs = self.encoder.embed(batch, use_mlp=True)
        out, start = {}, 0
        for name, g in groups:
            out[name] = vecs[start : start + len(g)]
            start += len(g)
        if "san" in extra:
            with dropout_rate(self.encoder, self.s.san_dropout):
                out["san"] = self.encoder.embed(self.encoder.tokenize(extra["san"], self.s.view_template("san")),
                                                use_mlp=True)
        return out


class Objective(nn.Module):
    """The configured loss: InfoNCE or HiNCE over the global batch, plus weighted BML (SNCSE),
    two-way margin + recall (OssCSE: L = lc + lr + lambda*lm), RankCSE's consistency and ranking
    distillation and ListMLE+SAN (SAN Eq. 6: beta*Lcons + gamma*LListMLE + LHiNCE + lambda*LListMLE+SAN;
    Eq. 7: mu*LBML + lambda*LListMLE + zeta*LHiNCE + beta*LListMLE+SAN, zeta = 1)."""

    def __init__(self, s: TrainSettings, encoder: ContrastiveEncoder) -> None:
        super().__init__()
        self.s = s
        self.contrast = HiNCE(s.temperature, s.tau2) if s.negatives == "san" else InfoNCE(s.temperature)
        self.bml = BidirectionalMargin(s.bml_alpha, s.bml_beta) if s.bml_weight > 0 else None
        self.margin = TwoWayMaxMargin(s.margin_alpha, s.margin_beta) if s.margin_weight > 0 else None
        self.listmle = ListMLESAN(s.listmle_tau) if s.listmle_weight > 0 else None
        self.consistency = (RankingConsistency(s.temperature, s.consistency_form)
                            if s.consistency_weight > 0 else None)
        self.distill = RankingDistillation(s.distill_tau, s.distill_loss) if s.distill_weight > 0 else None
        # recall loss over the backbone's weights (the pretrained model's parameters, OssCSE Eq. 4)
        self.recall_params = [p for p in encoder.backbone.parameters() if p.requires_grad]
        self.recall = (RecallLoss([(n, p) for n, p in encoder.backbone.named_parameters() if p.requires_grad],
                                  s.recall_gamma)
                       if s.recall_gamma > 0 else None)

    def forward(self, emb: dict[str, torch.Tensor], info: D.DistInfo,
                teacher_sims: dict[str, torch.Tensor] | None = None) -> tuple[torch.Tensor, dict[str, float]]:
        """(loss to back-propagate, logged components). Global-batch terms are scaled by the
        world size so that DDP's gradient averaging gives the single-device gradient."""
        g1 = D.gather_with_grad(emb["anchor"], info)
        g2 = D.gather_with_grad(emb["positive"], info)
        parts: dict[str, torch.Tensor] = {}
        if self.s.negatives == "san":
            gs = D.gather_with_grad(emb["san"], info)
            parts["hince"] = self.contrast(g1, g2, gs)
        else:
            parts["infonce"] = self.contrast(g1, g2)
        global_terms = parts[next(iter(parts))]
        if self.listmle is not None:
            parts["listmle_san"] = self.listmle(g1, gs, teacher_sims["san"])
            global_terms = global_terms + self.s.listmle_weight * parts["listmle_san"]
        if self.consistency is not None:
            parts["consistency"] = self.consistency(g1, g2)
            global_terms = global_terms + self.s.consistency_weight * parts["consistency"]
        if self.distill is not None:
            parts[f"distill_{self.s.distill_loss}"] = self.distill(g1, g2, teacher_sims["distill"])
            global_terms = global_terms + self.s.distill_weight * parts[f"distill_{self.s.distill_loss}"]
        local_terms = torch.zeros((), device=g1.device)
        if self.bml is not None:
            parts["bml"] = self.bml(emb["anchor"], emb["positive"], emb["negation"])
            local_terms = local_terms + self.s.bml_weight * parts["bml"]
        if self.margin is not None:
            parts["margin"] = self.margin(emb["anchor"], emb["paraphrase"], emb["negation"])
            local_terms = local_terms + self.s.margin_weight * parts["margin"]
        if self.recall is not None and self.s.recall_form == "coupled":  # OssCSE Eq. 5: L = lc + lr + lambda*lm
            parts["recall"] = self.recall(self.recall_params)
            local_terms = local_terms + parts["recall"]
        total = global_terms + local_terms
        backward = global_terms * info.world_size + local_terms
        logged = {k: float(v.detach()) for k, v in parts.items()}
        logged["loss"] = float(total.detach())
        return backward, logged


# ----------------------------------------------------------------------------------------------
def resolve_precision(precision: str, device: torch.device) -> torch.dtype | None:
    """Autocast dtype: bf16 on CUDA when supported (else fp16), fp32 on CPU for 'auto'."""
    if precision == "fp32" or (precision == "auto" and device.type != "cuda"):
        return None
    if precision == "auto":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return {"bf16": torch.bfloat16, "fp16": torch.float16}[precision]


def lr_lambda(total_steps: int, warmup_ratio: float) -> Callable[[int], float]:
    """Linear warm-up then linear decay to 0 (the transformers/SimCSE schedule)."""
    warmup = round(total_steps * warmup_ratio)

    def f(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup))

    return f


def _rng_state() -> dict[str, Any]:
    state = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state()
    return state


def _set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"])


def _save(obj: Any, path: Path) -> None:
    with atomic_path(path) as tmp:
        torch.save(obj, tmp)


def check_compatible(ckpt: dict, settings: TrainSettings, world_size: int, path: Path) -> None:
    """Raise IncompatibleCheckpoint naming the settings that differ."""
    if ckpt.get("fingerprint") == settings.fingerprint(world_size):
        return
    old = dict(ckpt.get("settings", {}), world_size=ckpt.get("world_size"))
    new = dict(settings.to_dict(), world_size=world_size)
    from hardneg.train.settings import NON_STRUCTURAL

    diff = [f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in sorted(set(old) | set(new))
            if k not in NON_STRUCTURAL and old.get(k) != new.get(k)]
    raise IncompatibleCheckpoint(
        f"{path}: checkpoint was written with different settings ({'; '.join(diff) or 'unknown'}); "
        f"delete {path.parent} to start over, or restore the settings"
    )


def _plot_curve(metrics_path: Path, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    with atomic_path(png) as tmp:
        fig.savefig(tmp, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)


# ----------------------------------------------------------------------------------------------
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
) -> dict[str, Any]:
    """Train one method x seed; export the best model to ``out_dir/model``.

    Writes ``out_dir/{model/, metrics.jsonl, curve.png, summary.json}``; checkpoints live in
    ``work_dir`` (default ``out_dir/work-<settings fingerprint>``) so a re-run resumes.
    ``halt_after_steps`` stops this process after that many steps without exporting (as a job
    killed mid-run would; used by the resume test).
    """
    s = settings
    info = D.init_distributed()
    device = torch.device(f"cuda:{info.local_rank}" if torch.cuda.is_available() else "cpu")
    out_dir = Path(out_dir)
    fp = s.fingerprint(info.world_size)
    work = Path(work_dir) if work_dir else out_dir / f"work-{fp[:8]}"
    work.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(s.seed)  # identical initial weights (MLP) on every rank

    teacher_specs = resolve_specs(s)  # bad teacher settings fail before any data or model is read
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
    encoder.to(device).train()
    max_pos = getattr(encoder.backbone.config, "max_position_embeddings", None) or s.eval_max_length
    eval_len = min(s.eval_max_length, int(max_pos))
    step_model: nn.Module = StepModel(encoder, s)
    objective = Objective(s, encoder).to(device)
    if info.enabled:
        step_model = torch.nn.parallel.DistributedDataParallel(
            step_model, device_ids=[info.local_rank] if device.type == "cuda" else None)
    teachers = (Teachers(teacher_specs, load_teachers(teacher_specs, encoder, s.max_length, device), s)
                if teacher_specs else None)

    params = [p for p in encoder.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=s.lr, weight_decay=s.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda(total_steps, s.warmup_ratio))
    amp_dtype = resolve_precision(s.precision, device)
    scaler = torch.amp.GradScaler(device.type, enabled=amp_dtype == torch.float16)

    # --- state, possibly restored from the last checkpoint ---------------------------------
    step, best_score, best_step = 0, -math.inf, None
    ckpt_path = work / "last.pt"
    metrics_path = work / "metrics.jsonl"
    torch.manual_seed(s.seed * 1000 + info.rank)  # different dropout masks per rank
    if resume and ckpt_path.exists():
        ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=False)
        check_compatible(ckpt, s, info.world_size, ckpt_path)
        encoder.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        scheduler.load_state_dict(ckpt["scheduler"])
        scaler.load_state_dict(ckpt["scaler"])
        step, best_score, best_step = ckpt["step"], ckpt["best_score"], ckpt["best_step"]
        _set_rng_state(torch.load(work / f"rng-rank{info.rank}.pt", weights_only=False)[step])
        log.info("resumed from %s at step %d", ckpt_path, step)
    if info.is_main:  # drop metric lines past the resumed step (they will be recomputed)
        lines = metrics_path.read_text().splitlines() if metrics_path.exists() else []
        kept = [x for x in lines if x.strip() and json.loads(x)["step"] <= step] if step > 0 else []
        metrics_path.write_text("".join(x + "\n" for x in kept))

    def write_metric(rec: dict[str, Any]) -> None:
        if info.is_main:
            with metrics_path.open("a") as fh:
                fh.write(json.dumps(rec, sort_keys=True) + "\n")

    def evaluate() -> float | None:
        if senteval_dir is None:
            return None
        from hardneg.encoders import Encoder
        from hardneg.evaluate.sts import stsb_dev_spearman

        enc = Encoder(model=encoder.backbone, tokenizer=encoder.tokenizer, pooler=s.export_pooler,
                      max_length=eval_len, device=str(device),
                      template=s.templates[0] if s.templates else None, name=s.method)
        if s.dev_max_pairs:
            from hardneg.data.senteval import load_pairs
            from hardneg.evaluate.metrics import spearman
            from hardneg.evaluate.sts import predict, subsample

            pairs = subsample(load_pairs(senteval_dir, "STSBenchmark", "dev"), s.dev_max_pairs)
            preds = predict(enc.encode, pairs)
            score = 100.0 * float(spearman(preds["cosine"].to_numpy(), preds["score"].to_numpy()))
        else:
            score = float(stsb_dev_spearman(enc.encode, senteval_dir))
        encoder.train()
        return score

    ckpt_step = [step]

    def save_checkpoint() -> None:
        # RNG per rank, keyed by step; the previous entry is kept so a kill between this file
        # and last.pt still finds the state that matches last.pt
        rng = work / f"rng-rank{info.rank}.pt"
        states = torch.load(rng, weights_only=False) if rng.exists() else {}
        states = {k: v for k, v in states.items() if k == ckpt_step[0]}
        states[step] = _rng_state()
        _save(states, rng)
        D.barrier(info)
        if info.is_main:
            _save({"fingerprint": fp, "settings": s.to_dict(), "world_size": info.world_size, "step": step,
                   "model": encoder.state_dict(), "optimizer": optimizer.state_dict(),
                   "scheduler": scheduler.state_dict(), "scaler": scaler.state_dict(),
                   "best_score": best_score, "best_step": best_step}, ckpt_path)
        D.barrier(info)
        ckpt_step[0] = step

    if step == 0 and info.is_main:
        score = evaluate()
        if score is not None:
            write_metric({"kind": "eval", "step": 0, "stsb_dev": score})
            log.info("step 0 (initial model): STS-B dev %.2f", score)

    cols = s.needed_columns()
    frame = data.frame
    texts_all = frame["text"].to_list()
    extra_all = {c: frame[c].to_list() for c in cols if c in ("san", "negation", "paraphrase")}
    bar = tqdm(total=total_steps, initial=step, desc=f"train {s.method}", unit="step",
               disable=not (s.show_progress and info.is_main))
    t_last, n_sent = time.perf_counter(), 0
    steps_this_run = 0
    while step < total_steps:
        epoch, index = divmod(step, n_batches)
        rows = batch_rows(len(data), s.seed, epoch, index, global_batch, info.rank, info.world_size)
        texts = [texts_all[i] for i in rows]
        extra = {c: [v[i] for i in rows] for c, v in extra_all.items()}
        teacher_sims = teachers.similarities(texts, extra.get("san"), info) if teachers is not None else None
        with torch.autocast(device.type, dtype=amp_dtype or torch.float32, enabled=amp_dtype is not None):
            emb = step_model(texts, extra)
        assert emb["anchor"].shape[0] * info.world_size == global_batch
        loss, parts = objective(emb, info, teacher_sims)
        if not D.all_true(math.isfinite(parts["loss"]), info):
            raise TrainingDiverged(
                f"non-finite loss at step {step + 1} (epoch {epoch}, batch {index}): {parts}; "
                f"lower train setting 'lr' or use precision fp32"
            )
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        grad_norm = float(torch.nn.utils.clip_grad_norm_(params, s.grad_clip if s.grad_clip > 0 else float("inf")))
        scaler.step(optimizer)
        scaler.update()
        if objective.recall is not None and s.recall_form == "decoupled":
            objective.recall.decoupled_step(objective.recall_params, scheduler.get_last_lr()[0])
        scheduler.step()
        step += 1
        steps_this_run += 1
        n_sent += global_batch
        bar.update(1)
        if step % s.log_every == 0 or step == total_steps:
            now = time.perf_counter()
            rec = {"kind": "train", "step": step, "epoch": epoch, "lr": scheduler.get_last_lr()[0],
                   "grad_norm": grad_norm, "global_batch": global_batch, "world_size": info.world_size,
                   "sent_per_s": n_sent / max(now - t_last, 1e-9), **parts}
            write_metric(rec)
            bar.set_postfix(loss=f"{parts['loss']:.4f}")
            t_last, n_sent = now, 0
        if step % s.eval_every == 0 or step == total_steps:
            if info.is_main:
                score = evaluate()
                if score is not None:
                    improved = score > best_score
                    if improved:
                        best_score, best_step = score, step
                        _save({k: v.detach().cpu() for k, v in encoder.state_dict().items()}, work / "best.pt")
                    write_metric({"kind": "eval", "step": step, "stsb_dev": score, "best": best_score})
                    log.info("step %d: STS-B dev %.2f (best %.2f at step %s)", step, score, best_score, best_step)
            D.barrier(info)
        if step % s.checkpoint_every == 0 or step == total_steps:
            save_checkpoint()
        if step % s.eval_every == 0 or step % s.checkpoint_every == 0:
            t_last, n_sent = time.perf_counter(), 0  # throughput excludes evaluation and saving
        if halt_after_steps is not None and steps_this_run >= halt_after_steps and step < total_steps:
            bar.close()
            return {"halted_at": step}
    bar.close()

    summary: dict[str, Any] = {}
    if info.is_main:
        if best_step is not None and (work / "best.pt").exists():
            encoder.load_state_dict(torch.load(work / "best.pt", weights_only=True))
        final_dev = evaluate() if best_step is None else best_score
        summary = {
            "method": s.method, "seed": s.seed, "steps": total_steps, "global_batch": global_batch,
            "per_device_batch": s.batch_size, "world_size": info.world_size,
            "best_step": best_step if best_step is not None else total_steps,
            "stsb_dev": final_dev, "data": data.counts, "settings": s.to_dict(), "fingerprint": fp,
        }
        from hardneg.train.export import export_sentence_transformers

        export_sentence_transformers(
            encoder.backbone, encoder.tokenizer, out_dir / "model", pooler=s.export_pooler,
            max_length=eval_len, template=s.templates[0] if s.templates else None,
            card={"title": f"hardneg {s.method} (seed {s.seed})",
                  "scores": {"STS-B dev Spearman x100 (selected checkpoint)":
                             None if final_dev is None else round(final_dev, 2),
                             "selected step": summary["best_step"]},
                  "settings": s.to_dict(), "data": data.counts},
        )
        (out_dir / "metrics.jsonl").write_bytes(metrics_path.read_bytes())
        _plot_curve(metrics_path, out_dir / "curve.png")
        write_json_atomic(summary, out_dir / "summary.json")
    D.barrier(info)
    return summary
