"""Token-id sequences of one chunk as flat arrays, and their batch encode / decode (SAN host side).

A chunk's sentences live in one flat ``int64`` array with row offsets (``Ragged``), so the
per-iteration bookkeeping of mask-predict is numpy over the chunk instead of Python per sentence,
and the arrays pickle cheaply to a worker process. Decoding a WordPiece (BERT) vocabulary is a
table lookup and one string join for the whole chunk: the same strings as the tokenizer's
``batch_decode(skip_special_tokens=True, clean_up_tokenization_spaces=True)`` (tested), at a
fraction of its cost.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass
class Ragged:
    """Rows of varying length: row i is ``values[offsets[i]:offsets[i + 1]]``."""

    values: np.ndarray
    offsets: np.ndarray  # int64, len(rows) + 1, offsets[0] == 0

    @classmethod
    def from_rows(cls, rows: Sequence) -> Ragged:
        if isinstance(rows, Ragged):
            return rows
        lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        values = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int64, count=int(offsets[-1]))
        return cls(values, offsets)

    @classmethod
    def from_lengths(cls, values: np.ndarray, lengths: np.ndarray) -> Ragged:
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return cls(values, offsets)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> np.ndarray:
        return self.values[self.offsets[i] : self.offsets[i + 1]]

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter(self.rows())

    def rows(self) -> list[np.ndarray]:
        """Row views (no copies)."""
        return np.split(self.values, self.offsets[1:-1]) if len(self) else []

    def take(self, rows: np.ndarray) -> Ragged:
        """The given rows, in that order."""
        rows = np.asarray(rows, dtype=np.int64)
        lengths = self.lengths[rows]
        out = Ragged.from_lengths(np.empty(0, dtype=self.values.dtype), lengths)
        pos = np.repeat(self.offsets[rows] - out.offsets[:-1], lengths) + np.arange(out.offsets[-1])
        out.values = self.values[pos]
        return out

    def slice(self, lo: int, hi: int) -> Ragged:
        """Rows lo..hi-1 (a view of the values)."""
        start, stop = self.offsets[lo], self.offsets[hi]
        return Ragged(self.values[start:stop], self.offsets[lo : hi + 1] - start)


def rust_tokenizer(tokenizer):
    """The ``tokenizers`` object behind a transformers fast tokenizer, else None."""
    fast = getattr(tokenizer, "_tokenizer", None)
    return fast if fast is not None and hasattr(fast, "decode_batch") else None


def encode(tokenizer, texts: list[str], max_length: int) -> tuple[Ragged, np.ndarray, np.ndarray]:
    """Token ids with specials, cut to ``max_length`` (keeping the final [SEP]); truncation flags;
    [UNK] counts (after the cut)."""
    fast = rust_tokenizer(tokenizer)
    if fast is not None and fast.truncation is None and fast.padding is None:
        # the same ids as tokenizer(texts) without the per-text Python wrapping; the Rust batch
        # call runs on all cores with the GIL released (so it overlaps the GPU)
        batch = getattr(fast, "encode_batch_fast", fast.encode_batch)  # same ids, no offsets computed
        enc = [e.ids for e in batch(texts, add_special_tokens=True)]
    else:
        enc = tokenizer(texts, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
    full = Ragged.from_rows(enc)
    lengths = full.lengths
    truncated = lengths > max_length
    if truncated.any():  # keep the first max_length - 1 pieces and the last one ([SEP])
        pos_in_row = np.arange(len(full.values)) - np.repeat(full.offsets[:-1], lengths)
        row_len = np.repeat(lengths, lengths)
        keep = (pos_in_row < max_length - 1) | (pos_in_row == row_len - 1)
        full = Ragged.from_lengths(full.values[keep], np.minimum(lengths, max_length))
    unk_id = tokenizer.unk_token_id  # a property that converts a token each time: read it once
    if unk_id is None or not len(full):
        unk = np.zeros(len(full), dtype=np.int64)
    else:
        row = np.repeat(np.arange(len(full)), full.lengths)
        unk = np.bincount(row[full.values == unk_id], minlength=len(full))
    return full, truncated, unk


class WordPieceDecoder:
    """``batch_decode(skip_special_tokens=True, clean_up_tokenization_spaces=True)`` of a WordPiece
    tokenizer as table lookups: special tokens dropped, the first kept token as is, every later one
    with its ``##`` prefix removed or a space before it, the decoder's per-token clean-up, then the
    tokenizer's clean-up on the joined text (tokenizers' ``decoders::WordPiece`` and transformers'
    ``clean_up_tokenization``). Every chunk's rows are joined into one string with newlines between
    them (no token contains one; checked) and cleaned in one pass: no clean-up pattern contains a
    newline, so none matches across rows."""

    def __init__(self, tokenizer) -> None:
        fast = rust_tokenizer(tokenizer)
        dec = fast.decoder
        prefix, cleanup = dec.prefix, dec.cleanup
        size = fast.get_vocab_size(with_added_tokens=True)
        tokens = [fast.id_to_token(i) or "" for i in range(size)]
        if any("\n" in t for t in tokens):
            raise ValueError("a token contains a newline")
        special = np.zeros(size, dtype=bool)
        for i, tok in fast.get_added_tokens_decoder().items():
            if not tok.special:  # tokenizers decodes non-special added tokens on their own
                raise ValueError("non-special added token")
            special[i] = True
        first = [self._clean(t, cleanup) for t in tokens]
        later = [self._clean(t[len(prefix):] if t.startswith(prefix) else " " + t, cleanup) for t in tokens]
        self.table = np.array(first + later + ["\n"], dtype=object)  # [first | later | row end]
        self.size = size
        self.special = special
        self.clean_up = tokenizer.clean_up_tokenization

    @staticmethod
    def _clean(token: str, cleanup: bool) -> str:
        if not cleanup:
            return token
        return (token.replace(" .", ".").replace(" ?", "?").replace(" !", "!").replace(" ,", ",")
                .replace(" ' ", "'").replace(" n't", "n't").replace(" 'm", "'m").replace(" do not", " don't")
                .replace(" 's", "'s").replace(" 've", "'ve").replace(" 're", "'re"))  # fmt: skip

    def __call__(self, seqs: Ragged) -> list[str]:
        n = len(seqs)
        if n == 0:
            return []
        vals = seqs.values
        if len(vals) and (vals.min() < 0 or vals.max() >= self.size):
            raise ValueError("token id outside the vocabulary")
        row = np.repeat(np.arange(n), seqs.lengths)
        kept = ~self.special[vals]
        ids, row = vals[kept], row[kept]
        first = np.ones(len(ids), dtype=bool)
        first[1:] = row[1:] != row[:-1]
        idx = ids + np.where(first, 0, self.size)
        # a row-end marker after each row's last kept token (rows with none: their own marker)
        ends = np.bincount(row, minlength=n).cumsum()
        idx = np.insert(idx, ends, 2 * self.size)
        text = self.clean_up("".join(self.table[idx].tolist()))
        return text.split("\n")[:n]


_DECODERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # tokenizer -> its table decoder


def table_decoder(tokenizer) -> WordPieceDecoder | None:
    """The tokenizer's table decoder (built once), or None where it would not be exact."""
    if tokenizer not in _DECODERS:
        _DECODERS[tokenizer] = _wordpiece_decoder(tokenizer)
    return _DECODERS[tokenizer]


