"""Load an encoder (Hugging Face model or sentence-transformers folder) and embed sentences fast.

Encoding tokenizes once, de-duplicates sentences, sorts them by token length and runs padded
batches of similar length under ``torch.inference_mode`` (bf16 autocast on CUDA), so padding
waste is small; results come back in input order as float32.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from hardneg.encoders.pooling import NEEDS_HIDDEN_STATES, POOLERS, masked_mean, pool
from hardneg.encoders.st_folder import (
    DenseSpec,
    FolderSpec,
    UnsupportedFolder,
    folder_pooler,
    is_st_folder,
    read_folder,
)
from hardneg.encoders.templates import get_template
from hardneg.encoders.tokenize import PromptTokenizer
from hardneg.models.device import pick_device
from hardneg.models.load import load_backbone
from hardneg.models.precision import autocast_dtype, resolve_precision
from hardneg.models.resolve import resolve_model

log = logging.getLogger(__name__)


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
    normalize: bool = False  # a Normalize module: unit-length vectors, as sentence-transformers returns

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
                if mode == "cls":
                    parts.append(last[:, 0])
                elif mode == "mean":
                    parts.append(masked_mean(last, attention))
                elif mode == "max":
                    masked = last.masked_fill(attention.unsqueeze(-1) == 0, float("-inf"))
                    parts.append(masked.max(1).values)
                elif mode == "mean_sqrt_len_tokens":
                    n = attention.sum(1, keepdim=True).to(last.dtype)
                    parts.append(masked_mean(last, attention) * n / n.sqrt())
                else:  # read_folder admits no other mode
                    raise ValueError(f"unsupported sentence-transformers pooling mode {mode!r}")
            vec = torch.cat(parts, dim=-1)
            for layer in self.dense:
                vec = layer(vec)
            return self._normalized(vec.float())
        mask_index = None
        if self.pooler == "mask":
            mask_index = input_ids == self.tokenizer.mask_token_id
        vec = pool(
            self.pooler, last, attention,
            hidden_states=getattr(out, "hidden_states", None),
            pooler_output=getattr(out, "pooler_output", None),
            mask_index=mask_index,
        )
        return self._normalized(vec.float())

    def _normalized(self, vec: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.normalize(vec, p=2, dim=-1) if self.normalize else vec

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
def _activation(name: str, where: Path) -> torch.nn.Module:
    short = name.rsplit(".", 1)[-1]
    table = {"Tanh": torch.nn.Tanh, "Identity": torch.nn.Identity, "ReLU": torch.nn.ReLU,
             "GELU": torch.nn.GELU, "Sigmoid": torch.nn.Sigmoid}
    if short not in table:
        raise UnsupportedFolder(f"{where}: Dense activation_function {name!r}")
    return table[short]()


def _load_dense(d: DenseSpec) -> _Dense:
    linear = torch.nn.Linear(d.in_features, d.out_features, bias=d.bias)
    if (d.folder / "model.safetensors").exists():
        from safetensors.torch import load_file

        state = load_file(str(d.folder / "model.safetensors"))
    elif (d.folder / "pytorch_model.bin").exists():
        state = torch.load(d.folder / "pytorch_model.bin", map_location="cpu", weights_only=True)
    else:
        raise FileNotFoundError(f"{d.folder}: Dense module has no model.safetensors or pytorch_model.bin")
    linear.load_state_dict({k.removeprefix("linear."): v for k, v in state.items()})
    return _Dense(linear, _activation(d.activation, d.folder / "config.json"))


@dataclass
class SentenceTransformerEncoder:
    """A folder whose modules only sentence-transformers computes: ``encode`` is its own."""

    model: object  # sentence_transformers.SentenceTransformer
    name: str = ""
    pooler: str = "sentence-transformers"
    template: str | None = None
    max_length: int = 0

    def encode(self, sentences: list[str], batch_size: int = 128, show_progress: bool = False) -> np.ndarray:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1 (got {batch_size})")
        vecs = self.model.encode(list(sentences), batch_size=batch_size, show_progress_bar=show_progress,
                                 convert_to_numpy=True)
        return np.asarray(vecs, dtype=np.float32).reshape(len(sentences), -1)

    __call__ = encode


def _through_sentence_transformers(path: str, model: str, device: str, why: UnsupportedFolder):
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise ValueError(f"{why}; hardneg computes only Transformer, Pooling (cls, mean, max, "
                         f"mean_sqrt_len_tokens), Dense and Normalize modules without sentence-transformers: "
                         f"pip install 'hardneg[sentence-transformers]' to encode it through it") from None
    log.info("%s: %s; encoding through sentence-transformers", model, why)
    st = SentenceTransformer(path, device=device, local_files_only=True)
    return SentenceTransformerEncoder(st, name=Path(str(model)).name or str(model),
                                      max_length=int(st.max_seq_length or 0))


def load_encoder(
    model: str,
    pooler: str = "avg",
    max_length: int = 128,
    device: str | None = None,
    template: str | None = None,
) -> Encoder | SentenceTransformerEncoder:
    """Load ``model`` (hub id, local folder, ``package:NAME``, or sentence-transformers folder).

    A sentence-transformers folder (has ``modules.json``; current and legacy formats, see
    ``hardneg.encoders.st_folder``) uses its own pooling, template, Dense/Normalize modules and
    max_seq_length; ``pooler``/``template``/``max_length`` apply to plain Hugging Face models. A
    folder with modules hardneg does not compute is encoded by sentence-transformers itself
    (when installed). ``pooler='mask'`` without a template uses SNCSE's first template.
    """
    if max_length < 4:  # checked before a model folder's own setting can replace it
        raise ValueError(f"max_length must be >= 4 (got {max_length})")
    path = resolve_model(model, setting="model")
    dev = str(pick_device(device))
    spec: FolderSpec | None = None
    if is_st_folder(path):
        try:
            spec = read_folder(path)
        except UnsupportedFolder as why:
            return _through_sentence_transformers(path, model, dev, why)
        own = (spec.pooler or folder_pooler(spec) or "st", spec.template)
        if (pooler, template) not in (("avg", None), own):
            log.warning("%s is a sentence-transformers folder: using its own pooling %s (template %s), "
                        "ignoring pooler=%r template=%r", model, own[0], own[1], pooler, template)
        pooler = spec.pooler or "avg"
        template = spec.template
        if spec.max_seq_length and spec.max_seq_length != max_length:
            log.warning("%s is a sentence-transformers folder: using its max_seq_length %s, not max_length=%s",
                        model, spec.max_seq_length, max_length)
            max_length = spec.max_seq_length
        path = str(spec.transformer)
    if pooler not in POOLERS:
        raise ValueError(f"unknown pooler {pooler!r} (known: {', '.join(POOLERS)})")
    if max_length < 4:
        raise ValueError(f"max_length must be >= 4 (got {max_length})")
    if pooler == "mask" and template is None:
        template = "sncse1"
    if template is not None:
        get_template(template)  # validates the name early
    tokenizer, hf_model, missing = load_backbone(model if spec is None else path, setting="model")
    st_modes: tuple[str, ...] = ()
    dense: list[_Dense] = []
    if spec is not None and spec.st_modes:
        st_modes, dense = spec.st_modes, [_load_dense(d) for d in spec.dense]
        pooler = {("mean",): "avg", ("cls",): "cls_before_pooler"}.get(st_modes, "st") if not dense else "st"
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
                  template=template, name=Path(str(model)).name or str(model), st_modes=st_modes, dense=dense,
                  normalize=bool(spec and spec.normalize))
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
