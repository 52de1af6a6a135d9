"""The sentence-transformation probe (OssCSE §3.1-3.2, Example 1, Figures 1-2).

For each sentence of a probe set: six transformations — paraphrase, negation, insertion, deletion,
substitution, random — each scored by its cosine similarity to the original under an encoder and
by its MER to the original (OssCSE Eq. 1). OssCSE's finding: unsupervised encoders rank a
low-MER negation above a high-MER paraphrase (surface-structure bias), so the headline is the
fraction of sentences whose negation scores above their paraphrase.

Sources (the project's own augmenters): negation from
:mod:`hardneg.augment.negation.negate` (SNCSE rules; the paper hand-wrote negations with "not" or
antonyms); paraphrase from back-translation shards (``paraphrase`` column, MER-filtered as for
OssCSE training) or, without shards, back-translated here with the back-translation library (the
paper used ChatGPT and kept the most surface-dissimilar output); insertion, deletion, substitution
and random from :mod:`hardneg.evaluate.probe_edits`.

Every sentence gets one row per transformation; a transformation that cannot be made keeps
``status = "dropped"`` and a ``reason`` (rows = sentences x 6, always).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from hardneg.evaluate import probe_edits as E
from hardneg.evaluate.metrics import cosine_rows
from hardneg.shards import read_shard, write_json_atomic, write_shard
from hardneg.text import mer_batch

log = logging.getLogger(__name__)

TRANSFORMATIONS = ("paraphrase", "negation", "insertion", "deletion", "substitution", "random")
SCORED = ("ok", "substituted")  # negation's "Not ..." prefix fallback is a real negation: scored
PAIR_SCHEMA = {
    "id": pl.Int64, "transformation": pl.String, "original": pl.String, "text": pl.String,
    "status": pl.String, "reason": pl.String, "detail": pl.String, "mer": pl.Float64,
    "cosine": pl.Float64,
}
EncodeFn = Callable[[list[str]], np.ndarray]


# ----------------------------------------------------------------------------- the probe set
def load_sentences(paths: Sequence[str | Path]) -> pl.DataFrame:
    """``id``, ``text`` from corpus shards (Parquet with ``id``/``text``) or text files (one
    sentence a line, id = 0-based line number). Ids must be unique across the inputs."""
    frames = []
    if not paths:
        raise ValueError("probe: no sentence file given")
    for p in paths:
        p = Path(p)
        if not p.is_file():
            raise FileNotFoundError(f"probe: sentences file {p} does not exist")
        if p.suffix == ".parquet":
            f = read_shard(p)
            for col in ("id", "text"):
                if col not in f.columns:
                    raise ValueError(f"probe: {p} has no '{col}' column (have: {', '.join(f.columns)})")
            frames.append(f.select(pl.col("id").cast(pl.Int64), pl.col("text").cast(pl.String)))
        else:
            try:
                lines = p.read_text(encoding="utf-8").splitlines()
            except UnicodeDecodeError as exc:
                raise ValueError(f"probe: {p} is not UTF-8 text ({exc})") from None
            frames.append(pl.DataFrame({"id": pl.Series(range(len(lines)), dtype=pl.Int64),
                                        "text": pl.Series(lines, dtype=pl.String)}))
    frame = pl.concat(frames)
    dup = frame.filter(pl.col("id").is_duplicated())
    if dup.height:
        raise ValueError(f"probe: sentence id {dup['id'][0]} occurs more than once across "
                         f"{', '.join(map(str, paths))} (give shards with distinct ids, or one text file)")
    return frame


def select_probe_set(frame: pl.DataFrame, max_sentences: int | None, seed: int) -> tuple[pl.DataFrame, dict]:
    """A fixed probe set: blank sentences left out (counted), then ``max_sentences`` drawn with
    ``seed`` (all when None or fewer), sorted by id. Same inputs and seed -> same set."""
    blank = frame.get_column("text").fill_null("").str.strip_chars() == ""
    usable = frame.filter(~blank).sort("id")
    stats = {"input_rows": frame.height, "blank_skipped": int(blank.sum()), "sampled": usable.height}
    if max_sentences is not None and usable.height > max_sentences:
        pick = np.random.default_rng(int(seed)).choice(usable.height, size=max_sentences, replace=False)
        usable = usable[np.sort(pick)]
        stats["sampled"] = usable.height
    if usable.height == 0:
        raise ValueError("probe: no non-blank sentence in the input")
    return usable, stats


# ----------------------------------------------------------------------------- sources
def read_paraphrases(paths: Sequence[str | Path]) -> pl.DataFrame:
    """Back-translation shards -> ``id``, ``paraphrase``, ``status``, ``reason``, ``detail``."""
    frames = []
    for p in paths:
        if not Path(p).is_file():
            raise FileNotFoundError(f"probe: paraphrase shard {p} does not exist")
        f = read_shard(p)
        missing = [c for c in ("id", "paraphrase", "status", "reason") if c not in f.columns]
        if missing:
            raise ValueError(f"probe: paraphrase shard {p} lacks column(s) {', '.join(missing)} "
                             "(made by rule select_paraphrase / hardneg backtranslate)")
        pivot = f["paraphrase_pivot"] if "paraphrase_pivot" in f.columns else pl.Series([None] * f.height, dtype=pl.String)
        frames.append(f.select("id", "paraphrase", "status", "reason").with_columns(
            detail=pl.when(pivot.is_not_null()).then(pl.lit("pivot ") + pivot).otherwise(None)))
    return pl.concat(frames) if frames else pl.DataFrame(schema={"id": pl.Int64, "paraphrase": pl.String,
                                                                  "status": pl.String, "reason": pl.String,
                                                                  "detail": pl.String})


def backtranslate_paraphrases(frame: pl.DataFrame, bt_cfg: dict[str, Any], para_cfg: dict[str, Any] | None = None,
                              translator=None) -> pl.DataFrame:
    """Paraphrases of the probe set made here with the back-translation library (MER-filtered
    selection as for training: :mod:`hardneg.augment.backtranslation.paraphrase`)."""
    from hardneg.augment.backtranslation.paraphrase import ParaphraseConfig, select_frame
    from hardneg.augment.backtranslation.translate import backtranslate_frame

    cands = backtranslate_frame(frame.select("id", "text"), bt_cfg, translator=translator)
    sel = select_frame(cands, ParaphraseConfig.from_dict(para_cfg))
    return sel.select("id", "paraphrase", "status", "reason").with_columns(
        detail=pl.lit("pivot ") + sel["paraphrase_pivot"])


def default_bt_config() -> dict[str, Any]:
    """Offline back-translation: Apertium English -> Spanish -> English (quick experiment's pivot)."""
    return {"backend": "apertium", "pivots": [{"name": "spa", "forward": "eng-spa", "backward": "spa-eng"}]}


# ----------------------------------------------------------------------------- transformations
def _row(sid: int, kind: str, original: str, text: str | None, status: str = "ok",
         reason: str | None = None, detail: str | None = None) -> dict:
    if text is None and status != "dropped":
        status = "dropped"
    return {"id": sid, "transformation": kind, "original": original, "text": text, "status": status,
            "reason": reason, "detail": detail}


def _word_edits(ids: list[int], texts: list[str], seed: int, rate: float, mlm) -> tuple[list[dict], dict]:
    """Insertion and substitution rows (MLM-filled or fallback), in input order."""
    ins_rows: list[dict] = [None] * len(ids)  # type: ignore[list-item]
    sub_rows: list[dict] = [None] * len(ids)  # type: ignore[list-item]
    vocab = E.vocabulary(texts) if mlm is None else []
    jobs: list[tuple[str, int, list[str], list[int]]] = []  # kind, row index, words, positions
    for k, (sid, t) in enumerate(zip(ids, texts)):
        for kind, plan in (("insertion", E.plan_insertion(t, seed, sid, rate)),
                           ("substitution", E.plan_substitution(t, seed, sid, rate))):
            target = ins_rows if kind == "insertion" else sub_rows
            if isinstance(plan, E.Edit):
                target[k] = _row(sid, kind, t, None, reason=plan.reason)
            else:
                jobs.append((kind, k, plan[0], plan[1]))
    if mlm is not None and jobs:
        masked, avoid = [], []
        for kind, _, words, pos in jobs:
            if kind == "insertion":
                masked.append(E.apply_insertion(words, pos, [mlm.mask] * len(pos)))
                avoid.append([""] * len(pos))
            else:
                masked.append(" ".join(
                    E.split_core(w)[0] + mlm.mask + E.split_core(w)[2] if i in set(pos) else w
                    for i, w in enumerate(words)))
                avoid.append([E.split_core(words[i])[1] for i in pos])
        fills = mlm.fill(masked, avoid)
    else:
        fills = []
        for kind, k, words, pos in jobs:
            if kind == "insertion":
                fills.append(E.filler_words(seed, ids[k], len(pos)))
            else:
                fills.append(E.vocab_words(vocab, seed, ids[k], [words[i] for i in pos]))
    for (kind, k, words, pos), new in zip(jobs, fills):
        sid, t = ids[k], texts[k]
        target = ins_rows if kind == "insertion" else sub_rows
        if new is None:
            why = "MLM: masked word beyond max_length or no whole-word prediction" if mlm is not None \
                else "vocabulary has no other word"
            target[k] = _row(sid, kind, t, None, reason=why)
            continue
        if kind == "insertion":
            out = E.apply_insertion(words, pos, new)
            detail = "inserted " + ", ".join(f"{w!r} at {p}" for p, w in zip(pos, new))
        else:
            out = E.apply_substitution(words, pos, new)
            detail = "replaced " + ", ".join(f"{words[p]!r}->{w!r}" for p, w in zip(pos, new))
        target[k] = _row(sid, kind, t, out, detail=detail)
    source = {"insertion": f"mlm:{mlm.name}" if mlm is not None else "fillers",
              "substitution": f"mlm:{mlm.name}" if mlm is not None else "probe-set vocabulary"}
    return ins_rows + sub_rows, source


def transform(
    frame: pl.DataFrame,
    *,
    seed: int = 42,
    rate: float = 0.1,
    negation_cfg: dict[str, Any] | None = None,
    paraphrases: pl.DataFrame | None = None,
    mlm=None,
    nlp=None,
) -> tuple[pl.DataFrame, dict]:
    """Every transformation of every sentence of ``frame`` (``id``, ``text``): one row each,
    in (id, transformation) order; ``paraphrases`` None -> paraphrase rows dropped with a reason."""
    from hardneg.augment.negation.negate import NegationConfig, negate_texts

    if not 0.0 < rate <= 1.0:
        raise ValueError(f"probe.edit_rate: {rate} is not in (0, 1]")
    frame = frame.sort("id")  # the random partner is drawn by position: make it order-free
    ids = frame.get_column("id").to_list()
    texts = frame.get_column("text").to_list()
    rows: list[dict] = []
    # paraphrase
    if paraphrases is None:
        rows += [_row(i, "paraphrase", t, None, reason="no paraphrase source given") for i, t in zip(ids, texts)]
    else:
        by_id = {r["id"]: r for r in paraphrases.iter_rows(named=True)}
        for i, t in zip(ids, texts):
            r = by_id.get(i)
            if r is None:
                rows.append(_row(i, "paraphrase", t, None, reason="id not in the paraphrase shards"))
            elif r["paraphrase"] is None:
                rows.append(_row(i, "paraphrase", t, None, reason=r["reason"] or f"status {r['status']}"))
            else:
                rows.append(_row(i, "paraphrase", t, r["paraphrase"], detail=r["detail"]))
    # negation (SNCSE rules at the ROOT; "substituted" = the "Not ..." prefix fallback)
    ncfg = NegationConfig.from_dict(negation_cfg)
    for i, t, n in zip(ids, texts, negate_texts(texts, ncfg, nlp=nlp)):
        rows.append(_row(i, "negation", t, n.negation, status=n.status, reason=n.reason, detail=n.rule))
    # insertion + substitution, deletion, random
    edit_rows, edit_source = _word_edits(ids, texts, seed, rate, mlm)
    rows += edit_rows
    for i, t in zip(ids, texts):
        d = E.delete_one(t, seed, i)
        rows.append(_row(i, "deletion", t, d.text, reason=d.reason, detail=d.detail))
    for k, (i, t) in enumerate(zip(ids, texts)):
        j = E.random_partner(k, len(ids), seed, i)
        if j is None:
            rows.append(_row(i, "random", t, None, reason="probe set has one sentence"))
        else:
            rows.append(_row(i, "random", t, texts[j], detail=f"sentence id {ids[j]}"))
    out = pl.DataFrame(rows, schema={k: v for k, v in PAIR_SCHEMA.items() if k not in ("mer", "cosine")})
    order = {name: n for n, name in enumerate(TRANSFORMATIONS)}
    out = out.with_columns(_o=pl.col("transformation").replace_strict(order, return_dtype=pl.Int32)) \
        .sort("id", "_o").drop("_o")
    sources = {"negation": f"hardneg.augment.negation ({ncfg.spacy_model})", **edit_source,
               "deletion": "one random word", "random": "another probe-set sentence"}
    return out, sources


def score(rows: pl.DataFrame, encode: EncodeFn) -> pl.DataFrame:
    """Add ``mer`` (word level, case-insensitive: OssCSE Eq. 1) and ``cosine`` to the original,
    for the rows that have a text; one ``encode`` call over all distinct sentences."""
    have = rows.get_column("text").is_not_null().to_numpy()
    idx = np.flatnonzero(have)
    orig = rows.get_column("original").to_list()
    text = rows.get_column("text").to_list()
    mer = np.full(rows.height, np.nan)
    cos = np.full(rows.height, np.nan)
    if idx.size:
        refs = [orig[k] for k in idx]
        hyps = [text[k] for k in idx]
        mer[idx] = mer_batch(refs, hyps, lowercase=True)
        uniq = sorted(set(refs) | set(hyps))
        emb = np.asarray(encode(uniq), dtype=np.float32)
        if emb.shape[0] != len(uniq):
            raise ValueError(f"probe: encoder returned {emb.shape[0]} vectors for {len(uniq)} sentences")
        at = {s: n for n, s in enumerate(uniq)}
        # Rounded to 1e-6: padding in another batch shape moves float32 sums by ~1e-7, and the
        # outputs must not depend on the batch size (project convention).
        cos[idx] = np.round(cosine_rows(emb[[at[s] for s in refs]], emb[[at[s] for s in hyps]]), 6)
    return rows.with_columns(mer=pl.Series(mer).fill_nan(None), cosine=pl.Series(cos).fill_nan(None))


# ----------------------------------------------------------------------------- summary
def negation_above_paraphrase(scored: pl.DataFrame) -> dict:
    """Over sentences with both a scored negation and a scored paraphrase: how many have
    cos(negation) > cos(paraphrase) (strictly), and that fraction (None when there are none)."""
    ok = scored.filter(pl.col("status").is_in(SCORED) & pl.col("cosine").is_not_null())
    neg = ok.filter(pl.col("transformation") == "negation").select("id", neg="cosine")
    par = ok.filter(pl.col("transformation") == "paraphrase").select("id", par="cosine")
    both = neg.join(par, on="id", how="inner")
    n = both.height
    count = int((both["neg"] > both["par"]).sum()) if n else 0
    return {"count": count, "n_sentences": n, "fraction": round(count / n, 4) if n else None}


def summarize(scored: pl.DataFrame) -> dict:
    """Per transformation: rows, scored/dropped counts, drop reasons, mean/median/std cosine,
    mean MER; plus the negation-above-paraphrase rate (OssCSE Figure 1c)."""
    per: dict[str, dict] = {}
    for name in TRANSFORMATIONS:
        sub = scored.filter(pl.col("transformation") == name)
        ok = sub.filter(pl.col("status").is_in(SCORED) & pl.col("cosine").is_not_null())
        dropped = sub.filter(pl.col("status") == "dropped")
        reasons = dropped.group_by("reason").len().sort("len", "reason", descending=[True, False])
        cos = ok.get_column("cosine").to_numpy()
        mer = ok.get_column("mer").to_numpy()

        def r(x):
            return None if x is None or not np.isfinite(x) else round(float(x), 4)

        per[name] = {
            "rows": sub.height, "scored": ok.height, "dropped": dropped.height,
            "status": {s: int(c) for s, c in sub.group_by("status").len().sort("status").iter_rows()},
            "drop_reasons": {str(k): int(v) for k, v in reasons.iter_rows()},
            "mean_cosine": r(cos.mean()) if cos.size else None,
            "median_cosine": r(np.median(cos)) if cos.size else None,
            "std_cosine": r(cos.std()) if cos.size else None,
            "mean_mer": r(mer.mean()) if mer.size else None,
        }
    return {"sentences": scored.get_column("id").n_unique(), "rows": scored.height,
            "transformations": per, "negation_above_paraphrase": negation_above_paraphrase(scored)}


# ----------------------------------------------------------------------------- one run
# A probe set (the transformed rows and their metadata) depends on the sentences, the settings and
# the MLM, never on the encoder scored: the workflow builds it once (rule probe_set) and scores it
# per model (rule probe).
PROBE_SET_COLUMNS = [k for k in PAIR_SCHEMA if k not in ("mer", "cosine")]


def make_probe_set(
    sentences: Sequence[str | Path],
    *,
    max_sentences: int | None = None,
    seed: int = 42,
    edit_rate: float = 0.1,
    paraphrase_shards: Sequence[str | Path] | None = None,
    backtranslation: dict[str, Any] | None | bool = None,
    paraphrase_cfg: dict[str, Any] | None = None,
    negation_cfg: dict[str, Any] | None = None,
    mlm: str | None = None,
    device: str | None = None,
) -> tuple[pl.DataFrame, dict]:
    """The probe set and every transformation of it: (rows in :data:`PROBE_SET_COLUMNS`, metadata
    ``{"probe_set", "edit_rate", "sources"}`` for the summary). Paraphrases: ``paraphrase_shards``
    if given, else back-translated here with ``backtranslation`` (a config dict; None = Apertium
    eng-spa-eng; False = no paraphrases); ``mlm`` fills insertions/substitutions (on ``device``)."""
    frame, set_stats = select_probe_set(load_sentences(sentences), max_sentences, seed)
    if paraphrase_shards:
        paras, para_source = read_paraphrases(paraphrase_shards), "shards: " + ", ".join(map(str, paraphrase_shards))
    elif backtranslation is False:
        paras, para_source = None, "none"
    else:
        bt = backtranslation if isinstance(backtranslation, dict) else default_bt_config()
        paras = backtranslate_paraphrases(frame, bt, paraphrase_cfg)
        para_source = f"back-translated here ({bt.get('backend')}: {', '.join(p['name'] for p in bt['pivots'])})"
    filler = None
    if mlm:
        from hardneg.evaluate.probe_mlm import MLMFiller

        filler = MLMFiller(mlm, device=device)
    rows, sources = transform(frame, seed=seed, rate=edit_rate, negation_cfg=negation_cfg,
                              paraphrases=paras, mlm=filler)
    sources["paraphrase"] = para_source
    meta = {"probe_set": {**set_stats, "seed": seed, "max_sentences": max_sentences},
            "edit_rate": edit_rate, "sources": sources}
    return rows, meta


def check_probe_set(rows: pl.DataFrame, where: str) -> pl.DataFrame:
    """``rows`` if it has every probe-set column (:data:`PROBE_SET_COLUMNS`), else a ValueError
    naming ``where`` and the missing columns."""
    missing = [c for c in PROBE_SET_COLUMNS if c not in rows.columns]
    if missing:
        raise ValueError(f"{where}: not a probe set (rule probe_set): missing column(s) {', '.join(missing)}")
    return rows.select(PROBE_SET_COLUMNS)


def probe_encoder(
    model: str | EncodeFn,
    rows: pl.DataFrame,
    meta: dict,
    out_json: str | Path,
    *,
    pairs_out: str | Path | None = None,
    pooler: str = "avg",
    template: str | None = None,
    max_length: int = 128,
    device: str | None = None,
    batch_size: int = 128,
    show_progress: bool = False,
) -> dict:
    """Score a probe set (:func:`make_probe_set`'s rows and metadata) with ``model`` (a name for
    :func:`hardneg.encoders.load_encoder`, or an ``encode`` callable) and write the summary JSON
    (+ per-row Parquet)."""
    t0 = time.perf_counter()
    model_info: dict[str, Any]
    if callable(model):
        encode, model_info = model, {"model": getattr(model, "__name__", "callable")}
    else:
        from hardneg.encoders import load_encoder

        enc = load_encoder(model, pooler=pooler, max_length=max_length, device=device, template=template)

        def encode(s: list[str]) -> np.ndarray:
            return enc.encode(s, batch_size=batch_size, show_progress=show_progress)

        model_info = {"model": str(model), "pooler": enc.pooler, "template": enc.template,
                      "max_length": enc.max_length}
    scored = score(rows, encode)
    summary = summarize(scored)
    summary.update({"model": model_info, "probe_set": meta["probe_set"], "edit_rate": meta["edit_rate"],
                    "sources": meta["sources"]})
    if pairs_out is not None:
        write_shard(scored.select(list(PAIR_SCHEMA)), pairs_out)
    write_json_atomic(summary, out_json)
    log.info("probe of %s on %d sentences in %.1f s: negation above paraphrase %s", model_info["model"],
             summary["sentences"], time.perf_counter() - t0, summary["negation_above_paraphrase"])
    return summary


def run_probe(
    model: str | EncodeFn,
    sentences: Sequence[str | Path],
    out_json: str | Path,
    *,
    pairs_out: str | Path | None = None,
    pooler: str = "avg",
    template: str | None = None,
    max_length: int = 128,
    device: str | None = None,
    batch_size: int = 128,
    max_sentences: int | None = None,
    seed: int = 42,
    edit_rate: float = 0.1,
    paraphrase_shards: Sequence[str | Path] | None = None,
    backtranslation: dict[str, Any] | None | bool = None,
    paraphrase_cfg: dict[str, Any] | None = None,
    negation_cfg: dict[str, Any] | None = None,
    mlm: str | None = None,
    show_progress: bool = False,
) -> dict:
    """Build the probe set, transform, score with ``model`` and write the summary JSON (+ per-row
    Parquet): :func:`make_probe_set` then :func:`probe_encoder` in one call."""
    rows, meta = make_probe_set(
        sentences, max_sentences=max_sentences, seed=seed, edit_rate=edit_rate,
        paraphrase_shards=paraphrase_shards, backtranslation=backtranslation, paraphrase_cfg=paraphrase_cfg,
        negation_cfg=negation_cfg, mlm=mlm, device=device,
    )
    return probe_encoder(model, rows, meta, out_json, pairs_out=pairs_out, pooler=pooler, template=template,
                         max_length=max_length, device=device, batch_size=batch_size, show_progress=show_progress)


def format_table(summary: dict) -> str:
    """The summary as a markdown table (one row per transformation)."""
    lines = ["| transformation | scored | dropped | mean cosine | mean MER |", "|---|---:|---:|---:|---:|"]
    for name, s in summary["transformations"].items():
        mc = "-" if s["mean_cosine"] is None else f"{s['mean_cosine']:.3f}"
        mm = "-" if s["mean_mer"] is None else f"{s['mean_mer']:.3f}"
        lines.append(f"| {name} | {s['scored']} | {s['dropped']} | {mc} | {mm} |")
    nap = summary["negation_above_paraphrase"]
    frac = "-" if nap["fraction"] is None else f"{nap['fraction']:.3f}"
    lines.append(f"\nnegation above paraphrase: {nap['count']}/{nap['n_sentences']} = {frac}")
    return "\n".join(lines)
