"""Sentence -> token ids (optionally inside a prompt template) and padded batches: the ONE
implementation that training (``hardneg.train.model``) and evaluation (``Encoder``) share.

Two conventions, as in the references: training tokenizes the template's prefix, the sentence and
the suffix separately and concatenates them (PromptBERT/SNCSE train.py, ``joined=False``);
evaluation tokenizes the whole templated string (PromptBERT/SNCSE evaluation.py, ``joined=True``).
Either way a too-long row loses sentence tokens, never the template, so [MASK] survives, and
``max_length`` counts every token (special ones too). For a WordPiece (BERT) tokenizer the two
conventions give the same ids, since the template's quotes around ``{sentence}`` are word
boundaries (tests/test_encoders_tokenize.py); a BPE tokenizer may merge across them.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from hardneg.encoders.templates import MASK_PLACEHOLDER, split_template


class PromptTokenizer:
    """Tokenize sentences (optionally inside a prompt template) into padded tensors.

    ``setting`` names the max_length setting in errors (e.g. "train setting 'max_length'");
    ``joined`` picks the evaluation convention (the whole templated string tokenized at once).
    """

    def __init__(self, tokenizer, max_length: int, setting: str = "train setting 'max_length'",
                 joined: bool = False) -> None:
        self.tok = tokenizer
        self.max_length = max_length
        self.setting = setting
        self.joined = joined
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
            raise ValueError(f"{self.setting} ({self.max_length}) is too short for template {template!r}")
        if self.joined:
            return self._joined_ids(sentences, template, keep)
        # verbose=False: a sentence longer than the model is cut just below, no warning needed
        body = self.tok(list(sentences), add_special_tokens=False, verbose=False)["input_ids"]
        return [self._wrap(pre + b[:keep] + suf) for b in body]

    def _joined_ids(self, sentences: Sequence[str], template: str, keep: int) -> list[list[int]]:
        """The whole templated string at once; a too-long row loses the end of its sentence span."""
        prefix, suffix = split_template(template)
        prefix = prefix.replace(MASK_PLACEHOLDER, self.tok.mask_token)
        suffix = suffix.replace(MASK_PLACEHOLDER, self.tok.mask_token)
        rows = self.tok([prefix + s + suffix for s in sentences], add_special_tokens=True,
                        verbose=False)["input_ids"]
        pre, suf = self._template_ids(template)
        head, tail = len(self._lead) + len(pre), len(self._trail) + len(suf)
        return [r if len(r) <= self.max_length else r[: head + keep] + r[len(r) - tail :] for r in rows]

    def pad(self, rows: list[list[int]]) -> dict[str, torch.Tensor]:
        """Right-padded ``input_ids`` and ``attention_mask`` [len(rows), longest row]."""
        width = max(len(r) for r in rows)
        pad_id = self.tok.pad_token_id if self.tok.pad_token_id is not None else 0
        input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
        attention = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            input_ids[i, : len(r)] = torch.tensor(r, dtype=torch.long)
            attention[i, : len(r)] = 1
        return {"input_ids": input_ids, "attention_mask": attention}
