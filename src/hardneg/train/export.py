"""Export a trained encoder as a sentence-transformers folder with its evaluation pooler built in.

The folder is in the format sentence-transformers >= 5.4 writes (module paths
``sentence_transformers.base.modules.transformer.Transformer`` etc., ``"pooling_mode": "cls"``,
``max_seq_length`` as the tokenizer's ``model_max_length``): HF weights/config/tokenizer at the
root, ``modules.json``, ``config_sentence_transformers.json`` and a ``README.md`` model card
(``hardneg.train.model_card``). SimCSE's training-only MLP is never exported (SimCSE issues
#25/#100/#208: evaluate the [CLS] state before the MLP).

- ``cls_before_pooler`` / ``avg`` without a template: Transformer + Pooling (``cls`` / ``mean``);
  ``cls``: plus a Dense module holding the model's pooler layer (dense + tanh). These load in plain
  sentence-transformers, without hardneg.
- any other pooler, or a prompt template: ``hardneg.encoders.st_modules.PromptTransformer`` +
  ``HardnegPooling``, which ``SentenceTransformer(folder)`` imports from hardneg (installed).

Either way ``SentenceTransformer(folder).encode`` equals ``hardneg.encoders.load_encoder(folder)``
(tests/test_st_folders.py).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

from hardneg.encoders.pooling import NEEDS_HIDDEN_STATES
from hardneg.encoders.st_folder import POOLING_CONFIG_FILE, TRANSFORMER_CONFIG_FILE
from hardneg.shards import write_json_atomic

# our pooler -> sentence-transformers Pooling mode (exported in ST's own modules)
_ST_MODE = {"cls_before_pooler": "cls", "avg": "mean", "cls": "cls"}
# module type paths as sentence-transformers >= 5.4 writes them
ST_TRANSFORMER = "sentence_transformers.base.modules.transformer.Transformer"
ST_POOLING = "sentence_transformers.sentence_transformer.modules.pooling.Pooling"
ST_DENSE = "sentence_transformers.base.modules.dense.Dense"
HN_TRANSFORMER = "hardneg.encoders.st_modules.PromptTransformer"
HN_POOLING = "hardneg.encoders.st_modules.HardnegPooling"
# sentence_bert_config.json of a text Transformer (sentence-transformers >= 5.4)
_TRANSFORMER_CONFIG = {
    "transformer_task": "feature-extraction",
    "modality_config": {"text": {"method": "forward", "method_output_name": "last_hidden_state"}},
    "module_output_name": "token_embeddings",
}


def is_native(pooler: str, template: str | None) -> bool:
    """True when sentence-transformers' own modules express ``pooler`` (no hardneg needed to load)."""
    return pooler in _ST_MODE and template is None


def _stateless_copy(tokenizer, max_length: int):
    """A copy of ``tokenizer`` without the truncation/padding state its last call left behind, whose
    ``model_max_length`` is the export's ``max_length`` (where sentence-transformers reads it).

    A fast tokenizer serialises that state into tokenizer.json, so without this the exported
    bytes would depend on which batch was encoded last (and differ between local and Slurm runs).
    """
    import copy

    clean = copy.deepcopy(tokenizer)
    backend = getattr(clean, "backend_tokenizer", None)
    if backend is not None:
        backend.no_truncation()
        backend.no_padding()
    clean.model_max_length = max_length
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
    """Write ``backbone`` + ``pooler`` (+ ``template``) as a sentence-transformers folder at ``out_dir``;
    ``card``: the run's summary (``hardneg.train.model_card.model_card``) for README.md.

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
    _stateless_copy(tokenizer, max_length).save_pretrained(out)
    dim = int(backbone.config.hidden_size)
    native = is_native(pooler, template)
    if native:
        modules = [{"idx": 0, "name": "0", "path": "", "type": ST_TRANSFORMER},
                   {"idx": 1, "name": "1", "path": "1_Pooling", "type": ST_POOLING}]
        write_json_atomic(_TRANSFORMER_CONFIG, out / "sentence_bert_config.json")
        write_json_atomic({"embedding_dimension": dim, "pooling_mode": _ST_MODE[pooler], "include_prompt": True},
                          out / "1_Pooling" / "config.json")
    else:
        modules = [{"idx": 0, "name": "0", "path": "", "type": HN_TRANSFORMER},
                   {"idx": 1, "name": "1", "path": "1_Pooling", "type": HN_POOLING}]
        write_json_atomic({"template": template, "max_seq_length": max_length,
                           "output_hidden_states": pooler in NEEDS_HIDDEN_STATES}, out / TRANSFORMER_CONFIG_FILE)
        write_json_atomic({"pooler": pooler, "embedding_dimension": dim,
                           "mask_token_id": tokenizer.mask_token_id if pooler == "mask" else None},
                          out / "1_Pooling" / POOLING_CONFIG_FILE)
    if native and pooler == "cls":
        # the model's own pooler (dense + tanh over [CLS]) as a Dense module after CLS pooling
        from safetensors.torch import save_file

        dense = backbone.pooler.dense
        (out / "2_Dense").mkdir(exist_ok=True)
        save_file({"linear.weight": dense.weight.detach().cpu().contiguous(),
                   "linear.bias": dense.bias.detach().cpu().contiguous()}, str(out / "2_Dense" / "model.safetensors"))
        write_json_atomic({"in_features": dim, "out_features": dim, "bias": True,
                           "activation_function": "torch.nn.modules.activation.Tanh"}, out / "2_Dense" / "config.json")
        modules.append({"idx": 2, "name": "2", "path": "2_Dense", "type": ST_DENSE})
    write_json_atomic(modules, out / "modules.json")
    write_json_atomic({"model_type": "SentenceTransformer", "similarity_fn_name": "cosine", "prompts": {},
                       "default_prompt_name": None}, out / "config_sentence_transformers.json")
    from hardneg.train.model_card import model_card

    (out / "README.md").write_text(model_card(pooler, template, max_length, native, card), encoding="utf-8")
