"""train/checkpoint.py: save -> restore round trip (weights, optimizer, scheduler, scaler, best score,
RNG stream), the kept previous RNG entry, and a checkpoint of other settings refused by name."""

from __future__ import annotations

import pytest
import torch

from hardneg.train import distributed as D
from hardneg.train.checkpoint import Checkpointer, IncompatibleCheckpoint, trim_metrics
from hardneg.train.settings import TrainSettings


def _state(seed: int) -> dict:
    torch.manual_seed(seed)
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: 1.0 / (k + 1))
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    return {"model": model, "optimizer": opt, "scheduler": sched, "scaler": scaler}


def _steps(objs: dict, n: int) -> None:
    for _ in range(n):
        loss = objs["model"](torch.randn(4, 3)).pow(2).sum()
        objs["optimizer"].zero_grad()
        loss.backward()
        objs["optimizer"].step()
        objs["scheduler"].step()


def test_save_restore_round_trip(tmp_path):
    s = TrainSettings(method="simcse", init_model="tiny", seed=1)
    info = D.DistInfo()
    fp = s.fingerprint(info.world_size)
    objs = _state(0)
    ck = Checkpointer(tmp_path, s, info, fp, objs)
    assert ck.restore() is None  # nothing saved yet
    _steps(objs, 2)
    ck.save(2, 51.5, 2)
    _steps(objs, 2)
    ck.save(4, 60.25, 4)
    assert sorted(torch.load(ck.rng_path, weights_only=False)) == [2, 4]  # previous entry kept
    expected_next = torch.rand(5)  # the stream right after the step-4 save
    saved = {k: v.clone() for k, v in objs["model"].state_dict().items()}
    _steps(objs, 3)  # the run goes on, then is killed

    fresh = _state(99)  # other weights, other RNG position
    back = Checkpointer(tmp_path, s, info, fp, fresh)
    assert back.restore() == (4, 60.25, 4) and back.saved_step == 4
    assert torch.equal(torch.rand(5), expected_next)
    for k, v in fresh["model"].state_dict().items():
        assert torch.equal(v, saved[k]), k
    assert fresh["scheduler"].last_epoch == 4
    assert fresh["optimizer"].state_dict()["state"][0]["step"] == 4


def test_other_settings_are_refused_by_name(tmp_path):
    s = TrainSettings(method="simcse", init_model="tiny", seed=1, lr=1e-3)
    info = D.DistInfo()
    Checkpointer(tmp_path, s, info, s.fingerprint(1), _state(0)).save(1, 0.0, None)
    other = TrainSettings(method="simcse", init_model="tiny", seed=1, lr=2e-3)
    with pytest.raises(IncompatibleCheckpoint, match=r"lr: 0\.001 -> 0\.002"):
        Checkpointer(tmp_path, other, info, other.fingerprint(1), _state(0)).restore()


def test_trim_metrics_keeps_lines_up_to_the_resumed_step(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1}\n{"step": 2}\n\n{"step": 3}\n')
    trim_metrics(path, 2)
    assert path.read_text() == '{"step": 1}\n{"step": 2}\n'
    trim_metrics(path, 0)
    assert path.read_text() == ""


def test_the_same_state_saves_to_the_same_bytes(tmp_path):
    from hardneg.train.checkpoint import save_atomic

    state = {"model": {"w": torch.arange(12.0).reshape(3, 4)}, "step": 7}
    save_atomic(state, tmp_path / "a.pt")
    save_atomic(state, tmp_path / "b.pt")  # another name: another temporary file
    assert (tmp_path / "a.pt").read_bytes() == (tmp_path / "b.pt").read_bytes()
    assert torch.load(tmp_path / "a.pt")["step"] == 7
