"""Model loading, one home: tokenizers, masked LMs, encoder backbones and seq2seq models.

Every loader resolves the name with ``resolve_model`` (hub id, local folder or ``package:``) and
turns a load failure into ``ModelNotFound`` naming the config setting and the model, e.g.
``san.mlm: cannot load masked LM 'x': ...`` (a FileNotFoundError, so the CLI prints one line).
What transformers would load without complaint but compute garbage with is refused here too: a
folder without its tokenizer files (transformers falls back to a tokenizer of special tokens
only, so every word becomes [UNK]), a tokenizer with more ids than the embedding table has rows,
weights whose shapes do not fit ``config.json``, and an empty or truncated weights file.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from hardneg.models.device import pick_device
from hardneg.models.resolve import ModelNotFound, resolve_model


class ModelUnusable(ValueError):
    """A model folder that loads but cannot be used as it is; the message names the folder or file."""


def _load(name: str, setting: str, what: str, load: Callable[[str], Any]) -> Any:
    path = resolve_model(name, setting=setting)
    try:
        return load(path)
    except (OSError, ValueError) as exc:  # transformers 5: a folder without a model is a ValueError
        raise ModelNotFound(f"{setting}: cannot load {what} '{name}': {exc}") from exc


def _weights_file(path: str) -> str:
    """The weights file of a folder, for messages (the folder when it holds none or several)."""
    files = sorted(Path(path).glob("*.safetensors")) if Path(path).is_dir() else []
    return str(files[0]) if len(files) == 1 else path


def _from_pretrained(cls: Any, path: str, **kwargs: Any) -> tuple[Any, dict]:
    """``cls.from_pretrained(path)`` and its loading info; a weights file that cannot be read and
    weights whose shapes differ from the config's become ModelUnusable naming the file/folder
    (transformers' own error says "see the report above", without either)."""
    from safetensors import SafetensorError

    try:
        return cls.from_pretrained(path, output_loading_info=True, **kwargs)
    except SafetensorError as exc:
        raise ModelUnusable(f"{_weights_file(path)}: cannot read the weights ({exc}): the file is empty, "
                            f"truncated or not safetensors; copy or export the model again") from None
    except RuntimeError as exc:
        if "ignore_mismatched_sizes" not in str(exc):
            raise
        refusal = str(exc).splitlines()[0]
    # load again only to learn which weights mismatched: they are refused all the same
    _, info = cls.from_pretrained(path, output_loading_info=True, ignore_mismatched_sizes=True, **kwargs)
    mismatched = sorted(info.get("mismatched_keys") or [], key=lambda m: m[0])
    if mismatched:
        key, have, want = mismatched[0]
        more = f" (and {len(mismatched) - 1} more)" if len(mismatched) > 1 else ""
        raise ModelUnusable(f"{path}: the weights do not fit its config.json: {key} is {list(have)} in "
                            f"{Path(_weights_file(path)).name} but {list(want)} by config.json{more}; the "
                            f"config and the weights come from different models")
    raise ModelUnusable(f"{path}: transformers refused the weights' sizes ({refusal})")


def _tokenizer(path: str):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    special = set(tokenizer.all_special_tokens)
    if not set(tokenizer.get_vocab()) - special:
        raise ModelUnusable(f"{path}: its tokenizer holds only the {len(special)} special tokens "
                            f"({', '.join(sorted(special))}), so every word would be [UNK]: the folder lacks "
                            f"its tokenizer files (tokenizer.json, vocab.txt or the like); copy them from the "
                            f"model it was made from")
    return tokenizer


def check_vocabulary(tokenizer: Any, model: Any, path: str) -> None:
    """Raise ModelUnusable naming ``path`` when the tokenizer makes ids past the model's embedding
    table (a tokenizer from another model): those ids would fail or read other rows."""
    rows = model.get_input_embeddings().num_embeddings
    if len(tokenizer) > rows:
        raise ModelUnusable(f"{path}: the tokenizer has {len(tokenizer)} tokens but the model's embedding table "
                            f"only {rows} rows: the tokenizer files are from another model")


def load_tokenizer(name: str, *, setting: str):
    """The tokenizer of ``name``."""
    return _load(name, setting, "tokenizer", _tokenizer)


def load_masked_lm(name: str, *, setting: str, device: str | torch.device | None = None):
    """(tokenizer, masked LM) in eval mode on ``device`` (``pick_device``: None = CUDA if any)."""
    from transformers import AutoModelForMaskedLM

    def load(path: str):
        tokenizer, (model, _) = _tokenizer(path), _from_pretrained(AutoModelForMaskedLM, path)
        check_vocabulary(tokenizer, model, path)
        return tokenizer, model

    tokenizer, model = _load(name, setting, "masked LM", load)
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
        model, info = _from_pretrained(AutoModel, path, **kwargs)
        check_vocabulary(tokenizer, model, path)
        return tokenizer, model, list(info.get("missing_keys", []))

    return _load(name, setting, "encoder", load)


def load_seq2seq(name: str, *, setting: str, dtype: torch.dtype | None = None):
    """(tokenizer, seq2seq LM) with weights in ``dtype`` (None: the checkpoint's default)."""
    from transformers import AutoModelForSeq2SeqLM

    # the tokenizer's length is not checked against the embeddings: a seq2seq model may keep
    # separate source and target vocabularies (FSMT)
    return _load(name, setting, "translation model",
                 lambda p: (_tokenizer(p), _from_pretrained(AutoModelForSeq2SeqLM, p, dtype=dtype)[0]))
