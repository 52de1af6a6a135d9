"""Which vocabulary entries may fill a masked position: two optional decoding rules for a weak MLM.

SAN §3.1 and its reference code (bcai01/SAN ``corpus-handle/handle.py``, ``replace_with_mask``)
take the plain argmax over the vocabulary at each masked position. A weak MLM (the quick
experiment's bootstrap) then fills masked words with punctuation and with one frequent word side
by side ("the book book , , of"), outputs the quality filter drops. SAN masks meaning-bearing
words (POS importance, §3.1 Table 2), so for such an MLM two rules keep a substitution a word in
place; both are off by default (docs/deviations.md):

- ``same_kind``: a masked entry is replaced by an entry of its own kind: ASCII letters (an
  English word), other letters (other scripts, accents), digits or other (punctuation, symbols,
  mixed), each as a whole word or a ``##`` continuation piece;
- ``forbid_adjacent``: a masked entry may not be predicted as the entry before or after it; a run
  of adjacent masked positions is decided left to right, each position seeing its left
  neighbour's choice, so no masked position ends equal to a neighbour.
"""

from __future__ import annotations

import numpy as np

from hardneg.augment.san.lexicon import _continuation_prefix, special_ids, vocab_strings

_BODY = ("word", "letters", "number", "other")
KINDS = _BODY + tuple(f"{k} piece" for k in _BODY)
# an entry may be banned at a position as the original (forbid_original) and as its two neighbours
MIN_PER_KIND = 4


def vocab_kinds(tokenizer, size: int) -> np.ndarray:
    """Kind (index into ``KINDS``) of each of the ``size`` vocabulary ids; ids beyond the tokenizer
    are 'other'. Needs a WordPiece vocabulary (``##`` continuation pieces)."""
    prefix = _continuation_prefix(tokenizer)
    if prefix is None:
        raise ValueError(f"san.same_kind needs a WordPiece tokenizer ('##' continuation pieces); "
                         f"{type(tokenizer).__name__} has none")
    strings = vocab_strings(tokenizer)[:size]
    kinds = np.full(size, KINDS.index("other"), dtype=np.int64)
    for i, s in enumerate(strings):
        piece = s.startswith(prefix) and len(s) > len(prefix)
        body = s[len(prefix):] if piece else s
        kinds[i] = _body_kind(body) + len(_BODY) * piece
    specials = [i for i in special_ids(tokenizer) if i < size]
    usable = np.ones(size, dtype=bool)
    usable[specials] = False
    usable[len(tokenizer):] = False
    counts = np.bincount(kinds[usable], minlength=len(KINDS))
    thin = [f"{KINDS[k]} ({n})" for k, n in enumerate(counts) if 0 < n < MIN_PER_KIND]
    if thin:
        raise ValueError(f"san.same_kind: the vocabulary has too few entries of kind {', '.join(thin)} "
                         f"to ban the original and both neighbours (needs {MIN_PER_KIND})")
    return kinds


def _body_kind(body: str) -> int:
    if body.isalpha():
        return 0 if body.isascii() else 1
    return 2 if body.isdigit() else 3


def adjacent(ids: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For the masked positions of an equal-length batch, in row-major order: the left neighbour's
    id (-1 when that neighbour is masked too), the right neighbour's id (-1 when masked) and the
    position's index in its run of adjacent masked positions (0 = the run's first).

    Special tokens ([CLS] first, [SEP] last) are never masked, so every masked position has both
    neighbours."""
    rows, cols = np.nonzero(mask)
    left_masked = mask[rows, cols - 1]
    right_masked = mask[rows, cols + 1]
    left = np.where(left_masked, -1, ids[rows, cols - 1])
    right = np.where(right_masked, -1, ids[rows, cols + 1])
    i = np.arange(len(rows))
    start = np.where(left_masked, 0, i)  # a run starts where the left neighbour is not masked
    run = i - np.maximum.accumulate(start) if len(i) else i
    return left, right, run
