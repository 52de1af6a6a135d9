"""Load an encoder (Hugging Face model or sentence-transformers folder) and embed sentences fast.

Encoding tokenizes once, de-duplicates sentences, sorts them by token length and runs padded
batches of similar length under ``torch.inference_mode`` (bf16 autocast on CUDA), so padding
waste is small; results come back in input order as float32.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from hardneg.encoders.pooling import NEEDS_HIDDEN_STATES, POOLERS, masked_mean, pool
from hardneg.encoders.templates import get_template
from hardneg.encoders.tokenize import PromptTokenizer
from hardneg.models.device import pick_device
from hardneg.models.load import load_backbone
from hardneg.models.precision import autocast_dtype, resolve_precision
from hardneg.models.resolve import resolve_model

log = logging.getLogger(__name__)

# A hardneg-exported sentence-transformers folder may carry this file to name a pooler that the
# sentence-transformers Pooling module cannot express (the [MASK]-prompt representation).
HARDNEG_POOLING_FILE = "hardneg_pooling.json"
# sentence-transformers Pooling modes -> how we compute them (cls_token is the raw [CLS] state).
_ST_MODES = {
    "pooling_mode_cls_token": "cls_before_pooler",
    "pooling_mode_mean_tokens": "avg",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len",
}


@dataclass
class _Dense:
    """A sentence-transformers Dense module (linear + activation) applied after pooling."""

    linear: torch.nn.Linear
    activation: torch.nn.Module

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.activation(self.linear(x))


@dataclass
class Encoder:
    """A transformer plus pooler; ``encode(sentences)`` -> float32 array [N, dim]."""

    model: torch.nn.Module
    tokenizer: object
    pooler: str = "avg"
    max_length: int = 128
    device: str = "cpu"
    template: str | None = None
    name: str = ""
    st_modes: tuple[str, ...] = ()          # sentence-transformers pooling modes (concatenated)
    dense: list[_Dense] = field(default_factory=list)

    _prompt: PromptTokenizer | None = field(default=None, init=False, repr=False, compare=False)

    # -- tokenization (the implementation training uses too) -----------------------------------
    def _prompt_tokenizer(self) -> PromptTokenizer:
        if self._prompt is None or self._prompt.tok is not self.tokenizer or self._prompt.max_length != self.max_length:
            self._prompt = PromptTokenizer(self.tokenizer, self.max_length, setting="max_length", joined=True)
        return self._prompt

    def _tokenize(self, sentences: Sequence[str]) -> list[list[int]]:
        """Ids with special tokens, at most ``max_length``; a template is never truncated."""
        return self._prompt_tokenizer().ids(sentences, self.template)

    # -- one padded batch ---------------------------------------------------------------------
    def _embed_batch(self, batch: list[list[int]]) -> torch.Tensor:
        padded = self._prompt_tokenizer().pad(batch)
        input_ids, attention = padded["input_ids"], padded["attention_mask"]
        input_ids, attention = input_ids.to(self.device), attention.to(self.device)
        need_hidden = self.pooler in NEEDS_HIDDEN_STATES
        out = self.model(input_ids=input_ids, attention_mask=attention, output_hidden_states=need_hidden)
        last = out.last_hidden_state
        if self.st_modes:
            parts = []
            for mode in self.st_modes:
                if mode == "max":
                    masked = last.masked_fill(attention.unsqueeze(-1) == 0, float("-inf"))
                    parts.append(masked.max(1).values)
                elif mode == "mean_sqrt_len":
                    n = attention.sum(1, keepdim=True).to(last.dtype)
                    parts.append(masked_mean(last, attention) * n / n.sqrt())
                else:
                    parts.append(pool(mode, last, attention))
            vec = torch.cat(parts, dim=-1)
            for layer in self.dense:
                vec = layer(vec)
            return vec.float()
        mask_index = None
        if self.pooler == "mask":
            mask_index = input_ids == self.tokenizer.mask_token_id
        vec = pool(
            self.pooler, last, attention,
            hidden_states=getattr(out, "hidden_states", None),
            pooler_output=getattr(out, "pooler_output", None),
            mask_index=mask_index,
        )
        return vec.float()

    def encode(self, sentences: list[str], batch_size: int = 128, show_progress: bool = False) -> np.ndarray:
        """Embed ``sentences`` -> float32 [N, dim], in input order (length-sorted batches inside)."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1 (got {batch_size})")
        sentences = list(sentences)
        if not sentences:
            return np.zeros((0, self.dim), dtype=np.float32)
        unique, inverse = np.unique(np.asarray(sentences, dtype=object).astype(str), return_inverse=True)
        ids = self._tokenize(list(unique))
        lengths = np.fromiter((len(r) for r in ids), dtype=np.int64, count=len(ids))
        order = np.argsort(-lengths, kind="stable")  # longest first: memory peak shows up at once
        out = np.empty((len(unique), self.dim), dtype=np.float32)
        self.model.eval()
        use_cuda = str(self.device).startswith("cuda")
        # precision 'auto': bf16 on CUDA (fp16 on a GPU without bf16), no autocast elsewhere
        amp_dtype = autocast_dtype(resolve_precision("auto", torch.device(self.device))) or torch.float16
        bar = tqdm(total=len(order), desc=f"encode {self.name or 'model'}", unit="sent",
                   disable=not show_progress, leave=False)
        with torch.inference_mode(), torch.autocast("cuda", dtype=amp_dtype, enabled=use_cuda):
            for start in range(0, len(order), batch_size):
                idx = order[start : start + batch_size]
                vecs = self._embed_batch([ids[i] for i in idx])
                out[idx] = vecs.cpu().numpy()
                bar.update(len(idx))
        bar.close()
        return out[inverse.reshape(-1)]

    __call__ = encode

    @property
    def dim(self) -> int:
        hidden = int(self.model.config.hidden_size)
        if self.dense:
            return int(self.dense[-1].linear.out_features)
        return hidden * max(1, len(self.st_modes))