def decode(tokenizer, seqs) -> list[str]:
    """Texts of token-id rows: what ``tokenizer.batch_decode(rows, skip_special_tokens=True,
    clean_up_tokenization_spaces=True)`` returns."""
    seqs = Ragged.from_rows(seqs)
    fastest = table_decoder(tokenizer)
    if fastest is not None:
        return fastest(seqs)
    rows = [r.tolist() for r in seqs.rows()]
    fast = rust_tokenizer(tokenizer)
    if fast is not None and type(fast.model).__name__ == "WordPiece":
        texts = fast.decode_batch(rows, skip_special_tokens=True)
        return [tokenizer.clean_up_tokenization(t) for t in texts]
    return tokenizer.batch_decode(rows, skip_special_tokens=True, clean_up_tokenization_spaces=True)


def _wordpiece_decoder(tokenizer) -> WordPieceDecoder | None:
    """The table decoder where it reproduces the tokenizer exactly (a fast WordPiece tokenizer whose
    decoder is tokenizers' WordPiece and whose clean-up is on), else None."""
    fast = rust_tokenizer(tokenizer)
    if fast is None or type(fast.model).__name__ != "WordPiece" or type(fast.decoder).__name__ != "WordPiece":
        return None
    try:
        return WordPieceDecoder(tokenizer)
    except (ValueError, AttributeError):
        return None
