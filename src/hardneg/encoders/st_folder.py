"""Read a sentence-transformers folder (``modules.json``) without importing sentence-transformers.

Understands the formats users have on disk:
- module ``type`` paths of sentence-transformers >= 5.4 (``sentence_transformers.base.modules.
  transformer.Transformer``, ``...sentence_transformer.modules.pooling.Pooling``) and the legacy
  ``sentence_transformers.models.*`` ones (matched by class name);
- Pooling's ``"pooling_mode": "mean"`` (or a list, concatenated) and the legacy
  ``pooling_mode_*_tokens`` booleans (none set means mean, as sentence-transformers reads it);
- ``max_seq_length`` in ``sentence_bert_config.json`` (legacy) or the tokenizer's
  ``model_max_length`` (current);
- hardneg's own modules (``hardneg.encoders.st_modules``) and the ``hardneg_pooling.json`` that
  earlier hardneg exports carry.

A folder with anything else is :class:`UnsupportedFolder`; ``load_encoder`` then encodes through
sentence-transformers itself when it is installed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# hardneg.encoders.st_modules' files (module 0 in the folder root, module 1 in 1_Pooling/)
TRANSFORMER_CONFIG_FILE = "hardneg_transformer_config.json"
POOLING_CONFIG_FILE = "config.json"
# earlier hardneg exports: the pooler that Pooling could not express, beside a mean Pooling module
LEGACY_HARDNEG_POOLING_FILE = "hardneg_pooling.json"

# current Pooling mode names and legacy boolean keys -> the ST mode they mean
ST_POOLING_MODES = ("cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken")
LEGACY_POOLING_KEYS = {
    "pooling_mode_cls_token": "cls", "pooling_mode_max_tokens": "max", "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean", "pooling_mode_lasttoken": "lasttoken",
}
# ST modes hardneg's Encoder computes (weightedmean/lasttoken go through sentence-transformers)
SUPPORTED_ST_MODES = ("cls", "max", "mean", "mean_sqrt_len_tokens")
# an ST pooling of one mode -> the same hardneg pooler
ST_MODE_POOLER = {"cls": "cls_before_pooler", "mean": "avg"}
# transformers' "no limit" model_max_length is ~1e30
_NO_LIMIT = 10**9


class UnsupportedFolder(ValueError):
    """A sentence-transformers folder whose modules hardneg's own encoder cannot compute."""


@dataclass
class DenseSpec:
    """A Dense module: weights file, sizes, activation name."""

    folder: Path
    in_features: int
    out_features: int
    bias: bool
    activation: str


@dataclass
class FolderSpec:
    """What a sentence-transformers folder computes, in hardneg's terms."""

    transformer: Path  # the Hugging Face model folder
    st_modes: tuple[str, ...] = ()  # sentence-transformers Pooling modes (concatenated); () for hardneg modules
    dense: list[DenseSpec] = field(default_factory=list)
    max_seq_length: int | None = None
    pooler: str | None = None  # a hardneg pooler (hardneg modules or the legacy hardneg_pooling.json)
    template: str | None = None
    normalize: bool = False


