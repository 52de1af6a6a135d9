"""Training-corpus preparation: normalise, drop (with reasons), cap, assign ids, shard.

Sentence ids are the 0-based line numbers of the source file, so they are stable under any cap,
shard size or de-duplication setting, and every later shard joins back to its source line.
"""

from __future__ import annotations

import logging
import unicodedata
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import polars as pl
from tqdm import tqdm

from hardneg.data.leakage import evaluation_sentences, match_key
from hardneg.data.senteval import check_senteval_dir
from hardneg.shards.io import write_json_atomic, write_shard

log = logging.getLogger(__name__)

REASONS = ("invalid_utf8", "control_character", "empty", "too_short", "duplicate")


# Invisible format characters that str.split() does not treat as space, removed (not spaced):
# BOM / zero-width no-break space, zero-width space, word joiner, and the bidirectional marks,
# embeddings, overrides and isolates (Unicode UAX #9), which reorder how a line is shown
# ("Trojan Source", CVE-2021-42574). BERT's tokenizer drops them too (category Cf), so a line
# made only of them is empty, and a sentence with them must match its clean duplicate.
_INVISIBLE = dict.fromkeys(
    map(ord, "\ufeff\u200b\u2060\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e"
             "\u2066\u2067\u2068\u2069"),
    None,
)


def normalise(line: str) -> str:
    """Remove invisible format characters (BOM, zero-width space, word joiner, bidi controls),
    then collapse every run of Unicode whitespace (tabs, NBSP, CR) to one space; strip ends."""
    return " ".join(line.translate(_INVISIBLE).split())


def control_character(text: str) -> str | None:
    """The first control character (Unicode Cc: NUL, ESC, DEL, C1) that is not whitespace, as
    ``U+XXXX``, or None: such a line is binary or terminal debris, not a sentence."""
    for ch in text:
        if unicodedata.category(ch) == "Cc" and not ch.isspace():
            return f"U+{ord(ch):04X}"
    return None


def n_shards(max_sentences: int, shard_size: int) -> int:
    """Number of shards is fixed by the config (static scatter), trailing shards may be short."""
    return -(-max_sentences // shard_size)


def prepare_corpus(
    source: str | Path,
    shard_paths: Iterable[str | Path],
    rejects_path: str | Path,
    manifest_path: str | Path,
    *,
    max_sentences: int,
    shard_size: int,
    min_chars: int = 1,
    dedupe: bool = True,
    senteval_dir: str | Path | None = None,
    progress: bool = True,
) -> dict:
    """Read ``source`` line by line and write shards, a rejects file and a manifest."""
    source = Path(source)
    shard_paths = [Path(p) for p in shard_paths]
    for name, value in (("max_sentences", max_sentences), ("shard_size", shard_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"corpus.{name} must be an integer >= 1, got {value!r}")
    if senteval_dir is not None:
        check_senteval_dir(senteval_dir)  # a wrong path would report zero leakage
    expected = n_shards(max_sentences, shard_size)
    if len(shard_paths) != expected:
        raise ValueError(
            f"corpus: {len(shard_paths)} shard paths given but max_sentences={max_sentences} and "
            f"shard_size={shard_size} make {expected} shards"
        )
    if not source.is_file():
        raise FileNotFoundError(f"corpus file not found: {source}")

    kept_ids: list[int] = []
    kept_text: list[str] = []
    rejects: list[tuple[int, str, str, int | None]] = []  # id, reason, raw text, duplicate_of
    seen: dict[str, int] = {}
    lines_read = 0
    bar = tqdm(desc="corpus", unit=" lines", disable=not progress)
    with open(source, "rb") as fh:
        for line_no, raw in enumerate(fh):
            lines_read += 1
            bar.update()
            raw = raw.rstrip(b"\r\n")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                rejects.append((line_no, "invalid_utf8", raw.decode("utf-8", "replace"), None))
                log.warning("%s:%d: not UTF-8 (%s); dropped", source, line_no + 1, exc.reason)
                continue
            if (ctl := control_character(text)) is not None:
                rejects.append((line_no, "control_character", text, None))
                log.warning("%s:%d: control character %s; dropped", source, line_no + 1, ctl)
                continue
            text = normalise(text)
            if not text:
                rejects.append((line_no, "empty", text, None))
                continue
            if len(text) < min_chars:
                rejects.append((line_no, "too_short", text, None))
                continue
            if dedupe:
                first = seen.setdefault(text, line_no)
                if first != line_no:
                    rejects.append((line_no, "duplicate", text, first))
                    continue
            kept_ids.append(line_no)
            kept_text.append(text)
            if len(kept_ids) >= max_sentences:
                break
        # Lines beyond the cap are counted (not read as data) so the manifest explains the file.
        lines_after_cap = sum(1 for _ in fh)
    bar.close()
    if not kept_ids:
        raise ValueError(
            f"{source}: empty corpus after preparation ({lines_read} lines read, "
            f"{len(rejects)} dropped: {dict(Counter(r[1] for r in rejects))})"
        )

    leak_keys = evaluation_sentences(senteval_dir) if senteval_dir else {}
    all_eval = set().union(*leak_keys.values()) if leak_keys else set()
    in_eval = [match_key(t) in all_eval for t in kept_text]
    leakage = {
        name: sum(1 for t in kept_text if match_key(t) in keys) for name, keys in leak_keys.items()
    }

    frame = pl.DataFrame(
        {"id": kept_ids, "text": kept_text, "in_eval": in_eval},
        schema={"id": pl.Int64, "text": pl.String, "in_eval": pl.Boolean},
    )
    shard_counts = []
    for i, path in enumerate(shard_paths):
        part = frame.slice(i * shard_size, shard_size)
        write_shard(part, path)
        shard_counts.append(part.height)
    rej = pl.DataFrame(
        {
            "id": [r[0] for r in rejects],
            "reason": [r[1] for r in rejects],
            "text": [r[2] for r in rejects],
            "duplicate_of": [r[3] for r in rejects],
        },
        schema={"id": pl.Int64, "reason": pl.String, "text": pl.String, "duplicate_of": pl.Int64},
    )
    write_shard(rej, rejects_path)

    dropped = Counter(r[1] for r in rejects)
    manifest = {
        "source": source.name,
        "lines_read": lines_read,
        "lines_after_cap": lines_after_cap,
        "kept": len(kept_ids),
        "dropped": {reason: dropped.get(reason, 0) for reason in REASONS},
        "dropped_total": len(rejects),
        "shards": [{"file": p.name, "rows": n} for p, n in zip(shard_paths, shard_counts)],
        "params": {
            "max_sentences": max_sentences,
            "shard_size": shard_size,
            "min_chars": min_chars,
            "dedupe": dedupe,
        },
        "leakage": {
            "kept_sentences_in_eval": int(sum(in_eval)),
            "per_dataset": leakage,
            "match": "lower-cased alphanumeric words (tokenisation-insensitive)",
        },
    }
    # The books must balance: every line read is kept or dropped with a reason.
    if manifest["kept"] + manifest["dropped_total"] != lines_read:
        raise RuntimeError(f"{manifest_path}: {manifest['kept']} kept + {manifest['dropped_total']} dropped lines "
                           f"!= {lines_read} read: a line went unaccounted")
    write_json_atomic(manifest, manifest_path)
    log.info("kept %d of %d lines read; dropped %s; %d kept sentences also in evaluation data",
             len(kept_ids), lines_read, manifest["dropped"], sum(in_eval))
    return manifest
