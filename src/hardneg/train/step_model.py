"""One training step's model and loss (SimCSE's ``models.py`` read: pooler + forward + loss in one
place): ``StepModel`` runs every forward pass of a step in ONE call (what DDP wraps), ``Objective``
turns its embeddings into the configured method's loss."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from hardneg.train import distributed as D
from hardneg.train import (
    replacement_terms,  # HNCSE, HiCL, SynCSE
    views,
)
from hardneg.train.hicl_views import hicl_views
from hardneg.train.model import ContrastiveEncoder, dropout_rate
from hardneg.train.objectives import (
    BidirectionalMargin,
    HardNegativeInfoNCE,
    HiNCE,
    InfoNCE,
    ListMLESAN,
    RankingConsistency,
    RankingDistillation,
    RecallLoss,
    TwoWayMaxMargin,
)
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
        if self.s.hicl:  # HiCL: segments encoded separately, views aggregated
            return hicl_views(self.encoder, views.views_pass(self.s, texts, extra), self.s.hicl_segment_length,
                              self.s.hicl_max_tokens)
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
        if self.s.hicl:  # HiCL tokenizes its segments itself, in forward
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


class Objective(nn.Module):
    """The configured loss: InfoNCE or HiNCE over the global batch, plus weighted BML (SNCSE),
    two-way margin + recall (OssCSE: L = lc + lr + lambda*lm), RankCSE's consistency and ranking
    distillation and ListMLE+SAN (SAN Eq. 6: beta*Lcons + gamma*LListMLE + LHiNCE + lambda*LListMLE+SAN;
    Eq. 7: mu*LBML + lambda*LListMLE + zeta*LHiNCE + beta*LListMLE+SAN, zeta = 1)."""

    def __init__(self, s: TrainSettings, encoder: ContrastiveEncoder) -> None:
        super().__init__()
        self.s = s
        self.contrast = (HiNCE(s.temperature, s.tau2) if s.negatives == "san"
                         else HardNegativeInfoNCE(s.temperature, s.hard_negative_weight or 0.0) if s.negatives == "mined"
                         else InfoNCE(s.temperature))
        self.bml = BidirectionalMargin(s.bml_alpha, s.bml_beta) if s.bml_weight > 0 else None
        self.margin = TwoWayMaxMargin(s.margin_alpha, s.margin_beta) if s.margin_weight > 0 else None
        ties = s.teacher_precision == "fp16"  # fp16 teacher scores tie: the reference shuffles them
        self.listmle = ListMLESAN(s.listmle_tau, s.listmle_eps, ties) if s.listmle_weight > 0 else None
        self.consistency = (RankingConsistency(s.temperature, s.consistency_form)
                            if s.consistency_weight > 0 else None)
        self.distill = (RankingDistillation(s.distill_tau, s.distill_loss, s.listmle_eps, ties)
                        if s.distill_weight > 0 else None)
        self.methods = replacement_terms.ReplacementTerms.build(s)  # HNCSE / HiCL / SynCSE term, else None
        # recall loss over the backbone's weights (the pretrained model's parameters, OssCSE Eq. 4)
        self.recall_params = [p for p in encoder.backbone.parameters() if p.requires_grad]
        self.recall = (RecallLoss([(n, p) for n, p in encoder.backbone.named_parameters() if p.requires_grad],
                                  s.recall_gamma)
                       if s.recall_gamma > 0 else None)

    def forward(self, emb: dict[str, torch.Tensor], info: D.DistInfo,
                teacher_sims: dict[str, torch.Tensor] | None = None) -> tuple[torch.Tensor, dict[str, float]]:
        """(loss to back-propagate, logged components). Global-batch terms are scaled by the
        world size so that DDP's gradient averaging gives the single-device gradient."""
        g1 = D.gather_with_grad(emb["anchor"], info)
        g2 = D.gather_with_grad(emb["positive"], info)
        parts: dict[str, torch.Tensor] = {}
        if self.s.negatives == "san":
            gs = D.gather_with_grad(emb["san"], info)
            parts["hince"] = self.contrast(g1, g2, gs)
        elif self.s.negatives == "mined":  # supervised SimCSE with the mined neighbour as hard negative
            parts["infonce_hard_negative"] = self.contrast(g1, g2, D.gather_with_grad(emb["mined"], info))
        elif self.methods is not None:  # HNCSE, HiCL, SynCSE: the first part replaces InfoNCE
            parts.update(self.methods(emb, g1, g2, info))
        else:
            parts["infonce"] = self.contrast(g1, g2)
        global_terms = parts[next(iter(parts))]
        if self.listmle is not None:
            parts["listmle_san"] = self.listmle(g1, gs, teacher_sims["san"])
            global_terms = global_terms + self.s.listmle_weight * parts["listmle_san"]
        if self.consistency is not None:
            parts["consistency"] = self.consistency(g1, g2)
            global_terms = global_terms + self.s.consistency_weight * parts["consistency"]
        if self.distill is not None:
            parts[f"distill_{self.s.distill_loss}"] = self.distill(g1, g2, teacher_sims["distill"])
            global_terms = global_terms + self.s.distill_weight * parts[f"distill_{self.s.distill_loss}"]
        local_terms = torch.zeros((), device=g1.device)
        if self.bml is not None:
            parts["bml"] = self.bml(emb["anchor"], emb["positive"], emb["negation"])
            local_terms = local_terms + self.s.bml_weight * parts["bml"]
        if self.margin is not None:
            parts["margin"] = self.margin(emb["anchor"], emb["paraphrase"], emb["negation"])
            local_terms = local_terms + self.s.margin_weight * parts["margin"]
        if self.recall is not None and self.s.recall_form == "coupled":  # OssCSE Eq. 5: L = lc + lr + lambda*lm
            parts["recall"] = self.recall(self.recall_params)
            local_terms = local_terms + parts["recall"]
        total = global_terms + local_terms
        backward = global_terms * info.world_size + local_terms
        # detached tensors: the trainer reads them back only at logging steps (no per-step sync)
        logged = {k: v.detach() for k, v in parts.items()}
        logged["loss"] = total.detach()
        return backward, logged