# -- loading ------------------------------------------------------------------------------------
def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"sentence-transformers folder is missing {path}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: invalid JSON ({exc})") from exc


def _activation(name: str, where: Path) -> torch.nn.Module:
    short = name.rsplit(".", 1)[-1]
    table = {"Tanh": torch.nn.Tanh, "Identity": torch.nn.Identity, "ReLU": torch.nn.ReLU,
             "GELU": torch.nn.GELU, "Sigmoid": torch.nn.Sigmoid}
    if short not in table:
        raise ValueError(f"{where}: unsupported Dense activation_function {name!r}")
    return table[short]()


def _load_dense(folder: Path) -> _Dense:
    cfg = _read_json(folder / "config.json")
    linear = torch.nn.Linear(cfg["in_features"], cfg["out_features"], bias=cfg.get("bias", True))
    if (folder / "model.safetensors").exists():
        from safetensors.torch import load_file

        state = load_file(str(folder / "model.safetensors"))
    elif (folder / "pytorch_model.bin").exists():
        state = torch.load(folder / "pytorch_model.bin", map_location="cpu", weights_only=True)
    else:
        raise FileNotFoundError(f"{folder}: Dense module has no model.safetensors or pytorch_model.bin")
    linear.load_state_dict({k.removeprefix("linear."): v for k, v in state.items()})
    return _Dense(linear, _activation(cfg.get("activation_function", "Identity"), folder / "config.json"))


def _read_st_folder(root: Path) -> dict:
    """Parse modules.json: transformer path, pooling modes, Dense layers, max_seq_length."""
    modules = _read_json(root / "modules.json")
    spec: dict = {"transformer": None, "modes": (), "dense": [], "max_seq_length": None, "hardneg": None}
    for mod in sorted(modules, key=lambda m: m.get("idx", 0)):
        kind = str(mod.get("type", "")).rsplit(".", 1)[-1]
        sub = root / mod.get("path", "")
        if kind == "Transformer":
            spec["transformer"] = sub
            for cfg_name in ("sentence_bert_config.json",):
                if (sub / cfg_name).exists():
                    spec["max_seq_length"] = _read_json(sub / cfg_name).get("max_seq_length")
        elif kind == "Pooling":
            cfg = _read_json(sub / "config.json")
            modes = tuple(v for k, v in _ST_MODES.items() if cfg.get(k))
            unsupported = [k for k, v in cfg.items() if k.startswith("pooling_mode_") and v and k not in _ST_MODES]
            if unsupported or not modes:
                raise ValueError(f"{sub / 'config.json'}: unsupported pooling mode(s) {unsupported or 'none set'}")
            spec["modes"] = modes
        elif kind == "Dense":
            spec["dense"].append(_load_dense(sub))
        elif kind == "Normalize":
            pass  # unit-normalising does not change cosine similarity
        else:
            raise ValueError(f"{root / 'modules.json'}: unsupported sentence-transformers module {mod.get('type')!r}")
    if spec["transformer"] is None:
        raise ValueError(f"{root / 'modules.json'}: no Transformer module")
    if (root / HARDNEG_POOLING_FILE).exists():
        spec["hardneg"] = _read_json(root / HARDNEG_POOLING_FILE)
    return spec


