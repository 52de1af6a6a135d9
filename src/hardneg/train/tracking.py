"""Experiment tracking behind ``train.report_to`` (in the sense of transformers' ``report_to``).

``metrics.jsonl`` stays the source of truth: the trainer hands every record it writes there to
:class:`Trackers` as well, which forwards it to each configured backend:

- ``tensorboard``: event files under ``<run>/tensorboard/`` (offline; ``tensorboard`` package);
- ``wandb``: a Weights & Biases run (``wandb`` package, its own login/offline settings);
- ``mlflow``: an MLflow run (``mlflow`` package, ``MLFLOW_TRACKING_URI``).

Each backend gets the settings once (hyperparameters), the training records (loss and its parts,
learning rate, grad norm, throughput) and evaluation records (STS-B dev) by step, and the final
scores. Tracking never changes what is trained, so ``report_to`` is not part of the run's key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

BACKENDS = ("tensorboard", "wandb", "mlflow")
# record fields that are bookkeeping, not metrics
_NOT_METRICS = {"kind", "step", "epoch", "global_batch", "world_size"}


class TrackingUnavailable(RuntimeError):
    """A configured tracker whose package is not installed; names the setting."""


def parse_report_to(value: str | Sequence[str] | None) -> list[str]:
    """``none`` / one name / a list -> the backends (validated, in the order given, no repeats)."""
    if value is None:
        return []
    names = [value] if isinstance(value, str) else list(value)
    out: list[str] = []
    for name in names:
        if not isinstance(name, str):
            raise ValueError(f"train setting 'report_to': {name!r} is not a name (none, {', '.join(BACKENDS)})")  # noqa: TRY004  # a config value
        if name in ("none", ""):
            continue
        if name == "all":
            return list(BACKENDS)
        if name not in BACKENDS:
            raise ValueError(f"train setting 'report_to': unknown tracker {name!r} "
                             f"(known: none, all, {', '.join(BACKENDS)})")
        if name not in out:
            out.append(name)
    return out


def _need(module: str, backend: str, extra: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise TrackingUnavailable(f"train setting 'report_to' names {backend!r} but the {extra} package is not "
                                  f"installed (pip install {extra}), or remove {backend!r} from report_to") from None


def _flat(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested settings -> flat scalars (lists/None as JSON text): what hparam tables take."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flat(v, key + "."))
        elif isinstance(v, (bool, int, float, str)):
            out[key] = v
        else:
            out[key] = json.dumps(v, sort_keys=True, default=str)
    return out


def _metrics(rec: Mapping[str, Any]) -> dict[str, float]:
    """Numeric fields of a metrics.jsonl record, named ``train/<field>`` or ``eval/<field>``."""
    kind = rec.get("kind", "train")
    return {f"{kind}/{k}": float(v) for k, v in rec.items()
            if k not in _NOT_METRICS and isinstance(v, (int, float)) and not isinstance(v, bool)}


class Tracker:
    """One backend: settings once, metric records by step, final scores, close."""

    def log_settings(self, settings: Mapping[str, Any]) -> None:
        raise NotImplementedError

    def log_record(self, rec: Mapping[str, Any]) -> None:
        raise NotImplementedError

    def log_final(self, scores: Mapping[str, float]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


class TensorBoardTracker(Tracker):
    """Event files in ``log_dir`` (read back with tensorboard's EventAccumulator)."""

    def __init__(self, log_dir: Path) -> None:
        _need("tensorboard", "tensorboard", "tensorboard")
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(log_dir))
        self._settings: dict[str, Any] = {}

    def log_settings(self, settings: Mapping[str, Any]) -> None:
        self._settings = _flat(settings)
        self.writer.add_text("settings", "```json\n" + json.dumps(dict(settings), indent=2, sort_keys=True,
                                                                  default=str) + "\n```", 0)

    def log_record(self, rec: Mapping[str, Any]) -> None:
        for name, value in _metrics(rec).items():
            self.writer.add_scalar(name, value, int(rec["step"]))

    def log_final(self, scores: Mapping[str, float]) -> None:
        final = {f"final/{k}": float(v) for k, v in scores.items()}
        for name, value in final.items():
            self.writer.add_scalar(name, value, 0)
        # the hparams plugin's table: settings beside the final scores (one row per run)
        self.writer.add_hparams(self._settings, final, run_name=".")

    def close(self) -> None:
        self.writer.flush()
        self.writer.close()


class WandbTracker(Tracker):
    """A Weights & Biases run named after the method and seed."""

    def __init__(self, name: str, out_dir: Path) -> None:
        self.wandb = _need("wandb", "wandb", "wandb")
        self.run = self.wandb.init(name=name, dir=str(out_dir), reinit=True)

    def log_settings(self, settings: Mapping[str, Any]) -> None:
        self.run.config.update(dict(settings), allow_val_change=True)

    def log_record(self, rec: Mapping[str, Any]) -> None:
        self.run.log(_metrics(rec), step=int(rec["step"]))

    def log_final(self, scores: Mapping[str, float]) -> None:
        for k, v in scores.items():
            self.run.summary[f"final/{k}"] = float(v)

    def close(self) -> None:
        self.run.finish()


class MlflowTracker(Tracker):
    """An MLflow run named after the method and seed (``MLFLOW_TRACKING_URI`` picks the server)."""

    def __init__(self, name: str) -> None:
        self.mlflow = _need("mlflow", "mlflow", "mlflow")
        self.run = self.mlflow.start_run(run_name=name)

    def log_settings(self, settings: Mapping[str, Any]) -> None:
        self.mlflow.log_params(_flat(settings))

    def log_record(self, rec: Mapping[str, Any]) -> None:
        # MLflow metric names allow '/', and its step is the training step
        self.mlflow.log_metrics(_metrics(rec), step=int(rec["step"]))

    def log_final(self, scores: Mapping[str, float]) -> None:
        self.mlflow.log_metrics({f"final/{k}": float(v) for k, v in scores.items()})

    def close(self) -> None:
        self.mlflow.end_run()


class Trackers:
    """The configured backends behind one interface (none: every call is a no-op)."""

    def __init__(self, trackers: list[Tracker]) -> None:
        self.trackers = trackers

    @classmethod
    def create(cls, report_to: str | Sequence[str] | None, out_dir: str | Path, name: str) -> Trackers:
        """The trackers of ``report_to`` for the run in ``out_dir`` (a missing package: a clear
        error naming the setting, before any training)."""
        made: list[Tracker] = []
        for backend in parse_report_to(report_to):
            if backend == "tensorboard":
                made.append(TensorBoardTracker(Path(out_dir) / "tensorboard"))
            elif backend == "wandb":
                made.append(WandbTracker(name, Path(out_dir)))
            else:
                made.append(MlflowTracker(name))
        trackers = cls(made)
        if made:  # a run that stops with an error still flushes what it logged
            import atexit

            atexit.register(trackers.close)
        return trackers

    def log_settings(self, settings: Mapping[str, Any]) -> None:
        for t in self.trackers:
            t.log_settings(settings)

    def log_record(self, rec: Mapping[str, Any]) -> None:
        for t in self.trackers:
            t.log_record(rec)

    def log_final(self, scores: Mapping[str, float | None]) -> None:
        numeric = {k: float(v) for k, v in scores.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        for t in self.trackers:
            t.log_final(numeric)

    def close(self) -> None:
        """Flush and close every tracker (once; later calls do nothing)."""
        trackers, self.trackers = self.trackers, []
        for t in trackers:
            t.close()
