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


# float32: eps 1.2e-7 times the ~100 accumulated operations of a 2-layer encoder per output
ATOL = 1e-5


@pytest.mark.parametrize("pooler,template", [("cls", None), ("cls_before_pooler", None), ("avg", None),
                                             ("avg_first_last", None), ("avg_top2", None), ("mask", "sncse1"),
                                             ("avg", "sncse2")])
def test_export_matches_training_representation(tmp_path, tiny_mlm_dir, pooler, template):
    """Every pooler of hardneg.encoders.pooling: training's vectors == load_encoder(folder) ==
    SentenceTransformer(folder).encode (hardneg's modules for what ST's Pooling cannot express)."""
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(0)
    enc = ContrastiveEncoder.from_pretrained(str(tiny_mlm_dir), pooler, max_length=20, mlp=True).eval()
    with torch.no_grad():
        ours = enc(SENTS, template=template, use_mlp=False).numpy()
    folder = export_sentence_transformers(enc.backbone, enc.tokenizer, tmp_path / "m", pooler=pooler,
                                          max_length=20, template=template)
    theirs = load_encoder(str(folder), device="cpu").encode(SENTS)
    np.testing.assert_allclose(ours, theirs, atol=ATOL)
    card = (folder / "README.md").read_text()
    assert "training-only MLP is not part of this model" in card
    modules = json.loads((folder / "modules.json").read_text())
    native = template is None and pooler in ("cls", "cls_before_pooler", "avg")
    if native:  # sentence-transformers' own modules, current paths: loads without trusting hardneg
        assert modules[1]["type"] == "sentence_transformers.sentence_transformer.modules.pooling.Pooling"
        pooling = json.loads((folder / "1_Pooling" / "config.json").read_text())
        assert pooling["pooling_mode"] == {"avg": "mean"}.get(pooler, "cls")
        st = SentenceTransformer(str(folder), device="cpu")
    else:
        assert [m["type"] for m in modules] == ["hardneg.encoders.st_modules.PromptTransformer",
                                                "hardneg.encoders.st_modules.HardnegPooling"]
        assert "trust_remote_code=True" in card
        with pytest.raises(ValueError, match="trust_remote_code"):  # refused, never a silent mean pooling
            SentenceTransformer(str(folder), device="cpu")
        st = SentenceTransformer(str(folder), device="cpu", trust_remote_code=True)
    assert not (folder / "hardneg_pooling.json").exists()
    np.testing.assert_allclose(st.encode(SENTS), ours, atol=ATOL)


def test_every_preset_exports_a_tested_representation():
    """Each preset's exported (pooler, template) is one the test above checks against
    SentenceTransformer(folder), so every preset's export loads there with equal embeddings."""
    from hardneg.train.methods import preset_names
    from hardneg.train.presets import build_settings

    tested = {("cls", None), ("cls_before_pooler", None), ("avg", None), ("avg_first_last", None),
              ("avg_top2", None), ("mask", "sncse1"), ("avg", "sncse2")}
    for method in preset_names():
        s = build_settings(method, "bert-base-uncased", 1, overrides={"allow_untrained_teacher": True})
        rep = (s.export_pooler, s.templates[0] if s.templates else None)
        assert rep in tested, (method, rep)
