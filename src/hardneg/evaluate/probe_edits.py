"""Word-level edits for the transformation probe (OssCSE §3.1-3.2): deletion, insertion,
substitution, random.

OssCSE §3.2: "For the insertions and substitutions, we use Bert-base-uncased as the mask language
model to replace or insert around 5% to 10% of the total tokens. For deletion, we randomly remove
one word in the sentence. We simply take another sentence in these sentences for the random
transformation." We follow that, on whitespace words (punctuation glued to a word stays in place):

* deletion: one random word that contains a letter;
* insertion / substitution: ``ceil(rate * words)`` positions (rate 0.1 by default, at least one);
  the new words come from a masked LM when one is given (the paper's choice; all masks of a
  sentence are predicted in one forward pass), otherwise insertion uses a fixed list of
  meaning-preserving fillers and substitution a random word of the probe set's own vocabulary
  (no MLM: the meaning is then *not* kept; the summary names the source used);
* random: another sentence of the probe set.

Every choice is drawn from ``numpy.random.default_rng((seed, sentence id, kind))``, so a sentence's
edits do not depend on the order, the batch or the other sentences (except ``random``, which picks
from the set).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

KINDS = ("deletion", "insertion", "substitution", "random")
_KIND_CODE = {k: i for i, k in enumerate(KINDS)}
# Fillers that rarely change a sentence's meaning (used for insertion when no MLM is given).
FILLERS = ("also", "really", "indeed", "actually", "still", "certainly", "just", "even")
_CORE = re.compile(r"^(\W*)(.*?)(\W*)$", re.DOTALL)
_HAS_LETTER = re.compile(r"[^\W\d_]")


@dataclass
class Edit:
    """One transformed sentence, or None with a reason; ``detail`` says what was changed."""

    text: str | None
    reason: str | None = None
    detail: str | None = None


def rng_for(seed: int, sentence_id: int, kind: str) -> np.random.Generator:
    """The generator of one (seed, sentence id, kind): independent of order and batching."""
    return np.random.default_rng([int(seed), int(sentence_id), _KIND_CODE[kind]])


def split_core(word: str) -> tuple[str, str, str]:
    """``'"claims.'`` -> (``'"'``, ``'claims'``, ``'.'``): leading punctuation, core, trailing."""
    m = _CORE.match(word)
    assert m is not None  # the pattern matches every string
    return m.group(1), m.group(2), m.group(3)


def _like_case(new: str, old: str) -> str:
    if old[:1].isupper():
        return new[:1].upper() + new[1:]
    return new


def n_edits(n_words: int, rate: float) -> int:
    """Positions to insert/substitute: ``ceil(rate * words)``, at least 1 (OssCSE: 5-10%)."""
    return max(1, math.ceil(rate * n_words - 1e-9))


def letter_positions(words: Sequence[str]) -> list[int]:
    return [i for i, w in enumerate(words) if _HAS_LETTER.search(split_core(w)[1] or "")]


def delete_one(text: str, seed: int, sentence_id: int) -> Edit:
    """Remove one random word (one with a letter in it) — OssCSE §3.2 deletion."""
    words = text.split()
    cand = letter_positions(words)
    if len(words) < 2 or not cand:
        return Edit(None, "fewer than 2 words" if len(words) < 2 else "no word with a letter")
    i = int(cand[rng_for(seed, sentence_id, "deletion").integers(len(cand))])
    _, _, post = split_core(words[i])
    rest = words[:i] + words[i + 1 :]
    # Keep the sentence's final punctuation if it sat on the deleted word ("claims." -> "report.").
    if post and i == len(words) - 1 and rest:
        rest[-1] = rest[-1] + post
    if i == 0 and words[0][:1].isupper() and rest and not rest[0][:1].isupper():
        rest[0] = rest[0][:1].upper() + rest[0][1:]
    return Edit(" ".join(rest), detail=f"deleted word {i}: {words[i]!r}")


def plan_insertion(text: str, seed: int, sentence_id: int, rate: float) -> tuple[list[str], list[int]] | Edit:
    """(words, sorted slots): a new word goes before ``words[slot]`` (slot == len: at the end,
    before final punctuation is not attempted)."""
    words = text.split()
    if not words:
        return Edit(None, "empty sentence")
    k = min(n_edits(len(words), rate), len(words))
    rng = rng_for(seed, sentence_id, "insertion")
    # Slots 1..len-1: never before the first word (keeps its capital) nor after the last (its '.').
    slots = list(range(1, len(words))) or [len(words)]
    chosen = sorted(int(s) for s in rng.choice(slots, size=min(k, len(slots)), replace=False))
    return words, chosen


def plan_substitution(text: str, seed: int, sentence_id: int, rate: float) -> tuple[list[str], list[int]] | Edit:
    """(words, sorted positions of words whose letter core is replaced)."""
    words = text.split()
    cand = letter_positions(words)
    if not cand:
        return Edit(None, "no word with a letter" if words else "empty sentence")
    k = min(n_edits(len(words), rate), len(cand))
    rng = rng_for(seed, sentence_id, "substitution")
    return words, sorted(int(i) for i in rng.choice(cand, size=k, replace=False))


def apply_insertion(words: list[str], slots: list[int], new: Sequence[str]) -> str:
    out = list(words)
    for slot, w in sorted(zip(slots, new), reverse=True):
        out.insert(slot, w)
    return " ".join(out)


def apply_substitution(words: list[str], positions: list[int], new: Sequence[str]) -> str:
    out = list(words)
    for i, w in zip(positions, new):
        pre, core, post = split_core(out[i])
        out[i] = pre + _like_case(w, core) + post
    return " ".join(out)


def filler_words(seed: int, sentence_id: int, k: int) -> list[str]:
    """Fillers for insertion without an MLM (a second stream of the insertion generator)."""
    rng = np.random.default_rng([int(seed), int(sentence_id), _KIND_CODE["insertion"], 1])
    return [FILLERS[int(j)] for j in rng.integers(len(FILLERS), size=k)]


def vocabulary(texts: Sequence[str]) -> list[str]:
    """Sorted lower-case alphabetic words of the probe set (substitution without an MLM)."""
    vocab = set()
    for t in texts:
        for w in t.split():
            core = split_core(w)[1].lower()
            if core.isalpha():
                vocab.add(core)
    return sorted(vocab)


def vocab_words(vocab: Sequence[str], seed: int, sentence_id: int, olds: Sequence[str]) -> list[str] | None:
    """A random vocabulary word per position, different from the word it replaces."""
    rng = np.random.default_rng([int(seed), int(sentence_id), _KIND_CODE["substitution"], 1])
    out = []
    for old in olds:
        old = split_core(old)[1].lower()
        pool = len(vocab)
        if pool == 0 or (pool == 1 and vocab[0] == old):
            return None
        w = vocab[int(rng.integers(pool))]
        while w == old:
            w = vocab[int(rng.integers(pool))]
        out.append(w)
    return out


def random_partner(index: int, n: int, seed: int, sentence_id: int) -> int | None:
    """Index of another sentence of an ``n``-sentence set for sentence ``index`` (never itself)."""
    if n < 2:
        return None
    off = 1 + int(rng_for(seed, sentence_id, "random").integers(n - 1))
    return (index + off) % n
