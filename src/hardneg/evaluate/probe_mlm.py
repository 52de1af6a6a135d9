"""Masked-LM word filling for the probe's insertion and substitution (OssCSE §3.2: "we use
Bert-base-uncased as the mask language model to replace or insert around 5% to 10% of the total
tokens").

Each sentence's masks are predicted together in one forward pass (batched over sentences); at
each mask the highest-scoring whole alphabetic word-piece is taken (no ``##`` continuation, no
special token, not the word it replaces). Argmax: deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


class MLMFiller:
    """Fill ``[MASK]`` slots of whitespace-word sentences with a masked LM."""

    def __init__(self, name: str, device: str | None = None, batch_size: int = 32, top_k: int = 50,
                 max_length: int = 256) -> None:
        from hardneg.models.load import load_masked_lm

        self.name = name
        self.tokenizer, self.model = load_masked_lm(name, setting="probe.mlm", device=device)
        self.batch_size, self.top_k, self.max_length = batch_size, top_k, max_length
        self.mask = self.tokenizer.mask_token
        if self.mask is None:
            raise ValueError(f"probe.mlm: '{name}' has no mask token")
        special = set(self.tokenizer.all_special_ids)
        vocab = self.tokenizer.convert_ids_to_tokens(list(range(len(self.tokenizer))))
        # Whole words only: a word-piece continuation or punctuation is not a word.
        self._ok = torch.tensor([(i not in special) and t.isalpha() for i, t in enumerate(vocab)])
        self._vocab = vocab

    @torch.inference_mode()
    def fill(self, masked: Sequence[str], avoid: Sequence[Sequence[str]]) -> list[list[str] | None]:
        """Words for every mask of every sentence (``avoid[i][j]``: the word mask j replaces, or
        "" for an insertion); None where a mask was truncated away or no word qualifies."""
        out: list[list[str] | None] = []
        dev = next(self.model.parameters()).device
        ok = self._ok.to(dev)
        for start in range(0, len(masked), self.batch_size):
            chunk = list(masked[start : start + self.batch_size])
            enc = self.tokenizer(chunk, padding=True, truncation=True, max_length=self.max_length,
                                 return_tensors="pt").to(dev)
            logits = self.model(**enc).logits.float()
            logits[..., : ok.numel()] = logits[..., : ok.numel()].masked_fill(~ok, float("-inf"))
            is_mask = enc["input_ids"] == self.tokenizer.mask_token_id
            top = logits.topk(self.top_k, dim=-1).indices  # [B, T, k]
            for b, text in enumerate(chunk):
                want = avoid[start + b]
                pos = is_mask[b].nonzero().flatten().tolist()
                if len(pos) != len(want):
                    out.append(None)  # a mask fell beyond max_length
                    continue
                words: list[str] | None = []
                for p, old in zip(pos, want):
                    cands = [self._vocab[i] for i in top[b, p].tolist()]
                    pick = next((c for c in cands if c.isalpha() and c.lower() != old.lower()), None)
                    if pick is None:
                        words = None
                        break
                    words.append(pick)
                out.append(words)
        return out
