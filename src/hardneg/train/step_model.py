"""One training step's model: ``StepModel`` runs every forward pass of a step in ONE call (what DDP
wraps); ``hardneg.train.methods.objective.Objective`` turns its embeddings into the loss."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from hardneg.train import views
from hardneg.train.hicl_views import hicl_views
from hardneg.train.model import ContrastiveEncoder, dropout_rate
from hardneg.train.settings import TrainSettings


class StepModel(nn.Module):
    """Every forward pass of one step inside ONE forward call (so DDP sees one forward per
    backward): views (+ negation, paraphrase) at the model's dropout, SAN at ``san_dropout``.
    Each view's text and template come from ``hardneg.train.views`` (SNCSE: negation and SAN
    negatives in the positive's template), for the HiCL path as for the ordinary one."""

    def __init__(self, encoder: ContrastiveEncoder, settings: TrainSettings) -> None:
        super().__init__()
        self.encoder = encoder
        self.s = settings

    def forward(self, texts: list[str], extra: dict[str, list[str]],
                tokens: dict[str, Any] | None = None) -> dict[str, torch.Tensor]:
        """``tokens``: ``self.tokenize(texts, extra)`` made ahead (the trainer's background
        worker); None tokenizes here."""
        if self.s.uses("hicl"):  # HiCL: segments encoded separately, views aggregated
            o = self.s.own("hicl")
            return hicl_views(self.encoder, views.views_pass(self.s, texts, extra), o.segment_length, o.max_tokens)
        if tokens is None:
            tokens = self.tokenize(texts, extra)
        dev = self.encoder.device
        batch = {k: v.to(dev, non_blocking=True) for k, v in tokens["views"].items()}
        vecs = self.encoder.embed(batch, use_mlp=True)
        out, start = {}, 0
        for name, n in tokens["groups"]:
            out[name] = vecs[start : start + n]
            start += n
        if "san" in tokens:
            with dropout_rate(self.encoder, self.s.san_dropout):
                san = {k: v.to(dev, non_blocking=True) for k, v in tokens["san"].items()}
                out["san"] = self.encoder.embed(san, use_mlp=True)
        return out

    def tokenize(self, texts: list[str], extra: dict[str, list[str]]) -> dict[str, Any]:
        """CPU half of ``forward``: padded id tensors for the views pass and the SAN pass (thread
        safe, so the trainer runs it for upcoming steps in a worker). ``static_width``
        pads every batch to ``max_length`` (fixed shapes for ``train.compile``)."""
        if self.s.uses("hicl"):  # HiCL tokenizes its segments itself, in forward
            return {}
        p = self.prompt or self.encoder.prompt
        width = self.s.max_length if self.static_width else None
        groups = [(name, p.ids(sents, t)) for name, sents, t in views.views_pass(self.s, texts, extra)]
        pin = torch.cuda.is_available()
        out: dict[str, Any] = {"groups": [(name, len(g)) for name, g in groups],
                               "views": _padded(p, [r for _, g in groups for r in g], width, pin)}
        if "san" in extra:
            t_san = views.view_template(self.s, "san")
            if self.encoder.pooler == "mask" and t_san is None:
                raise ValueError("pooler 'mask' needs a prompt template")
            out["san"] = _padded(p, p.ids(views.view_texts(self.s, "san", extra["san"]), t_san), width, pin)
        return out

    static_width = False  # set by the trainer when train.compile is on
    prompt = None  # a PromptTokenizer of its own (the trainer's worker thread); None: the encoder's


def _padded(p, rows: list[list[int]], width: int | None, pin: bool) -> dict[str, torch.Tensor]:
    """``PromptTokenizer.pad``, optionally to a fixed width, in page-locked memory on CUDA hosts
    (so the copy to the device does not block the host)."""
    batch = p.pad(rows)
    if width is not None and batch["input_ids"].shape[1] < width:
        extra = width - batch["input_ids"].shape[1]
        pad_id = p.tok.pad_token_id if p.tok.pad_token_id is not None else 0
        batch = {"input_ids": torch.nn.functional.pad(batch["input_ids"], (0, extra), value=pad_id),
                 "attention_mask": torch.nn.functional.pad(batch["attention_mask"], (0, extra), value=0)}
    return {k: v.pin_memory() for k, v in batch.items()} if pin else batch
