"""HiCL's forward pass: every view is segmented (``hardneg.train.segments``), all
segments of the step go through the encoder in ONE padded pass (each attends only within its
segment: O(L^2) per segment instead of O(n^2) per sequence), then each view's sequence vectors
are the length-weighted means of its segments (``objectives.hicl.aggregate``)."""

from __future__ import annotations

import torch

from hardneg.train.model import ContrastiveEncoder
from hardneg.train.objectives.hicl import aggregate
from hardneg.train.segments import segment


def hicl_views(encoder: ContrastiveEncoder, groups: list[tuple[str, list[str], str | None]],
               seg_len: int, max_tokens: int) -> dict[str, torch.Tensor]:
    """Sequence vectors per view of ``groups`` ((view, sentences, template) from
    ``hardneg.train.views.views_pass``, anchor first) plus the anchor and positive segment
    vectors, their owners and the batch's segmentation counts for HiCL Eq. 2."""
    p = encoder.prompt
    segs = [(name, len(sents), segment(p, sents, t, seg_len, max_tokens)) for name, sents, t in groups]
    rows = [r for _, _, s in segs for r in s.ids]
    max_pos = getattr(encoder.backbone.config, "max_position_embeddings", None)
    if max_pos and max(len(r) for r in rows) > max_pos:
        raise ValueError(f"train setting 'method_settings.hicl.segment_length' ({seg_len}): a segment with its special and prompt "
                         f"tokens has {max(len(r) for r in rows)} tokens, more than the model's {max_pos} positions")
    batch = {k: v.to(encoder.device) for k, v in p.pad(rows).items()}
    vecs = encoder.embed(batch, use_mlp=True)
    out: dict[str, torch.Tensor] = {}
    start = 0
    for name, n_seq, s in segs:
        part = vecs[start : start + len(s.ids)]
        start += len(s.ids)
        owner = torch.tensor(s.owner, dtype=torch.long, device=vecs.device)
        lengths = torch.tensor(s.lengths, dtype=torch.long, device=vecs.device)
        out[name] = aggregate(part, owner, lengths, n_seq).to(vecs.dtype)
        if name in ("anchor", "positive"):
            out[f"hicl_seg_{name}"] = part
        if name == "anchor":
            out["hicl_seg_owner"] = owner
            out["hicl_counts"] = torch.tensor([s.counts[k] for k in sorted(s.counts)], dtype=torch.long)
    return out
