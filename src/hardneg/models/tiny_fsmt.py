"""A tiny randomly initialised FSMT translation model saved like a hub model: the stand-in for
facebook/wmt19-* on machines without hub access (tests and bench/osscse.py exercise the
transformers back-translation backend with it; its translations are noise)."""

from __future__ import annotations

import json
from pathlib import Path


def build_tiny_fsmt(folder: str | Path, d_model: int = 32, layers: int = 1, heads: int = 2, ffn: int = 32,
                    max_positions: int = 128, seed: int = 0, **config) -> str:
    """Write a character-vocabulary FSMT model + tokenizer into ``folder``; returns its path.
    ``config`` overrides further FSMTConfig fields (e.g. ``init_std``)."""
    import torch
    from transformers import FSMTConfig, FSMTForConditionalGeneration, FSMTTokenizer

    d = Path(folder)
    d.mkdir(parents=True, exist_ok=True)
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for ch in "abcdefghijklmnopqrstuvwxyz.,'":
        vocab.setdefault(ch, len(vocab))
        vocab.setdefault(ch + "</w>", len(vocab))
    for name in ("vocab-src.json", "vocab-tgt.json"):
        (d / name).write_text(json.dumps(vocab))
    (d / "merges.txt").write_text("")
    tok = FSMTTokenizer(langs=["en", "de"], src_vocab_file=str(d / "vocab-src.json"),
                        tgt_vocab_file=str(d / "vocab-tgt.json"), merges_file=str(d / "merges.txt"))  # fmt: skip
    cfg = FSMTConfig(
        langs=["en", "de"], src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), d_model=d_model,
        encoder_layers=layers, decoder_layers=layers, encoder_attention_heads=heads, decoder_attention_heads=heads,
        encoder_ffn_dim=ffn, decoder_ffn_dim=ffn, max_position_embeddings=max_positions, pad_token_id=1,
        bos_token_id=0, eos_token_id=2, decoder_start_token_id=2, **config,
    )  # fmt: skip
    torch.manual_seed(seed)
    FSMTForConditionalGeneration(cfg).save_pretrained(d)
    tok.save_pretrained(d)
    return str(d)
