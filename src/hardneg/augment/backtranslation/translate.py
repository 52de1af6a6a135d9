"""Back-translation candidates: English -> pivot -> English for every configured pivot
(OssCSE §4 Step 2: en-de-en and en-ru-en with facebook/wmt19 models).

Every candidate from every pivot is kept (failed ones with their error), so the MER window and the
selection policy (:mod:`hardneg.augment.backtranslation.paraphrase`) can change without translating again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

log = logging.getLogger(__name__)

AUGMENTER = "backtranslation"
BACKENDS = ("transformers", "apertium")
CANDIDATE_DTYPE = pl.List(
    pl.Struct({"pivot": pl.String, "forward": pl.String, "text": pl.String, "error": pl.String})
)


@dataclass(frozen=True)
class Pivot:
    """A round trip: ``forward`` translates English into the pivot, ``backward`` back.

    transformers: model names (``facebook/wmt19-en-de``); apertium: modes (``eng-spa``).
    """

    name: str
    forward: str
    backward: str


def parse_pivots(items: Sequence[dict[str, str]]) -> list[Pivot]:
    """Pivots from config (``[{name, forward, backward}, ...]``), names unique."""
    if not items:
        raise ValueError("backtranslation.pivots: at least one pivot is needed")
    out = []
    for k, d in enumerate(items):
        missing = [f for f in ("name", "forward", "backward") if not d.get(f)]
        if missing:
            raise ValueError(f"backtranslation.pivots[{k}]: missing {', '.join(missing)}")
        out.append(Pivot(str(d["name"]), str(d["forward"]), str(d["backward"])))
    names = [p.name for p in out]
    if len(set(names)) != len(names):
        raise ValueError(f"backtranslation.pivots: duplicate pivot names in {names}")
    return out


def make_translator(cfg: dict[str, Any]):
    """The backend named by ``backtranslation.backend`` with its own settings."""
    backend = cfg.get("backend", "transformers")
    if backend == "apertium":
        from hardneg.augment.backtranslation.apertium import ApertiumTranslator

        return ApertiumTranslator(**(cfg.get("apertium") or {}))
    if backend == "transformers":
        from hardneg.augment.backtranslation.seq2seq import TransformersTranslator

        return TransformersTranslator(**(cfg.get("transformers") or {}))
    raise ValueError(f"backtranslation.backend: '{backend}' is not one of {BACKENDS}")


def round_trip(
    texts: Sequence[str], pivot: Pivot, translator, show_progress: bool = False
) -> list[tuple[str | None, str | None, str | None]]:
    """(forward text, back-translation, error) per input, in input order."""
    if hasattr(translator, "check_mode"):
        translator.check_mode(pivot.forward)
        translator.check_mode(pivot.backward)
    bar = None
    if show_progress:
        from tqdm import tqdm

        bar = tqdm(total=2 * len(texts), desc=f"backtranslate {pivot.name}", unit="sent")
    fwd = translator.translate(list(texts), pivot.forward, progress=bar)
    ok = [k for k, (t, _) in enumerate(fwd) if t]
    back = translator.translate([fwd[k][0] for k in ok], pivot.backward, progress=bar)
    if bar is not None:
        bar.close()
    out: list[tuple[str | None, str | None, str | None]] = []
    back_of = dict(zip(ok, back))
    for k, (ft, ferr) in enumerate(fwd):
        if not ft:
            out.append((ft, None, f"{pivot.forward}: {ferr or 'empty translation'}"))
            continue
        bt, berr = back_of[k]
        if not bt:
            out.append((ft, None, f"{pivot.backward}: {berr or 'empty translation'}"))
        else:
            out.append((ft, bt, None))
    return out


def backtranslate_frame(
    frame: pl.DataFrame, cfg: dict[str, Any], translator=None, show_progress: bool = False
) -> pl.DataFrame:
    """A corpus shard -> a candidates shard: ``id``, ``text``, ``status``, ``reason``,
    ``augmenter``, ``candidates`` (list of {pivot, forward, text, error}), corpus order kept."""
    for col in ("id", "text"):
        if col not in frame.columns:
            raise ValueError(
                f"backtranslation: input shard has no '{col}' column (have: {', '.join(frame.columns)})"
            )
    pivots = parse_pivots(cfg.get("pivots") or [])
    max_chars = int(cfg.get("max_chars", 1000))
    texts = frame.get_column("text").to_list()
    reasons: list[str | None] = []
    for t in texts:
        if not isinstance(t, str) or not t.strip():
            reasons.append("empty")
        elif len(t) > max_chars:
            reasons.append(f"too long ({len(t)} chars > max_chars {max_chars})")
        else:
            reasons.append(None)
    todo = [k for k, r in enumerate(reasons) if r is None]
    cands: list[list[dict[str, Any]]] = [[] for _ in texts]
    if todo:
        translator = translator if translator is not None else make_translator(cfg)
        for pivot in pivots:
            trips = round_trip(
                [texts[k] for k in todo], pivot, translator, show_progress=show_progress
            )
            for k, (ft, bt, err) in zip(todo, trips):
                cands[k].append({"pivot": pivot.name, "forward": ft, "text": bt, "error": err})
    status = ["ok" if r is None else "dropped" for r in reasons]
    # A row whose every pivot failed is dropped here; its errors stay in the candidates.
    for k in todo:
        if all(c["text"] is None for c in cands[k]):
            status[k] = "dropped"
            reasons[k] = "translation failed: " + "; ".join(
                f"{c['pivot']}: {c['error']}" for c in cands[k]
            )
    return pl.DataFrame(
        {
            "id": frame.get_column("id").cast(pl.Int64),
            "text": pl.Series("text", texts, dtype=pl.String),
            "status": pl.Series(status, dtype=pl.String),
            "reason": pl.Series(reasons, dtype=pl.String),
            "augmenter": pl.Series([AUGMENTER] * len(texts), dtype=pl.String),
            "candidates": pl.Series("candidates", cands, dtype=CANDIDATE_DTYPE),
        }
    )

