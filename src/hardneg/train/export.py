"""Export a trained encoder as a sentence-transformers folder with its evaluation pooler built in.

Layout (what ``SentenceTransformer(folder)`` and ``hardneg.encoders.load_encoder`` read):
``modules.json``, ``sentence_bert_config.json``, ``config_sentence_transformers.json``,
HF weights/config/tokenizer at the root, ``1_Pooling/config.json`` and a ``README.md`` card.
SimCSE's training-only MLP is never exported (SimCSE issues #25/#100/#208: evaluate the [CLS]
state before the MLP). Representations Pooling cannot express (``mask`` with a prompt template,
``avg_first_last``, ``avg_top2``) are recorded in ``hardneg_pooling.json``, which
``load_encoder`` honours; plain sentence-transformers then falls back to mean pooling, as the
card warns.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

from hardneg.encoders.templates import get_template
from hardneg.shards import write_json_atomic

HARDNEG_POOLING_FILE = "hardneg_pooling.json"
# our pooler -> sentence-transformers Pooling mode
_ST_MODE = {"cls_before_pooler": "cls_token", "avg": "mean_tokens", "cls": "cls_token"}


def _pooling_config(dim: int, mode: str) -> dict[str, Any]:
    keys = ["cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens", "weightedmean_tokens", "lasttoken"]
    cfg: dict[str, Any] = {"word_embedding_dimension": dim}
    cfg.update({f"pooling_mode_{k}": k == mode for k in keys})
    cfg["include_prompt"] = True
    return cfg


def _stateless_copy(tokenizer):
    """A copy of ``tokenizer`` without the truncation/padding state its last call left behind.

    A fast tokenizer serialises that state into tokenizer.json, so without this the exported
    bytes would depend on which batch was encoded last (and differ between local and Slurm runs).
    """
    import copy

    clean = copy.deepcopy(tokenizer)
    backend = getattr(clean, "backend_tokenizer", None)
    if backend is not None:
        backend.no_truncation()
        backend.no_padding()
    return clean


def export_sentence_transformers(
    backbone: torch.nn.Module,
    tokenizer,
    out_dir: str | Path,
    pooler: str,
    max_length: int,
    template: str | None = None,
    card: dict[str, Any] | None = None,
) -> Path:
    """Write ``backbone`` + ``pooler`` as a sentence-transformers folder at ``out_dir``.

    Written into a temporary folder beside ``out_dir`` and renamed into place when complete: a
    kill during the export leaves no folder there (a half one, say weights without tokenizer or
    without ``modules.json``, would load and score as another model)."""
    final = Path(out_dir)
    final.parent.mkdir(parents=True, exist_ok=True)
    for stale in final.parent.glob(f".{final.name}.*.part"):  # left by a killed export of this folder
        shutil.rmtree(stale, ignore_errors=True)
    out = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".part", dir=final.parent))
    try:
        _write_folder(backbone, tokenizer, out, pooler, max_length, template, card)
        umask = os.umask(0)
        os.umask(umask)
        out.chmod(0o777 & ~umask)  # mkdtemp makes 0700; as mkdir would
        _replace_folder(out, final)
    finally:
        if out.exists():
            shutil.rmtree(out)
    return final


def _replace_folder(new: Path, final: Path) -> None:
    """Rename ``new`` onto ``final``; an existing ``final`` is moved aside first and then deleted
    (a kill between the two renames leaves no ``final``, never a mix of both)."""
    old = None
    if final.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".part", dir=final.parent))
        os.replace(final, old / final.name)
    os.replace(new, final)
    if old is not None:
        shutil.rmtree(old)


def _write_folder(backbone: torch.nn.Module, tokenizer, out: Path, pooler: str, max_length: int,
                  template: str | None, card: dict[str, Any] | None) -> None:
    backbone.save_pretrained(out, safe_serialization=True)
    _stateless_copy(tokenizer).save_pretrained(out)
    dim = int(backbone.config.hidden_size)
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    mode = _ST_MODE.get(pooler, "mean_tokens")
    write_json_atomic(_pooling_config(dim, mode), out / "1_Pooling" / "config.json")
    if pooler == "cls":
        # the model's own pooler (dense + tanh over [CLS]) as a Dense module after CLS pooling
        from safetensors.torch import save_file

        dense = backbone.pooler.dense
        (out / "2_Dense").mkdir(exist_ok=True)
        save_file({"linear.weight": dense.weight.detach().cpu().contiguous(),
                   "linear.bias": dense.bias.detach().cpu().contiguous()}, str(out / "2_Dense" / "model.safetensors"))
        write_json_atomic({"in_features": dim, "out_features": dim, "bias": True,
                           "activation_function": "torch.nn.modules.activation.Tanh"}, out / "2_Dense" / "config.json")
        modules.append({"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"})
    write_json_atomic(modules, out / "modules.json")
    write_json_atomic({"max_seq_length": max_length, "do_lower_case": False}, out / "sentence_bert_config.json")
    write_json_atomic({"similarity_fn_name": "cosine", "prompts": {}, "default_prompt_name": None},
                      out / "config_sentence_transformers.json")
    native = pooler in _ST_MODE and template is None
    if not native:
        write_json_atomic({"pooler": pooler, "template": template, "max_length": max_length},
                          out / HARDNEG_POOLING_FILE)
    (out / "README.md").write_text(_model_card(pooler, template, max_length, native, card or {}), encoding="utf-8")


def _model_card(pooler: str, template: str | None, max_length: int, native: bool, card: dict[str, Any]) -> str:
    lines = [
        "---",
        "library_name: sentence-transformers",
        "pipeline_tag: sentence-similarity",
        "tags: [sentence-transformers, sentence-similarity, hardneg]",
        "---",
        f"# {card.get('title', 'hardneg sentence encoder')}",
        "",
        "Trained with the hardneg pipeline (contrastive learning with hard negatives).",
        "",
        "## Representation",
        f"- pooler: `{pooler}`; max_length: {max_length} tokens (template included)",
    ]
    if template:
        lines.append(f"- prompt template `{template}`: `{get_template(template)}`; the vector is the last "
                     f"hidden state at the [MASK] position")
    if native:
        lines.append("- built into the sentence-transformers Pooling module: `SentenceTransformer(folder)` "
                     "reproduces it exactly.")
    else:
        lines += [
            (f"- **not expressible by sentence-transformers' Pooling module**: `{HARDNEG_POOLING_FILE}` records "
             "it and `hardneg.encoders.load_encoder(folder)` applies it. Plain `SentenceTransformer(folder)` "
             "falls back to mean pooling WITHOUT the template: a different representation."),
        ]
    lines.append("- SimCSE's training-only MLP is not part of this model.")
    if card.get("scores"):
        lines += ["", "## Scores", "", "| metric | value |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in card["scores"].items()]
    if card.get("settings"):
        lines += ["", "## Training configuration", "", "```json",
                  json.dumps(card["settings"], indent=2, sort_keys=True, default=str), "```"]
    if card.get("data"):
        lines += ["", "## Training data", "", "```json", json.dumps(card["data"], indent=2, sort_keys=True), "```"]
    return "\n".join(lines) + "\n"
