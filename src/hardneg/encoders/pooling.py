"""Sentence representations from a transformer's outputs (SimCSE's poolers + PromptBERT's [MASK]).

All poolers are plain differentiable tensor ops, so the trainer uses the same code in its forward
pass as evaluation does.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

# SimCSE's pooler names (princeton-nlp/SimCSE models.py / evaluation.py) plus "mask" (PromptBERT/SNCSE).
POOLERS = ("cls", "cls_before_pooler", "avg", "avg_first_last", "avg_top2", "mask")
# Poolers that need every layer's hidden states (output_hidden_states=True).
NEEDS_HIDDEN_STATES = frozenset({"avg_first_last", "avg_top2"})


def masked_mean(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Mean over the non-padding positions of ``hidden`` [B, L, H]."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)


def _mask_positions(mask_index: torch.Tensor, batch: int, device: torch.device) -> torch.Tensor:
    if mask_index.dim() == 2:  # boolean/0-1 [B, L] marker of the [MASK] token
        if not bool((mask_index.sum(1) >= 1).all()):
            raise ValueError("pooler 'mask': a row has no [MASK] token")
        # The template's [MASK] is the last marked position of each row.
        positions = mask_index.shape[1] - 1 - mask_index.flip(1).to(torch.int64).argmax(1)
        return positions.to(device)
    if mask_index.dim() != 1 or mask_index.shape[0] != batch:
        raise ValueError(f"pooler 'mask': mask_index must be [B] positions or a [B, L] marker, got {tuple(mask_index.shape)}")
    return mask_index.to(device=device, dtype=torch.int64)


def pool(
    name: str,
    last_hidden_state: torch.Tensor,
    attention_mask: torch.Tensor,
    hidden_states: Sequence[torch.Tensor] | None = None,
    pooler_output: torch.Tensor | None = None,
    mask_index: torch.Tensor | None = None,
) -> torch.Tensor:
    """Sentence vectors [B, H] by pooler ``name`` (one of ``POOLERS``).

    - ``cls``: the model's pooler output (dense+tanh over [CLS]; SimCSE's supervised setting);
    - ``cls_before_pooler``: the raw [CLS] hidden state (SimCSE unsupervised evaluation);
    - ``avg``: mean of the last layer over real tokens;
    - ``avg_first_last``: mean of (first layer + last layer)/2 — SimCSE uses hidden_states[1],
      the first transformer layer, not the embeddings;
    - ``avg_top2``: mean of the last two layers averaged;
    - ``mask``: the last layer at the template's [MASK] position (PromptBERT/SNCSE).
    """
    if name == "cls":
        if pooler_output is None:
            raise ValueError("pooler 'cls' needs the model's pooler_output (the model has no pooler layer: use 'cls_before_pooler')")
        return pooler_output
    if name == "cls_before_pooler":
        return last_hidden_state[:, 0]
    if name == "avg":
        return masked_mean(last_hidden_state, attention_mask)
    if name in NEEDS_HIDDEN_STATES:
        if hidden_states is None or len(hidden_states) < 3:
            raise ValueError(f"pooler '{name}' needs all hidden states (run the model with output_hidden_states=True)")
        if name == "avg_first_last":
            mixed = (hidden_states[1] + hidden_states[-1]) / 2.0
        else:
            mixed = (hidden_states[-1] + hidden_states[-2]) / 2.0
        return masked_mean(mixed, attention_mask)
    if name == "mask":
        if mask_index is None:
            raise ValueError("pooler 'mask' needs mask_index (the [MASK] position of each row; use a prompt template)")
        pos = _mask_positions(mask_index, last_hidden_state.shape[0], last_hidden_state.device)
        rows = torch.arange(last_hidden_state.shape[0], device=last_hidden_state.device)
        return last_hidden_state[rows, pos]
    raise ValueError(f"unknown pooler {name!r} (known: {', '.join(POOLERS)})")
