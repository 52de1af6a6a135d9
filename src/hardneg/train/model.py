"""The trainable encoder: a Hugging Face backbone, a shared pooler, SimCSE's training-only MLP.

Pooling is ``hardneg.encoders.pool`` (the same code evaluation uses). Prompt templates wrap the
sentence; when too long the sentence is truncated, never the template, so [MASK] survives
(same convention as ``hardneg.encoders.Encoder``: ``max_length`` counts every token).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import torch
from torch import nn

from hardneg.encoders import pool
from hardneg.encoders.pooling import NEEDS_HIDDEN_STATES
from hardneg.encoders.templates import MASK_PLACEHOLDER, split_template
from hardneg.models.load import load_backbone


class PromptTokenizer:
    """Tokenize sentences (optionally inside a prompt template) into padded tensors."""

    def __init__(self, tokenizer, max_length: int) -> None:
        self.tok = tokenizer
        self.max_length = max_length
        self._parts: dict[str, tuple[list[int], list[int]]] = {}
        # the special tokens around one sequence ([CLS] ... [SEP] for BERT), found by example:
        # transformers 5 tokenizers no longer offer build_inputs_with_special_tokens
        body = tokenizer("hello", add_special_tokens=False)["input_ids"]
        full = tokenizer("hello", add_special_tokens=True)["input_ids"]
        lead = next(i for i in range(len(full) - len(body) + 1) if full[i : i + len(body)] == body)
        self._lead, self._trail = full[:lead], full[lead + len(body):]

    def _wrap(self, ids: list[int]) -> list[int]:
        return self._lead + ids + self._trail

    def _template_ids(self, template: str) -> tuple[list[int], list[int]]:
        if template not in self._parts:
            if self.tok.mask_token is None:
                raise ValueError("prompt templates need a tokenizer with a mask token")
            prefix, suffix = split_template(template)
            prefix = prefix.replace(MASK_PLACEHOLDER, self.tok.mask_token)
            suffix = suffix.replace(MASK_PLACEHOLDER, self.tok.mask_token)
            self._parts[template] = (
                self.tok(prefix, add_special_tokens=False)["input_ids"],
                self.tok(suffix, add_special_tokens=False)["input_ids"],
            )
        return self._parts[template]

    def ids(self, sentences: Sequence[str], template: str | None = None) -> list[list[int]]:
        """Token ids with special tokens, at most ``max_length`` each."""
        special = len(self._lead) + len(self._trail)
        if template is None:
            body = self.tok(list(sentences), add_special_tokens=False, truncation=True,
                            max_length=self.max_length - special)["input_ids"]
            return [self._wrap(b) for b in body]
        pre, suf = self._template_ids(template)
        keep = self.max_length - special - len(pre) - len(suf)
        if keep < 1:
            raise ValueError(f"train setting 'max_length' ({self.max_length}) is too short for template {template!r}")
        body = self.tok(list(sentences), add_special_tokens=False)["input_ids"]
        return [self._wrap(pre + b[:keep] + suf) for b in body]

    def pad(self, rows: list[list[int]]) -> dict[str, torch.Tensor]:
        width = max(len(r) for r in rows)
        pad_id = self.tok.pad_token_id if self.tok.pad_token_id is not None else 0
        input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
        attention = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            input_ids[i, : len(r)] = torch.tensor(r, dtype=torch.long)
            attention[i, : len(r)] = 1
        return {"input_ids": input_ids, "attention_mask": attention}


class ContrastiveEncoder(nn.Module):
    """Backbone + pooler (+ SimCSE's MLP over the pooled vector, used only in training)."""

    def __init__(self, backbone: nn.Module, tokenizer, pooler: str, max_length: int, mlp: bool) -> None:
        super().__init__()
        self.backbone = backbone
        self.tokenizer = tokenizer
        self.prompt = PromptTokenizer(tokenizer, max_length)
        self.pooler = pooler
        self.max_length = max_length
        hidden = int(backbone.config.hidden_size)
        # SimCSE "mlp_only_train": dense + tanh over the sentence vector, dropped at evaluation
        self.mlp = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh()) if mlp else None

    @classmethod
    def from_pretrained(
        cls, name: str, pooler: str, max_length: int, mlp: bool, dropout: float | None = None,
        setting: str = "train.init_model",
    ) -> ContrastiveEncoder:
        tokenizer, backbone, _ = load_backbone(name, setting=setting, dropout=dropout)
        if pooler == "cls" and getattr(backbone, "pooler", None) is None:
            raise ValueError(f"train setting 'pooler': 'cls' needs a pooler layer, {name!r} has none")
        if pooler != "cls" and getattr(backbone, "pooler", None) is not None:
            # the model's pooler layer does not feed the representation: freeze it (DDP requires
            # every trainable parameter to receive a gradient)
            backbone.pooler.requires_grad_(False)
        return cls(backbone, tokenizer, pooler, max_length, mlp)

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def tokenize(self, sentences: Sequence[str], template: str | None = None) -> dict[str, torch.Tensor]:
        """Padded tensors on the model's device (for the ``mask`` pooler, a template is needed)."""
        if self.pooler == "mask" and template is None:
            raise ValueError("pooler 'mask' needs a prompt template")
        return {k: v.to(self.device) for k, v in self.prompt.pad(self.prompt.ids(sentences, template)).items()}

    def embed(self, batch: dict[str, torch.Tensor], use_mlp: bool = True) -> torch.Tensor:
        """Sentence vectors [B, H] (differentiable); the MLP only when ``use_mlp``."""
        out = self.backbone(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
            output_hidden_states=self.pooler in NEEDS_HIDDEN_STATES,
        )
        mask_index = batch["input_ids"] == self.tokenizer.mask_token_id if self.pooler == "mask" else None
        vec = pool(
            self.pooler, out.last_hidden_state, batch["attention_mask"],
            hidden_states=getattr(out, "hidden_states", None),
            pooler_output=getattr(out, "pooler_output", None),
            mask_index=mask_index,
        )
        if use_mlp and self.mlp is not None:
            vec = self.mlp(vec)
        return vec

    def forward(self, sentences: Sequence[str], template: str | None = None, use_mlp: bool = True) -> torch.Tensor:
        return self.embed(self.tokenize(sentences, template), use_mlp=use_mlp)


@contextlib.contextmanager
def dropout_rate(module: nn.Module, p: float | None) -> Iterator[None]:
    """Temporarily set every nn.Dropout's probability to ``p`` (SAN's separate p2 for the SAN
    forward pass, Table 6); HF attention reads ``self.dropout.p`` so it follows too."""
    if p is None:
        yield
        return
    saved = [(m, m.p) for m in module.modules() if isinstance(m, nn.Dropout)]
    try:
        for m, _ in saved:
            m.p = p
        yield
    finally:
        for m, old in saved:
            m.p = old
