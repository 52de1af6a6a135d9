"""MER equals jiwer's on every pair (property tests), batched and in parallel."""

from __future__ import annotations

import jiwer
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hardneg.text import mer, mer_batch, words

# Small vocabularies make repeated words (and so ambiguous alignments) likely; odd whitespace
# (tabs, no-break spaces, runs of spaces) exercises jiwer's exact word splitting.
WORD = st.sampled_from(["a", "b", "c", "The", "the", "cat", "Cat", "dog", "é", "x.", "1"])
SEP = st.sampled_from([" ", " ", " ", "  ", "\t", "\u00a0", " \t ", "\n"])


@st.composite
def sentence(draw, min_words: int = 0) -> str:
    ws = draw(st.lists(WORD, min_size=min_words, max_size=12))
    out = draw(st.sampled_from(["", " ", "\t"]))
    for w in ws:
        out += w + draw(SEP)
    return out


def jiwer_mer(ref: str, hyp: str, lowercase: bool = True) -> float:
    if lowercase:
        ref, hyp = ref.lower(), hyp.lower()
    return float(jiwer.mer(ref, hyp))


@settings(max_examples=400, deadline=None)
@given(ref=sentence(), hyp=sentence(), lowercase=st.booleans())
def test_mer_equals_jiwer(ref, hyp, lowercase):
    assert mer(ref, hyp, lowercase=lowercase) == pytest.approx(
        jiwer_mer(ref, hyp, lowercase), abs=1e-12
    )


@settings(max_examples=100, deadline=None)
@given(ref=st.text(max_size=40), hyp=st.text(max_size=40))
def test_mer_equals_jiwer_on_arbitrary_text(ref, hyp):
    assert mer(ref, hyp) == pytest.approx(jiwer_mer(ref, hyp), abs=1e-12)


@settings(max_examples=50, deadline=None)
@given(pairs=st.lists(st.tuples(sentence(), sentence()), max_size=20))
def test_batch_equals_single(pairs):
    refs = [r for r, _ in pairs]
    hyps = [h for _, h in pairs]
    got = mer_batch(refs, hyps)
    assert got.dtype == np.float64 and got.shape == (len(pairs),)
    assert got.tolist() == [mer(r, h) for r, h in pairs]


def test_known_values():
    # OssCSE Example 1 (ii): inserting "not" into a 14-word sentence.
    ref = "Bryan Cranston will return as Walter White for Breaking Bad spin off, report claims."
    hyp = "Bryan Cranston will not return as Walter White for Breaking Bad spin off, report claims."
    assert mer(ref, hyp) == pytest.approx(1 / 15)
    assert mer("a b", "a b") == 0.0
    assert mer("", "") == 0.0
    assert mer("", "a") == 1.0
    assert mer("a", "") == 1.0
    assert mer("The Cat", "the cat") == 0.0
    assert mer("The Cat", "the cat", lowercase=False) == 1.0


def test_words_like_jiwer():
    assert words("  A  b\tc ") == ["a", "b\tc"]  # a lone tab stays inside a word, as in jiwer
    assert words("A  b \t c", lowercase=False) == ["A", "b", "c"]


def test_parallel_equals_serial():
    rng = np.random.default_rng(0)
    vocab = np.array(["a", "b", "c", "d", "e", "f"])
    refs = [" ".join(rng.choice(vocab, size=rng.integers(0, 8))) for _ in range(60_000)]
    hyps = [" ".join(rng.choice(vocab, size=rng.integers(0, 8))) for _ in range(60_000)]
    serial = mer_batch(refs, hyps, n_jobs=1)
    parallel = mer_batch(refs, hyps, n_jobs=2)
    assert np.array_equal(serial, parallel)
    sample = range(0, 60_000, 997)
    assert [serial[i] for i in sample] == pytest.approx(
        [jiwer_mer(refs[i], hyps[i]) for i in sample]
    )


def test_bad_input():
    with pytest.raises(ValueError, match="2 references but 1 hypotheses"):
        mer_batch(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="hypothesis 1 is NoneType"):
        mer_batch(["a", "b"], ["a", None])


def test_printable_text_has_no_whitespace_but_space():
    # words() relies on this: for printable text str.split() equals jiwer's splitting.
    import sys

    odd = [
        c
        for c in map(chr, range(sys.maxunicode + 1))
        if c.isspace() and c != " " and c.isprintable()
    ]
    assert odd == []
