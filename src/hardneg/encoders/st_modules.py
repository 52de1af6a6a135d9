"""hardneg's representations as sentence-transformers modules (needs the ``sentence-transformers`` extra).

An exported folder whose representation sentence-transformers' own Pooling cannot express (a
[MASK] prompt template, ``avg_first_last``, ``avg_top2``, a template with any pooler) names these
classes in ``modules.json``; ``SentenceTransformer(folder)`` imports them from here when hardneg is
installed, so its ``encode`` computes what ``hardneg.encoders.load_encoder(folder)`` computes:

- :class:`PromptTransformer` (module 0, files in the folder's root): the Hugging Face backbone plus
  the evaluation tokenization of ``hardneg.encoders.tokenize`` (the whole templated string, a
  too-long row loses sentence tokens, never the template) and every layer's hidden states when
  the pooler mixes layers;
- :class:`HardnegPooling` (module 1): any pooler of ``hardneg.encoders.pooling.POOLERS``
  (``mask``: the last hidden state at the template's [MASK]).

The file names and config keys are read by ``hardneg.encoders.st_folder`` as well, which needs no
sentence-transformers.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import torch
from sentence_transformers.base.modules import InputModule, Module

from hardneg.encoders.pooling import NEEDS_HIDDEN_STATES, POOLERS, pool
from hardneg.encoders.st_folder import POOLING_CONFIG_FILE, TRANSFORMER_CONFIG_FILE
from hardneg.encoders.tokenize import PromptTokenizer


def _stateless_copy(tokenizer):
    """A copy of ``tokenizer`` without the truncation/padding state its last call left behind
    (a fast tokenizer serialises that state into tokenizer.json: bytes would depend on the last batch)."""
    import copy

    clean = copy.deepcopy(tokenizer)
    backend = getattr(clean, "backend_tokenizer", None)
    if backend is not None:
        backend.no_truncation()
        backend.no_padding()
    return clean


class PromptTransformer(InputModule):
    """A Hugging Face encoder with hardneg's (optionally templated) tokenization.

    ``template``: a prompt template name of ``hardneg.encoders.templates`` or None;
    ``max_seq_length``: every token counted (special and template ones too);
    ``output_hidden_states``: also return every layer (``all_layer_embeddings``).
    """

    config_file_name = TRANSFORMER_CONFIG_FILE
    config_keys: ClassVar[list[str]] = ["template", "max_seq_length", "output_hidden_states"]
    save_in_root = True

    def __init__(self, model: torch.nn.Module, tokenizer, template: str | None = None,
                 max_seq_length: int = 128, output_hidden_states: bool = False) -> None:
        super().__init__()
        self.auto_model = model
        self.tokenizer = tokenizer
        self.template = template
        self.max_seq_length = int(max_seq_length)
        self.output_hidden_states = bool(output_hidden_states)
        self._prompt = PromptTokenizer(tokenizer, self.max_seq_length, setting="max_seq_length", joined=True)

    def preprocess(self, inputs: Sequence[str], prompt: str | None = None, **kwargs) -> dict[str, Any]:
        """Token ids of each text inside the template, padded (``prompt`` is prepended to the text)."""
        texts = [prompt + t for t in inputs] if prompt else list(inputs)
        return self._prompt.pad(self._prompt.ids(texts, self.template))

    def forward(self, features: dict[str, Any], **kwargs) -> dict[str, Any]:
        out = self.auto_model(input_ids=features["input_ids"], attention_mask=features["attention_mask"],
                              output_hidden_states=self.output_hidden_states, return_dict=True)
        features["token_embeddings"] = out.last_hidden_state
        if self.output_hidden_states:
            features["all_layer_embeddings"] = out.hidden_states
        if getattr(out, "pooler_output", None) is not None:
            features["pooler_output"] = out.pooler_output
        return features

    def get_embedding_dimension(self) -> int:
        return int(self.auto_model.config.hidden_size)

    def save(self, output_path: str, *args, safe_serialization: bool = True, **kwargs) -> None:
        self.auto_model.save_pretrained(output_path, safe_serialization=safe_serialization)
        _stateless_copy(self.tokenizer).save_pretrained(output_path)
        self.save_config(output_path)

    @classmethod
    def load(cls, model_name_or_path: str, subfolder: str = "", token: bool | str | None = None,
             cache_folder: str | None = None, revision: str | None = None, local_files_only: bool = False,
             **kwargs) -> PromptTransformer:
        from transformers import AutoModel, AutoTokenizer

        hub = {"token": token, "cache_folder": cache_folder, "revision": revision,
               "local_files_only": local_files_only}
        config = cls.load_config(model_name_or_path, subfolder=subfolder, **hub)
        folder = cls.load_dir_path(model_name_or_path, subfolder=subfolder, **hub)
        model = AutoModel.from_pretrained(folder)
        tokenizer = AutoTokenizer.from_pretrained(folder)
        return cls(model, tokenizer, **{k: config[k] for k in cls.config_keys if k in config})


class HardnegPooling(Module):
    """Sentence vector by a hardneg pooler (``cls``, ``cls_before_pooler``, ``avg``,
    ``avg_first_last``, ``avg_top2``, ``mask``) from :class:`PromptTransformer`'s features."""

    config_file_name = POOLING_CONFIG_FILE
    config_keys: ClassVar[list[str]] = ["pooler", "embedding_dimension", "mask_token_id"]

    def __init__(self, pooler: str, embedding_dimension: int, mask_token_id: int | None = None) -> None:
        super().__init__()
        if pooler not in POOLERS:
            raise ValueError(f"HardnegPooling: unknown pooler {pooler!r} (known: {', '.join(POOLERS)})")
        if pooler == "mask" and mask_token_id is None:
            raise ValueError("HardnegPooling: pooler 'mask' needs mask_token_id")
        self.pooler = pooler
        self.embedding_dimension = int(embedding_dimension)
        self.mask_token_id = mask_token_id

    def forward(self, features: dict[str, Any], **kwargs) -> dict[str, Any]:
        mask_index = features["input_ids"] == self.mask_token_id if self.pooler == "mask" else None
        hidden = features.get("all_layer_embeddings") if self.pooler in NEEDS_HIDDEN_STATES else None
        features["sentence_embedding"] = pool(
            self.pooler, features["token_embeddings"], features["attention_mask"], hidden_states=hidden,
            pooler_output=features.get("pooler_output"), mask_index=mask_index)
        return features

    def get_embedding_dimension(self) -> int:
        return self.embedding_dimension

    def save(self, output_path: str, *args, **kwargs) -> None:
        Path(output_path).mkdir(parents=True, exist_ok=True)
        self.save_config(output_path)