def read_json(path: Path) -> Any:
    """JSON of ``path``; a missing or invalid file is a one-line error naming it."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"sentence-transformers folder is missing {path}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: invalid JSON ({exc})") from exc


def is_st_folder(path: str | Path) -> bool:
    return Path(path, "modules.json").is_file()


def pooling_modes(cfg: dict[str, Any], where: Path) -> tuple[str, ...]:
    """The Pooling modes of a Pooling ``config.json`` (current or legacy keys)."""
    if "pooling_mode" in cfg:
        mode = cfg["pooling_mode"]
        modes = (mode,) if isinstance(mode, str) else tuple(mode or ())
        bad = [m for m in modes if m not in ST_POOLING_MODES]
        if bad or not modes:
            raise ValueError(f"{where}: unknown pooling_mode {mode!r} (known: {', '.join(ST_POOLING_MODES)})")
        return modes
    modes = tuple(m for k, m in LEGACY_POOLING_KEYS.items() if cfg.get(k))
    return modes or ("mean",)  # sentence-transformers' reading of a config with none set


def _max_seq_length(sub: Path, cfg: dict[str, Any]) -> int | None:
    if cfg.get("max_seq_length"):
        return int(cfg["max_seq_length"])
    tok_cfg = sub / "tokenizer_config.json"
    if tok_cfg.is_file():
        value = read_json(tok_cfg).get("model_max_length")
        if isinstance(value, (int, float)) and 0 < value < _NO_LIMIT:
            return int(value)
    return None


def read_folder(root: str | Path) -> FolderSpec:
    """Parse ``root/modules.json`` (and each module's config) into a :class:`FolderSpec`."""
    root = Path(root)
    modules = read_json(root / "modules.json")
    if not isinstance(modules, list):
        raise ValueError(f"{root / 'modules.json'}: expected a list of modules")  # noqa: TRY004  # bad file content
    spec: FolderSpec | None = None
    pooled = False
    for mod in sorted(modules, key=lambda m: m.get("idx", 0)):
        type_name = str(mod.get("type", ""))
        kind = type_name.rsplit(".", 1)[-1]
        sub = root / mod.get("path", "")
        where = f"{root / 'modules.json'}: module {mod.get('idx')} ({type_name})"
        if kind in ("Transformer", "PromptTransformer") and spec is None:
            cfg_file = sub / (TRANSFORMER_CONFIG_FILE if kind == "PromptTransformer" else "sentence_bert_config.json")
            cfg = read_json(cfg_file) if cfg_file.is_file() else {}
            if kind == "Transformer" and cfg.get("transformer_task", "feature-extraction") != "feature-extraction":
                raise UnsupportedFolder(f"{where}: transformer_task {cfg['transformer_task']!r}")
            spec = FolderSpec(transformer=sub, max_seq_length=_max_seq_length(sub, cfg),
                              template=cfg.get("template") if kind == "PromptTransformer" else None)
        elif spec is None:
            raise UnsupportedFolder(f"{where}: the first module is not a Transformer")
        elif kind == "Pooling" and not pooled:
            cfg = read_json(sub / "config.json")
            if cfg.get("include_prompt") is False:
                raise UnsupportedFolder(f"{where}: include_prompt false")
            spec.st_modes = pooling_modes(cfg, sub / "config.json")
            unsupported = [m for m in spec.st_modes if m not in SUPPORTED_ST_MODES]
            if unsupported:
                raise UnsupportedFolder(f"{where}: pooling mode(s) {', '.join(unsupported)}")
            pooled = True
        elif kind == "HardnegPooling" and not pooled:
            cfg = read_json(sub / POOLING_CONFIG_FILE)
            spec.pooler = cfg.get("pooler")
            pooled = True
        elif kind == "Dense" and pooled:
            cfg = read_json(sub / "config.json")
            if cfg.get("use_residual") or cfg.get("module_input_name", "sentence_embedding") != "sentence_embedding":
                raise UnsupportedFolder(f"{where}: residual or non-default input")
            spec.dense.append(DenseSpec(sub, int(cfg["in_features"]), int(cfg["out_features"]),
                                        bool(cfg.get("bias", True)), str(cfg.get("activation_function") or "Identity")))
        elif kind == "Normalize":
            spec.normalize = True  # unit length: cosine similarity unchanged, vectors normalised like ST's
        else:
            raise UnsupportedFolder(f"{where}: not a module hardneg computes")
    if spec is None:
        raise ValueError(f"{root / 'modules.json'}: no Transformer module")
    if not pooled:
        raise UnsupportedFolder(f"{root / 'modules.json'}: no Pooling module (token embeddings only)")
    legacy = root / LEGACY_HARDNEG_POOLING_FILE
    if spec.pooler is None and legacy.is_file():
        rec = read_json(legacy)
        spec.pooler, spec.template = rec.get("pooler"), rec.get("template")
        spec.st_modes, spec.dense = (), []
        if rec.get("max_length"):
            spec.max_seq_length = int(rec["max_length"])
    return spec


def folder_pooler(spec: FolderSpec) -> str | None:
    """The hardneg pooler a folder's representation equals, or None (concatenated / max modes)."""
    if spec.pooler:
        return spec.pooler
    if len(spec.st_modes) == 1 and spec.st_modes[0] in ST_MODE_POOLER:
        base = ST_MODE_POOLER[spec.st_modes[0]]
        if not spec.dense:
            return base
        if (base == "cls_before_pooler" and len(spec.dense) == 1
                and spec.dense[0].activation.rsplit(".", 1)[-1] == "Tanh"):
            return "cls"  # a hardneg export of the model's pooler layer (dense + tanh over [CLS])
    return None
