"""HiCL's slicing of each sequence into segments of L tokens (HiCL §3.1, the "queue rule").

``seq_i`` (its sentence tokens, without special or prompt tokens) is cut into
``l_i = 1 + floor((|seq_i| - 1) / L)`` consecutive, non-overlapping segments: every full run of
L tokens is one segment and the remainder (1..L tokens) the last one, so
``seq_i = concat(seg_i1, ..., seg_il_i)``. Each segment is then wrapped like a whole sentence:
special tokens ([CLS] ... [SEP]) and, with SNCSE's prompt, the template around EACH segment
(HiCL §3.1: "add the prompt to each segment instead of the entire sequence").

Inputs are NOT truncated to the training ``max_length`` (32): only to ``max_tokens`` sentence
tokens (the paper's "sequence truncation size 512"), so a long sentence yields several segments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from hardneg.encoders.tokenize import PromptTokenizer


@dataclass
class Segments:
    """Token ids of every segment (wrapped), the sequence each belongs to, its sentence-token
    length (the pooling weight of HiCL §3.1), and per-batch counts of the fallbacks taken."""

    ids: list[list[int]]
    owner: list[int]
    lengths: list[int]
    counts: dict[str, int] = field(default_factory=dict)


def slice_lengths(n_tokens: int, seg_len: int) -> list[int]:
    """Segment lengths of a sequence of ``n_tokens`` (queue rule); 0 tokens -> one empty segment."""
    if seg_len < 1:
        raise ValueError(f"HiCL segment length must be >= 1, got {seg_len}")
    if n_tokens <= 0:
        return [0]
    full, rest = divmod(n_tokens, seg_len)
    return [seg_len] * full + ([rest] if rest else [])


def segment(
    prompt: PromptTokenizer, sentences: Sequence[str], template: str | None, seg_len: int, max_tokens: int,
) -> Segments:
    """Segments of every sentence, in sentence order. ``max_tokens`` bounds the sentence tokens
    of one sequence (special and template tokens not counted)."""
    tok = prompt.tok
    pre, suf = prompt._template_ids(template) if template is not None else ([], [])
    body = tok(list(sentences), add_special_tokens=False)["input_ids"]
    out = Segments(ids=[], owner=[], lengths=[],
                   counts={"hicl_single_segment": 0, "hicl_empty_sequence": 0, "hicl_truncated": 0})
    for i, b in enumerate(body):
        if len(b) > max_tokens:
            out.counts["hicl_truncated"] += 1
            b = b[:max_tokens]
        lens = slice_lengths(len(b), seg_len)
        if not b:
            out.counts["hicl_empty_sequence"] += 1  # encoded as special (+ prompt) tokens only
        elif len(lens) == 1:
            out.counts["hicl_single_segment"] += 1  # shorter than one segment: the whole sequence
        start = 0
        for n in lens:
            out.ids.append(prompt._wrap(pre + b[start : start + n] + suf))
            out.owner.append(i)
            out.lengths.append(n)
            start += n
    return out
