"""The exported folder encodes exactly what training optimised (minus SimCSE's MLP)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from hardneg.encoders import load_encoder
from hardneg.train.export import export_sentence_transformers
from hardneg.train.model import ContrastiveEncoder

SENTS = ["a man is playing a guitar .", "the cat sleeps", "stocks fell sharply on monday after the report " * 3]


@pytest.mark.parametrize("pooler,template", [("cls", None), ("cls_before_pooler", None), ("avg", None),
                                             ("avg_first_last", None), ("mask", "sncse1")])
def test_export_matches_training_representation(tmp_path, tiny_mlm_dir, pooler, template):
    torch.manual_seed(0)
    enc = ContrastiveEncoder.from_pretrained(str(tiny_mlm_dir), pooler, max_length=20, mlp=True).eval()
    with torch.no_grad():
        ours = enc(SENTS, template=template, use_mlp=False).numpy()
    folder = export_sentence_transformers(enc.backbone, enc.tokenizer, tmp_path / "m", pooler=pooler,
                                          max_length=20, template=template)
    theirs = load_encoder(str(folder), device="cpu").encode(SENTS)
    np.testing.assert_allclose(ours, theirs, atol=1e-5)
    card = (folder / "README.md").read_text()
    assert "training-only MLP is not part of this model" in card
    hn = folder / "hardneg_pooling.json"
    if pooler in ("mask", "avg_first_last"):
        assert json.loads(hn.read_text())["pooler"] == pooler and "falls back to mean pooling" in card
    else:
        assert not hn.exists()
        from sentence_transformers import SentenceTransformer

        np.testing.assert_allclose(SentenceTransformer(str(folder), device="cpu").encode(SENTS), ours, atol=1e-5)
