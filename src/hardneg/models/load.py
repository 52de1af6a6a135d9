"""Model loading, one home: tokenizers, masked LMs, encoder backbones and seq2seq models.

Every loader resolves the name with ``resolve_model`` (hub id, local folder or ``package:``) and
turns a load failure into ``ModelNotFound`` naming the config setting and the model, e.g.
``san.mlm: cannot load masked LM 'x': ...`` (a FileNotFoundError, so the CLI prints one line).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from hardneg.models.device import pick_device
from hardneg.models.resolve import ModelNotFound, resolve_model


def _load(name: str, setting: str, what: str, load: Callable[[str], Any]) -> Any:
    path = resolve_model(name, setting=setting)
    try:
        return load(path)
    except (OSError, ValueError) as exc:  # transformers 5: a folder without a model is a ValueError
        raise ModelNotFound(f"{setting}: cannot load {what} '{name}': {exc}") from exc


def _tokenizer(path: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


def load_tokenizer(name: str, *, setting: str):
    """The tokenizer of ``name``."""
    return _load(name, setting, "tokenizer", _tokenizer)


def load_masked_lm(name: str, *, setting: str, device: str | torch.device | None = None):
    """(tokenizer, masked LM) in eval mode on ``device`` (``pick_device``: None = CUDA if any)."""
    from transformers import AutoModelForMaskedLM

    tokenizer, model = _load(name, setting, "masked LM",
                             lambda p: (_tokenizer(p), AutoModelForMaskedLM.from_pretrained(p)))
    model.eval().to(pick_device(device))
    return tokenizer, model


def load_backbone(name: str, *, setting: str, dropout: float | None = None):
    """(tokenizer, encoder backbone, missing weight keys) of an ``AutoModel``; ``dropout``
    overrides the config's dropout rates (SimCSE trains with its own rate)."""
    from transformers import AutoConfig, AutoModel

    def load(path: str):
        kwargs: dict[str, Any] = {}
        if dropout is not None:  # AutoModel reads the same config itself when none is given
            config = AutoConfig.from_pretrained(path)
            for key in ("hidden_dropout_prob", "attention_probs_dropout_prob", "dropout", "attention_dropout"):
                if hasattr(config, key):
                    setattr(config, key, dropout)
            kwargs["config"] = config
        tokenizer = _tokenizer(path)
        model, info = AutoModel.from_pretrained(path, output_loading_info=True, **kwargs)
        return tokenizer, model, list(info.get("missing_keys", []))

    return _load(name, setting, "encoder", load)


def load_seq2seq(name: str, *, setting: str, dtype: torch.dtype | None = None):
    """(tokenizer, seq2seq LM) with weights in ``dtype`` (None: the checkpoint's default)."""
    from transformers import AutoModelForSeq2SeqLM

    return _load(name, setting, "translation model",
                 lambda p: (_tokenizer(p), AutoModelForSeq2SeqLM.from_pretrained(p, dtype=dtype)))
