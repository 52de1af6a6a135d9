"""Resumable training state: ``last.pt`` (model, optimizer, scheduler, scaler, best score) plus one
``rng-rank<r>.pt`` per rank, so that a killed job resumes mid-epoch and reaches the same final
weights as an uninterrupted run (same dropout masks after the resume)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import torch

from hardneg.shards import atomic_path
from hardneg.train import distributed as D
from hardneg.train.inputs import changed_inputs
from hardneg.train.settings import NON_STRUCTURAL, TrainSettings

log = logging.getLogger(__name__)


class IncompatibleCheckpoint(ValueError):
    """A checkpoint written under different settings (or world size)."""


def save_atomic(obj: Any, path: Path) -> None:
    """``torch.save`` through a temporary file: a kill never leaves a half-written file.

    Saved through a file object, so the archive's inner folder is "archive" rather than the
    temporary file's random name: the same state gives the same bytes."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        torch.save(obj, f)


def rng_state() -> dict[str, Any]:
    state = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"])


def check_compatible(ckpt: dict, settings: TrainSettings, world_size: int, path: Path) -> None:
    """Raise IncompatibleCheckpoint naming the settings that differ."""
    if ckpt.get("fingerprint") == settings.fingerprint(world_size):
        return
    old = dict(ckpt.get("settings", {}), world_size=ckpt.get("world_size"))
    new = dict(settings.to_dict(), world_size=world_size)
    diff = [f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in sorted(set(old) | set(new))
            if k not in NON_STRUCTURAL and old.get(k) != new.get(k)]
    raise IncompatibleCheckpoint(
        f"{path}: checkpoint was written with different settings ({'; '.join(diff) or 'unknown'}); "
        f"delete {path.parent} to start over, or restore the settings"
    )


class Checkpointer:
    """Saves and restores ``objects`` (name -> anything with ``state_dict``/``load_state_dict``:
    model, optimizer, scheduler, scaler) in ``work``; every rank calls ``save`` (it synchronises).
    ``inputs`` (``hardneg.train.inputs.input_digests``) is saved with the state; a state saved for
    other inputs is discarded by ``restore`` (the run starts over) rather than trained on."""

    def __init__(self, work: Path, settings: TrainSettings, info: D.DistInfo, fingerprint: str,
                 objects: dict[str, Any], inputs: dict[str, dict[str, str]] | None = None) -> None:
        self.work, self.s, self.info, self.fp, self.objects = Path(work), settings, info, fingerprint, objects
        self.inputs = inputs or {}
        self.path = self.work / "last.pt"
        self.rng_path = self.work / f"rng-rank{info.rank}.pt"
        self.saved_step = 0  # the step of the last complete checkpoint
        self.restored_counters: dict[str, Any] = {}

    def restore(self) -> tuple[int, float, int | None] | None:
        """Load ``last.pt`` into the objects and this rank's RNG state at its step; returns
        (step, best_score, best_step), or None when there is no checkpoint."""
        if not self.path.exists():
            return None
        ckpt = torch.load(self.path, map_location="cpu", weights_only=False)
        check_compatible(ckpt, self.s, self.info.world_size, self.path)
        changed = changed_inputs(ckpt.get("inputs"), self.inputs)
        if changed:  # every rank read the same last.pt, so every rank takes this branch
            log.warning("not resuming %s (step %d): %s; training starts again from step 0",
                        self.path, ckpt.get("step", 0), "; ".join(changed))
            D.barrier(self.info)  # every rank has read last.pt before it goes
            if self.info.is_main:
                remove_resume_state(self.work)
                self.work.mkdir(parents=True, exist_ok=True)
            D.barrier(self.info)
            return None
        for name, obj in self.objects.items():
            obj.load_state_dict(ckpt[name])
        step = ckpt["step"]
        rank = torch.load(self.rng_path, weights_only=False)[step]
        # {"rng", "counters"} since the counters were checkpointed; before, the RNG state alone
        set_rng_state(rank.get("rng", rank))
        self.restored_counters = rank.get("counters", {}) if "rng" in rank else {}
        self.saved_step = step
        return step, ckpt["best_score"], ckpt["best_step"]

    def restore_counters(self, counters: dict[str, Any]) -> None:
        """Give this rank's fallback counters (name -> FallbackCounts) the totals saved with the
        restored step, so a resumed run's summary counts every step once."""
        for name, state in self.restored_counters.items():
            if name in counters:
                counters[name].load_state_dict(state)

    def save(self, step: int, best_score: float, best_step: int | None,
             counters: dict[str, Any] | None = None) -> None:
        """RNG and fallback counters per rank, keyed by step, first; the previous entry is kept so
        that a kill between this file and ``last.pt`` still finds the state that matches ``last.pt``."""
        states = torch.load(self.rng_path, weights_only=False) if self.rng_path.exists() else {}
        states = {k: v for k, v in states.items() if k == self.saved_step}
        states[step] = {"rng": rng_state(),
                        "counters": {name: c.state_dict() for name, c in (counters or {}).items()}}
        save_atomic(states, self.rng_path)
        D.barrier(self.info)
        if self.info.is_main:
            save_atomic({"fingerprint": self.fp, "settings": self.s.to_dict(), "world_size": self.info.world_size,
                         "inputs": self.inputs, "step": step, **{name: obj.state_dict() for name, obj in self.objects.items()},
                         "best_score": best_score, "best_step": best_step}, self.path)
        D.barrier(self.info)
        self.saved_step = step


def remove_resume_state(work: Path) -> int:
    """Delete what only a resume needs (``last.pt``, ``best.pt``, ``rng-rank*.pt``, the working
    metrics) once the model is exported; returns the bytes freed. A bert-base job leaves ~1.3 GB
    otherwise (weights + AdamW moments). The folder goes too when nothing else is in it."""
    work = Path(work)
    files = [work / "last.pt", work / "best.pt", work / "metrics.jsonl", *sorted(work.glob("rng-rank*.pt"))]
    freed = 0
    for f in files:
        if f.is_file():
            freed += f.stat().st_size
            f.unlink()
    if work.is_dir() and not any(work.iterdir()):
        work.rmdir()
    return freed


def trim_metrics(metrics_path: Path, step: int) -> None:
    """Keep the metric lines up to ``step`` (those past a resumed step will be recomputed)."""
    lines = metrics_path.read_text().splitlines() if metrics_path.exists() else []
    kept = [x for x in lines if x.strip() and json.loads(x)["step"] <= step] if step > 0 else []
    metrics_path.write_text("".join(x + "\n" for x in kept))
