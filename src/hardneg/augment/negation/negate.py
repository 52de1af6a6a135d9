"""Soft negatives by negation (OssCSE §4 Step 1; SNCSE's rule, which OssCSE and SAN both use).

``rules: sncse`` (default) is Sense-GVT/SNCSE ``generate_soft_negative_samples.convert_to_negation``
on the same spaCy parse, token for token, over every token of the (stripped) text:

1. the first token whose text is exactly "not" is removed                       -> rule ``remove_not``;
2. else the first token whose dep is aux/auxpass/ROOT decides: an aux/auxpass gets "not" after it
   -> ``aux``; the ROOT gets "not" after it when its lower-cased text is one of am, is, was, are,
   were (``copula``) or can, could, will, would, shall, should, may, must, might (``modal``);
   VBP/VBZ/VBD ROOTs become "do/does/did not" + lemma -> ``do_support``;
3. anything else: "Not" is put first -> ``prefix_not``.
No row is dropped for its content (SNCSE negates every line); only empty text is.
The reference joins its tokens with single spaces ("winners ."); ``spacing: original`` (default)
renders the same token sequence with each token's own whitespace, ``spacing: joined`` gives the
reference's string byte for byte.

``rules: root`` is hardneg's earlier variant, at the ROOT of the first sentence:

1. already negated ("not"/"n't" in the sentence): ``remove`` it or ``skip`` the row;
2. an aux/auxpass child before the ROOT: "not" after the first one     -> rule ``aux``;
3. ROOT is a modal (MD): "not" after it                                -> rule ``modal``;
4. ROOT is a copula (lemma "be"): "not" after it                       -> rule ``copula``;
5. ROOT tagged VBZ/VBP/VBD: "does/do/did not" + lemma                  -> rule ``do_support``;
6. anything else: the ``fallback`` — a "Not" prefix, status ``substituted`` with the
   reason, or ``drop`` with the reason; plus drop filters (questions, non-English, max_chars).

``extra_negators`` (OssCSE Appendix B: never, neither) makes more words count as an existing
negation to remove, in both modes. Edits are made on spaCy token offsets and each token's own
``whitespace_``, so the rest of the sentence keeps its casing, spacing and punctuation.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from hardneg.config import negation_rule_error

log = logging.getLogger(__name__)

AUGMENTER = "negation"
RULE_SETS = ("sncse", "root")
RULES = ("remove_not", "aux", "modal", "copula", "do_support", "prefix_not")
NEGATORS = {"not", "n't", "n’t"}  # rules: root — "n't" is the same word as "not"
DO_FORMS = {"VBZ": "does", "VBP": "do", "VBD": "did"}
# SNCSE's special_words, split by the rule name we record (the reference treats them alike).
SNCSE_COPULAS = ("am", "is", "was", "are", "were")
SNCSE_MODALS = ("can", "could", "will", "would", "shall", "should", "may", "must", "might")
# spaCy splits contractions: "can't" -> "ca" + "n't"; dropping "n't" must restore the full word.
_CONTRACTION_STEMS = {"ca": "can", "wo": "will", "sha": "shall", "ai": "is"}


@dataclass(frozen=True)
class NegationConfig:
    """Settings of the ``negation`` config section (defaults = SNCSE's reference rule)."""

    spacy_model: str = "en_core_web_sm"
    rules: str = "sncse"  # sncse (SNCSE convert_to_negation) | root (hardneg's ROOT variant)
    extra_negators: tuple[str, ...] = ()  # words removed like "not" (OssCSE App. B: never, neither)
    spacing: str = (
        "original"  # original (token whitespace kept) | joined (SNCSE " ".join, byte-exact)
    )
    already_negated: str = "remove"  # root: remove the "not" (SNCSE) | skip
    fallback: str = "prefix"  # root: prefix (SNCSE "Not ...") | drop
    questions: str = "negate"  # root: negate | drop
    max_chars: int = 1000  # root
    min_ascii_letters: float = 0.5  # root: share of letters that are ASCII; below -> "non-English"
    batch_size: int = 256
    n_process: int = 1

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> NegationConfig:
        d = dict(d or {})
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(
                f"negation: unknown setting(s) {', '.join(unknown)} (allowed: {', '.join(sorted(known))})"
            )
        return cls(**d)

    def __post_init__(self) -> None:
        extra = self.extra_negators or ()
        if isinstance(extra, str) or not all(isinstance(w, str) and w.strip() for w in extra):
            raise ValueError(f"negation.extra_negators: a list of words, got {extra!r}")
        object.__setattr__(self, "extra_negators", tuple(w.strip().lower() for w in extra))
        for name, allowed in (
            ("rules", RULE_SETS),
            ("spacing", ("original", "joined")),
            ("already_negated", ("remove", "skip")),
            ("fallback", ("prefix", "drop")),
            ("questions", ("negate", "drop")),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"negation.{name}: {getattr(self, name)!r} is not one of {allowed}"
                )
        if self.batch_size < 1 or self.n_process < 1 or self.max_chars < 1:
            raise ValueError("negation: batch_size, n_process and max_chars must be >= 1")
        if err := negation_rule_error(asdict(self)):
            raise ValueError(err)

    def provenance(self) -> dict[str, Any]:
        """What made a negation shard (its sidecar JSON): training checks ``rules`` against its own."""
        return {
            "rules": self.rules,
            "extra_negators": list(self.extra_negators),
            "spacing": self.spacing,
            "spacy_model": self.spacy_model,
        }


@dataclass
class Negated:
    """One result: ``negation`` is None exactly when ``status`` is "dropped"."""

    negation: str | None
    status: str  # ok | substituted | dropped
    rule: str | None
    reason: str | None = None
    tokens: list[str] | None = None  # rules: sncse — the reference's token list after the edit


@dataclass
class _Edit:
    # Token-level edits: replace token i's text/whitespace, insert after token i, delete token i.
    replace: dict[int, tuple[str, str]] = field(default_factory=dict)
    insert_after: dict[int, str] = field(default_factory=dict)
    delete: set[int] = field(default_factory=set)
    # tokens replaced by words ("does not be"): kept apart from glued neighbours
    pad: set[int] = field(default_factory=set)


def load_nlp(model: str):
    """Load a spaCy pipeline with only what negation needs (tagger, parser, lemmatizer)."""
    import spacy

    try:
        return spacy.load(model, disable=["ner"])
    except OSError:
        from hardneg.models.spacy_hint import missing_spacy_model

        raise ValueError(
            f"negation.spacy_model: cannot load spaCy model '{model}': "
            + missing_spacy_model(model, "negation.spacy_model", "--spacy-model")
        ) from None


def _match_case(word: str, like: str) -> str:
    """``word`` cased like ``like``: ALL CAPS, Capitalised, or as is."""
    if len(like) > 1 and like.isupper():
        return word.upper()
    if like[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def _render(doc, edit: _Edit) -> str:
    parts: list[str] = []  # alternating token text, whitespace after it
    for tok in doc:
        i = tok.i
        if i in edit.delete:
            # The predecessor takes the deleted token's trailing whitespace ("can|not| x" -> "can x").
            if parts:
                parts[-1] = tok.whitespace_
            continue
        text, ws = edit.replace.get(i, (tok.text, tok.whitespace_))
        if i in edit.pad:  # "It|s" -> "It does not be", not "Itdoes not be"
            if len(parts) >= 2 and not parts[-1] and parts[-2][-1:].isalnum():
                parts[-1] = " "
            nxt = doc[i + 1] if i + 1 < len(doc) else None
            if not ws and nxt is not None and nxt.text[:1].isalnum():
                ws = " "
        parts.append(text)
        if i in edit.insert_after:
            nxt = doc[i + 1] if i + 1 < len(doc) else None
            # "not" needs a space before it; after it, keep the token's own whitespace, or add one
            # when the next token is a word glued to this one.
            ws_after = ws or (" " if nxt is not None and nxt.text[:1].isalnum() else "")
            parts.append(" " + edit.insert_after[i])
            parts.append(ws_after)
        else:
            parts.append(ws)
    return "".join(parts)


def _ascii_letter_share(text: str) -> float:
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return 0.0
    return sum(c.isascii() for c in letters) / len(letters)


def precheck(text: Any, cfg: NegationConfig) -> str | None:
    """A reason to drop ``text`` before parsing, or None (rules: sncse drops only empty text)."""
    if not isinstance(text, str) or not text.strip():
        return "empty"
    if cfg.rules == "sncse":
        return None
    if len(text) > cfg.max_chars:
        return f"too long ({len(text)} chars > max_chars {cfg.max_chars})"
    if _ascii_letter_share(text) < cfg.min_ascii_letters:
        return "non-English (few ASCII letters)"
    return None


def looks_foreign(doc) -> bool:
    """Heuristic for Latin-script non-English: 6+ words, not one English stop word, and mostly
    lower-case (English titles and name lists, also stop-word free, are mostly capitalised)."""
    alpha = [t for t in doc if t.is_alpha]
    if len(alpha) < 6 or any(t.is_stop for t in alpha):
        return False
    return sum(t.text.islower() for t in alpha) * 2 >= len(alpha)


def _not_slot(root, target, sent) -> int:
    """Token after which "not" goes: ``target``, or the end of the subject when the subject
    follows a sentence-initial verb or the sentence is a question ("Is he here?" -> "Is he not
    here?"). Other inversions keep "not" at the verb: "Here is not the list of winners."."""
    subj = next((c for c in root.children if c.dep_ in ("nsubj", "nsubjpass", "expl")), None)
    if subj is None or subj.i < target.i:
        return target.i
    first = next((t for t in sent if not (t.is_space or t.is_punct)), target)
    if target.i == first.i or sent.text.rstrip().endswith("?"):
        return subj.right_edge.i
    return target.i


def negate_doc_sncse(doc, cfg: NegationConfig) -> Negated:
    """SNCSE's convert_to_negation on one parse: same token list, rendered per ``cfg.spacing``."""
    extra = set(cfg.extra_negators)
    words = [t.text for t in doc]
    edit = _Edit()
    # SNCSE: `if "not" in tokens` — the exact, lower-case token text
    hit = next((t for t in doc if t.text == "not" or t.lower_ in extra), None)
    if hit is not None:
        del words[hit.i]
        edit.delete.add(hit.i)
        rule = "remove_not"
    else:
        # SNCSE: the first aux/auxpass/ROOT in token order decides (over the whole text, not
        # only the ROOT's children)
        first = next((t for t in doc if t.dep_ in ("aux", "auxpass", "ROOT")), None)
        rule = "prefix_not"
        if first is not None and first.dep_ != "ROOT":
            rule = "aux"
        elif first is not None and first.text.lower() in SNCSE_COPULAS + SNCSE_MODALS:
            rule = "copula" if first.text.lower() in SNCSE_COPULAS else "modal"
        elif first is not None and first.tag_ in DO_FORMS:
            rule = "do_support"
        if rule in ("aux", "copula", "modal"):
            words[first.i] += " not"
            edit.insert_after[first.i] = "not"
        elif rule == "do_support":
            words[first.i] = f"{DO_FORMS[first.tag_]} not {first.lemma_}"
            edit.replace[first.i] = (words[first.i], first.whitespace_)
            edit.pad.add(first.i)
        else:
            words.insert(0, "Not")
            edit.replace[0] = ("Not " + doc[0].text, doc[0].whitespace_)
    text = " ".join(words) if cfg.spacing == "joined" else _render(doc, edit)
    return Negated(text, "ok", rule, None, words)


def negate_doc(doc, cfg: NegationConfig) -> Negated:
    """Apply the configured rules to one parsed text (see module docstring)."""
    if cfg.rules == "sncse":
        return negate_doc_sncse(doc, cfg)
    text = doc.text
    # The first sentence with a word in it (leading whitespace can form a "sentence" of its own).
    sent = next((s for s in doc.sents if any(not t.is_space for t in s)), doc[:])
    root = sent.root
    if cfg.questions == "drop" and text.rstrip().endswith("?"):
        return Negated(None, "dropped", None, "question")
    if looks_foreign(doc):
        return Negated(None, "dropped", None, "non-English (no English stop words)")
    edit = _Edit()

    negs = [t for t in doc if t.lower_ in NEGATORS or t.lower_ in cfg.extra_negators]
    if negs:
        if cfg.already_negated == "skip":
            return Negated(None, "dropped", None, "already negated")
        # Remove the negation of the ROOT if it has one, else the first one (SNCSE deletes "not").
        tok = next((t for t in negs if t.head.i == root.i), negs[0])
        edit.delete.add(tok.i)
        if tok.lower_ != "not" and tok.i > 0:  # "n't": restore "ca" -> "can", "wo" -> "will"
            prev = doc[tok.i - 1]
            stem = _CONTRACTION_STEMS.get(prev.lower_)
            if stem:
                edit.replace[prev.i] = (_match_case(stem, prev.text), prev.whitespace_)
        if tok.i == 0 and len(doc) > 1:  # "Not only ..." -> "Only ...": keep the capital
            nxt = doc[1]
            edit.replace[1] = (nxt.text[:1].upper() + nxt.text[1:], nxt.whitespace_)
        return Negated(_render(doc, edit), "ok", "remove_not")

    auxes = [
        c for c in root.children if c.dep_ in ("aux", "auxpass") and c.i < root.i and c.tag_ != "TO"
    ]
    if auxes:
        edit.insert_after[_not_slot(root, auxes[0], sent)] = "not"
        return Negated(_render(doc, edit), "ok", "aux")
    if root.tag_ == "MD":
        edit.insert_after[_not_slot(root, root, sent)] = "not"
        return Negated(_render(doc, edit), "ok", "modal")
    if root.lemma_.lower() == "be" and root.pos_ in ("AUX", "VERB"):
        edit.insert_after[_not_slot(root, root, sent)] = "not"
        return Negated(_render(doc, edit), "ok", "copula")
    if root.tag_ in DO_FORMS:
        do = _match_case(DO_FORMS[root.tag_], root.text)
        lemma = root.lemma_.lower() or root.lower_
        if root.text.isupper() and len(root.text) > 1:
            lemma, neg = lemma.upper(), "NOT"
        else:
            neg = "not"
            if root.text[:1].isupper() and root.i != sent.start:  # Title Case headline
                lemma = lemma[:1].upper() + lemma[1:]
        edit.replace[root.i] = (f"{do} {neg} {lemma}", root.whitespace_)
        edit.pad.add(root.i)
        return Negated(_render(doc, edit), "ok", "do_support")

    reason = f"no verb root ({root.tag_ or root.pos_})"  # few distinct reasons: groupable counts
    if cfg.fallback == "drop":
        return Negated(None, "dropped", None, reason)
    first = next(t for t in doc if not t.is_space)
    # Lower-case the old first word unless it is a name, "I" or an acronym.
    keep = (
        first.pos_ == "PROPN" or first.text == "I" or (first.text.isupper() and len(first.text) > 1)
    )
    head = first.text if keep else first.text[:1].lower() + first.text[1:]
    edit.replace[first.i] = ("Not " + head, first.whitespace_)
    return Negated(_render(doc, edit), "substituted", "prefix_not", reason)


def _over_limit(out: list, k: int, n: int, limit: int) -> bool:
    if n <= limit:
        return False
    log.warning("negation: row %d dropped: %d chars, over spaCy's max_length %d", k, n, limit)
    out[k] = Negated(None, "dropped", None, f"too long for spaCy ({n} chars > max_length {limit})")
    return True


def negate_texts(
    texts: Sequence[Any], cfg: NegationConfig, nlp=None, show_progress: bool = False
) -> list[Negated]:
    """Negate every text (order kept); rows that cannot be negated come back dropped with a reason."""
    out: list[Negated | None] = [None] * len(texts)
    todo: list[int] = []
    for k, t in enumerate(texts):
        why = precheck(t, cfg)
        if why:
            out[k] = Negated(None, "dropped", None, why)
        else:
            todo.append(k)
    if todo:
        nlp = nlp if nlp is not None else load_nlp(cfg.spacy_model)
        # SNCSE parses line.strip(); rules: root keeps the text as is (offsets, spacing)
        prep = str.strip if cfg.rules == "sncse" else str
        # spaCy refuses a text over nlp.max_length for the whole batch (error E088): drop the row
        limit = getattr(nlp, "max_length", None)
        if limit:
            todo = [k for k in todo if not _over_limit(out, k, len(prep(texts[k])), limit)]
        docs: Iterable = nlp.pipe(
            (prep(texts[k]) for k in todo), batch_size=cfg.batch_size, n_process=cfg.n_process
        )
        if show_progress:
            from tqdm import tqdm

            docs = tqdm(docs, total=len(todo), desc="negation", unit="sent")
        for k, doc in zip(todo, docs):
            try:
                out[k] = negate_doc(doc, cfg)
            except Exception as exc:  # noqa: BLE001 - one odd parse must not sink the shard: keep the reason
                log.warning("negation failed on row %d: %s", k, exc)
                out[k] = Negated(None, "dropped", None, f"error: {type(exc).__name__}: {exc}")
    return out  # type: ignore[return-value]


def negate_frame(
    frame: pl.DataFrame, cfg: NegationConfig, nlp=None, show_progress: bool = False
) -> pl.DataFrame:
    """A corpus shard (``id``, ``text``) -> a negation shard (contract columns, corpus order)."""
    for col in ("id", "text"):
        if col not in frame.columns:
            raise ValueError(
                f"negation: input shard has no '{col}' column (have: {', '.join(frame.columns)})"
            )
    texts = frame.get_column("text").to_list()
    results = negate_texts(texts, cfg, nlp=nlp, show_progress=show_progress)
    return pl.DataFrame(
        {
            "id": frame.get_column("id").cast(pl.Int64),
            "text": pl.Series("text", texts, dtype=pl.String),
            "status": pl.Series([r.status for r in results], dtype=pl.String),
            "reason": pl.Series([r.reason for r in results], dtype=pl.String),
            "augmenter": pl.Series([AUGMENTER] * len(results), dtype=pl.String),
            "negation": pl.Series([r.negation for r in results], dtype=pl.String),
            "rule": pl.Series([r.rule for r in results], dtype=pl.String),
        }
    )


def summarize(frame: pl.DataFrame) -> dict[str, Any]:
    """Counts per status, rule and reason; ``rows == ok + substituted + dropped``."""

    def counts(col: str) -> dict[str, int]:
        sub = frame.filter(pl.col(col).is_not_null()).group_by(col).len().sort(col)
        return {r[col]: int(r["len"]) for r in sub.iter_rows(named=True)}

    return {
        "rows": frame.height,
        "status": counts("status"),
        "rule": counts("rule"),
        "reason": counts("reason"),
    }


def shard_provenance(shard: str | Path) -> dict[str, Any]:
    """The sidecar JSON of a negation shard (``shard-NNN.json``: ``rules``, ``extra_negators``,
    ``spacing``, ``spacy_model``, counts). A shard written before the rule set was recorded has no ``rules``."""
    side = Path(shard).with_suffix(".json")
    try:
        meta = json.loads(side.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(
            f"negation shard {shard}: no sidecar {side} (which rules made it?)"
        ) from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"negation shard sidecar {side}: not JSON ({exc})") from None
    if "rules" not in meta:
        raise ValueError(
            f"negation shard {shard}: its sidecar {side} records no 'rules' (made before "
            "negation.rules existed); re-run the negate rule"
        )
    return meta

