"""The report's SAN examples as a reader checks them: the input as the MLM saw it with the masked
words marked, the negative with the substituted words marked, the kept/dropped counts, and a
warning when the MLM's held-out accuracy is too low for the examples to be representative, and
which optional decoding rules (``hardneg.augment.san.fill``) filled the masked positions.

Masked positions are token positions (``masked1..maskedK``, ``[CLS]`` = 0) of ``iter0``; they are
mapped to words by re-tokenizing ``iter0`` with the MLM's tokenizer (the shard's ``.json`` names
the MLM). Where the tokenizer cannot be loaded, or ``iter0`` does not re-tokenize to a sequence
covering the positions, the example says so instead of marking the wrong words.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

import polars as pl

from hardneg.augment.inspect import mark_changes
from hardneg.augment.san.key import OPTIONAL_RULES
from hardneg.shards import read_shard

# Below this held-out masked-token top-1 (%) most substitutions are frequency guesses, not the
# MLM's reading of the context (the unigram baseline scores ~5%): the examples do not show SAN.
MIN_HELDOUT_TOP1 = 30.0
MASKED_LEFT, MASKED_RIGHT = "«", "»"


def _sidecar(shard: Path) -> dict:
    side = shard.with_suffix(".json")
    if not side.is_file():
        return {}
    try:
        return json.loads(side.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{side}: invalid JSON ({exc})") from exc


def mark_masked(text: str, positions: Iterable[int], tokenizer) -> str | None:
    """``text`` (an ``iter0``) as words, each word with a masked word piece in «guillemets»;
    None when the positions fall outside its re-tokenization."""
    pos = set(positions)
    enc = tokenizer(text, add_special_tokens=True)
    words = enc.word_ids()
    if not pos or max(pos) >= len(words) or any(words[p] is None for p in pos):
        return None
    masked_words = {words[p] for p in pos}
    spans: dict[int, tuple[int, int]] = {}
    for i, w in enumerate(words):
        if w is None:
            continue
        start, end = enc.token_to_chars(i)
        lo, hi = spans.get(w, (start, end))
        spans[w] = (min(lo, start), max(hi, end))
    out, last = [], 0
    for w in sorted(spans):
        lo, hi = spans[w]
        out.append(text[last:lo])
        word = text[lo:hi]
        out.append(f"{MASKED_LEFT}{word}{MASKED_RIGHT}" if w in masked_words else word)
        last = hi
    out.append(text[last:])
    return "".join(out)


def _tokenizer(mlm: str | None):
    if not mlm:
        return None, "the shard's .json names no MLM"
    from hardneg.models.load import load_tokenizer

    try:
        return load_tokenizer(mlm, setting="san.mlm"), None
    except Exception as exc:  # noqa: BLE001 (any load failure: the examples say why, unmarked)
        return None, f"tokenizer of {mlm} not loadable ({str(exc).splitlines()[0]})"


def san_examples(shards: Iterable[str | Path], examples: int = 5) -> tuple[pl.DataFrame, list[str]]:
    """(examples, notes): the first ``examples`` kept rows of the SAN shards with their masked and
    substituted words marked, and sentences for the report (kept/dropped counts, the MLM's
    held-out accuracy and, below ``MIN_HELDOUT_TOP1``, that the examples are not representative)."""
    rows: list[dict] = []
    kept = total = 0
    reasons: dict[str, int] = {}
    heldout = mlm = None
    tokenizer = note = None
    rules: list[str] = []
    for path in map(Path, shards):
        frame = read_shard(path)
        if frame.height == 0 or "augmenter" not in frame.columns or frame["augmenter"][0] != "san":
            continue
        side = _sidecar(path)
        if mlm is None:
            mlm, heldout = side.get("mlm"), side.get("mlm_heldout")
            tokenizer, note = _tokenizer(mlm)
            config = side.get("config") or {}
            rules = [k for k, off in OPTIONAL_RULES.items() if config.get(k, off) != off]
        total += frame.height
        ok = frame.filter(pl.col("status") != "dropped")
        kept += ok.height
        for r, n in frame.filter(pl.col("status") == "dropped").group_by("reason").len().iter_rows():
            reasons[r] = reasons.get(r, 0) + n
        iters = sorted(int(c[6:]) for c in frame.columns if c.startswith("masked") and c[6:].isdigit())
        for row in ok.filter(pl.col("iter0").is_not_null()).head(max(0, examples - len(rows))).iter_rows(named=True):
            positions = sorted({p for k in iters for p in (row[f"masked{k}"] or [])})
            marked = mark_masked(row["iter0"], positions, tokenizer) if tokenizer else None
            rows.append({
                "id": row["id"],
                "input (masked words «marked»)": marked if marked is not None else f"{row['iter0']} (masked token positions {positions})",
                "negative (substituted words [marked])": mark_changes(row["iter0"], row["san"]),
                "masked tokens": len(positions),
            })
    schema = {"id": pl.Int64, "input (masked words «marked»)": pl.String,
              "negative (substituted words [marked])": pl.String, "masked tokens": pl.Int64}
    notes: list[str] = []
    if total:
        dropped = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items(), key=lambda x: (-x[1], x[0])))
        notes.append(f"SAN: {kept} of {total} rows kept ({100 * kept / total:.1f}%), {total - kept} dropped"
                     + (f" ({dropped})" if dropped else "") + ".")
    if heldout:
        notes.append(f"SAN MLM ({mlm}): held-out masked-token accuracy top-1 {heldout['top1']:.1f}%, top-5 "
                     f"{heldout['top5']:.1f}% (unigram-frequency baseline top-1 {heldout['unigram_top1']:.1f}%).")
        if heldout["top1"] < MIN_HELDOUT_TOP1:
            notes.append(f"The MLM's held-out top-1 is below {MIN_HELDOUT_TOP1:.0f}%: most substitutions are "
                         "frequency guesses, so these examples do not show what SAN does with a pretrained MLM.")
    if rules:
        notes.append(f"Decoding rules on ({', '.join(f'san.{r}' for r in rules)}): masked positions are filled "
                     "under constraints that SAN's plain argmax does not have (docs/deviations.md).")
    if note and rows:
        notes.append(f"Masked words are not marked: {note}.")
    return pl.DataFrame(rows, schema=schema), notes


def san_section(augment: Sequence[str | Path], examples: int) -> list[str]:
    """The SAN unit's section of the augmentation page (its ``report_section``): its notes, then
    its marked examples (none without SAN shards)."""
    from hardneg.report import render

    ex, notes = san_examples(augment, examples)
    if not notes and ex.height == 0:
        return []
    return ["<h3>SAN</h3>", *(f"<p>{html.escape(n)}</p>" for n in notes),
            render.table_html(ex, "SAN examples: the input as the MLM saw it (masked words «marked», "
                              "over all iterations) and the negative (words that differ [marked])",
                              "san-examples")]
