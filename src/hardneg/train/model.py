"""The trainable encoder: a Hugging Face backbone, a shared pooler, SimCSE's training-only MLP.

Pooling is ``hardneg.encoders.pool`` and tokenization ``hardneg.encoders.tokenize.PromptTokenizer``
(the same code evaluation uses): prompt templates wrap the sentence; when too long the sentence is
truncated, never the template, so [MASK] survives; ``max_length`` counts every token.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import torch
from torch import nn

from hardneg.encoders import pool
from hardneg.encoders.pooling import NEEDS_HIDDEN_STATES
from hardneg.encoders.tokenize import PromptTokenizer
from hardneg.models.load import load_backbone


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

    def param_groups(self, lr: float, head_lr: float | None) -> list[dict] | list[nn.Parameter]:
        """Trainable parameters for the optimizer: one list at ``lr``, or with ``head_lr`` two
        groups, the pretrained backbone at ``lr`` and the head trained from scratch (SimCSE's MLP,
        SynCSE's projection) at ``head_lr`` (SynCSE's layer-wise learning rates)."""
        backbone = [p for p in self.backbone.parameters() if p.requires_grad]
        head = [p for p in self.mlp.parameters() if p.requires_grad] if self.mlp is not None else []
        if head_lr is None or not head:
            return backbone + head
        return [{"params": backbone, "lr": lr}, {"params": head, "lr": head_lr}]

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