def load_encoder(
    model: str,
    pooler: str = "avg",
    max_length: int = 128,
    device: str | None = None,
    template: str | None = None,
) -> Encoder:
    """Load ``model`` (hub id, local folder, ``package:NAME``, or sentence-transformers folder).

    A sentence-transformers folder (has ``modules.json``) uses its own pooling config, Dense
    layers and ``max_seq_length``; ``pooler``/``template`` apply to plain Hugging Face models (and
    to hardneg folders that carry ``hardneg_pooling.json``). ``pooler='mask'`` without a template
    uses SNCSE's first template.
    """
    if max_length < 4:  # checked before a model folder's own setting can replace it
        raise ValueError(f"max_length must be >= 4 (got {max_length})")
    path = resolve_model(model, setting="model")
    dev = str(pick_device(device))
    st_spec = None
    if Path(path, "modules.json").is_file():
        st_spec = _read_st_folder(Path(path))
        hn = st_spec["hardneg"]
        if hn:  # a hardneg export whose representation needs more than ST's Pooling module
            pooler = hn.get("pooler", pooler)
            template = hn.get("template", template)
            max_length = int(hn.get("max_length", max_length))
        else:
            if pooler != "avg" or template is not None:
                log.warning("%s is a sentence-transformers folder: using its own pooling config, "
                            "ignoring pooler=%r template=%r", model, pooler, template)
            pooler, template = "avg", None
            if st_spec["max_seq_length"]:
                if int(st_spec["max_seq_length"]) != max_length:
                    log.warning("%s is a sentence-transformers folder: using its max_seq_length %s, "
                                "not max_length=%s", model, st_spec["max_seq_length"], max_length)
                max_length = int(st_spec["max_seq_length"])
        path = str(st_spec["transformer"])
    if pooler not in POOLERS:
        raise ValueError(f"unknown pooler {pooler!r} (known: {', '.join(POOLERS)})")
    if max_length < 4:
        raise ValueError(f"max_length must be >= 4 (got {max_length})")
    if pooler == "mask" and template is None:
        template = "sncse1"
    if template is not None:
        get_template(template)  # validates the name early
    tokenizer, hf_model, missing = load_backbone(model if st_spec is None else path, setting="model")
    st_modes: tuple[str, ...] = ()
    dense: list[_Dense] = []
    if st_spec is not None and not st_spec["hardneg"]:
        st_modes, dense = st_spec["modes"], st_spec["dense"]
        pooler = "avg" if st_modes == ("avg",) else ("cls_before_pooler" if st_modes == ("cls_before_pooler",) else "st")
    else:
        _check_pooler(pooler, model, hf_model, tokenizer, missing, template)
    max_pos = getattr(hf_model.config, "max_position_embeddings", None)
    if max_pos and max_length > max_pos:
        raise ValueError(f"max_length={max_length} exceeds the model's max_position_embeddings={max_pos} ({model})")
    hf_model.to(dev).eval()
    for layer in dense:
        layer.linear.to(dev)
        layer.activation.to(dev)
    enc = Encoder(model=hf_model, tokenizer=tokenizer, pooler=pooler, max_length=max_length, device=dev,
                  template=template, name=Path(str(model)).name or str(model), st_modes=st_modes, dense=dense)
    if st_modes:
        enc.pooler = pooler
    log.info("loaded encoder %s (pooler=%s, template=%s, max_length=%d, device=%s)",
             model, enc.pooler, template, max_length, dev)
    return enc


def _check_pooler(pooler, model_name, hf_model, tokenizer, missing, template) -> None:
    """Reject poolers this model cannot support, naming the model and the setting."""
    no_pooler = getattr(hf_model, "pooler", None) is None or any(k.startswith("pooler.") for k in missing)
    if pooler == "cls" and no_pooler:
        raise ValueError(
            f"pooler 'cls' needs a trained pooler layer, which model {model_name!r} does not have "
            f"(use pooler 'cls_before_pooler')"
        )
    if pooler in NEEDS_HIDDEN_STATES and int(getattr(hf_model.config, "num_hidden_layers", 0)) < 2:
        raise ValueError(f"pooler {pooler!r} needs at least 2 layers; model {model_name!r} has fewer")
    if (pooler == "mask" or template is not None) and tokenizer.mask_token is None:
        raise ValueError(f"pooler 'mask'/template needs a tokenizer with a mask token; {model_name!r} has none")
