"""train.report_to: TensorBoard events read back equal metrics.jsonl; missing packages are refused."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from test_train_trainer import settings, shards, wiki_lines  # noqa: F401  # fixtures

from hardneg.train.tracking import Trackers, TrackingUnavailable, parse_report_to
from hardneg.train.trainer import train


def test_report_to_values():
    assert parse_report_to("none") == [] and parse_report_to(None) == [] and parse_report_to(["none"]) == []
    assert parse_report_to(["tensorboard", "mlflow", "tensorboard"]) == ["tensorboard", "mlflow"]
    assert parse_report_to("all") == ["tensorboard", "wandb", "mlflow"]
    with pytest.raises(ValueError, match=r"train setting 'report_to': unknown tracker 'comet'"):
        parse_report_to(["tensorboard", "comet"])


@pytest.mark.parametrize("backend", ["wandb", "mlflow"])
def test_missing_tracker_package_is_refused_before_training(tmp_path, monkeypatch, tiny_mlm_dir, backend):
    monkeypatch.setitem(sys.modules, backend, None)  # not installed
    with pytest.raises(TrackingUnavailable, match=rf"train setting 'report_to' names '{backend}'.*pip install {backend}"):
        train(settings(tiny_mlm_dir), ["/no/such/shard.parquet"], tmp_path / "run", report_to=[backend])


def test_tensorboard_events_read_back(tmp_path, tiny_mlm_dir, shards, senteval_dir):  # noqa: F811
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    s = settings(tiny_mlm_dir, eval_every=2, dev_max_pairs=40)
    summary = train(s, shards["corpus"], tmp_path / "run", senteval_dir=senteval_dir, report_to="tensorboard")
    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    acc = EventAccumulator(str(tmp_path / "run" / "tensorboard"), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    for kind, field in [("train", "loss"), ("train", "lr"), ("train", "grad_norm"), ("eval", "stsb_dev")]:
        want = [(r["step"], r[field]) for r in rows if r["kind"] == kind]
        assert want and f"{kind}/{field}" in tags
        got = [(e.step, e.value) for e in acc.Scalars(f"{kind}/{field}")]
        assert [g[0] for g in got] == [w[0] for w in want]
        # TensorBoard stores float32: the jsonl's float64 rounded to float32, exactly
        np.testing.assert_array_equal([g[1] for g in got], np.float32([w[1] for w in want]))
    assert [e.step for e in acc.Scalars("eval/stsb_dev")] == [0, 2, 4]
    final = acc.Scalars("final/stsb_dev")
    assert final[0].value == np.float32(summary["stsb_dev"])
    settings_text = acc.Tensors("settings/text_summary")[0].tensor_proto.string_val[0].decode()
    assert '"method": "simcse"' in settings_text
    # the hparams table (settings x final scores) is written beside the scalars
    assert any(p.name.startswith("events.out.tfevents") for p in (tmp_path / "run" / "tensorboard").rglob("*"))


def test_no_tracker_writes_nothing(tmp_path):
    t = Trackers.create("none", tmp_path, "x")
    t.log_settings({"a": 1})
    t.log_record({"kind": "train", "step": 1, "loss": 1.0})
    t.log_final({"stsb_dev": 1.0})
    t.close()
    assert list(tmp_path.iterdir()) == []
