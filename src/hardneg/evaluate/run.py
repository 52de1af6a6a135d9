"""Evaluation stage runners: one evaluation run of one encoder (STS summary, per-pair
predictions, Cont./Oppn. figures), the Cont./Oppn. splits, an evaluation's plots, the
transformation probe.

Shared by the ``hardneg eval-sts`` / ``splits`` / ``probe`` commands and the workflow's
``evaluate`` / ``cont_oppn_splits`` / ``evaluate_plots`` / ``probe`` rules (thin adapters in
workflow/scripts/), so both write the same files from the same code.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from hardneg.config import with_defaults
from hardneg.data.senteval import STS_DATASETS, check_senteval_dir
from hardneg.evaluate.splits import SPLIT_COLUMNS, split_cosines, split_metrics
from hardneg.evaluate.sts import evaluate_sts_predictions
from hardneg.shards import read_shard, write_json_atomic, write_shard

log = logging.getLogger(__name__)

PREDICTION_COLUMNS = ["dataset", "split", "subset", "pair_index", "sentence1", "sentence2",
                      "score", "cosine", "mer"]


def check_inputs(
    senteval_dir: str | Path,
    *,
    max_length: int = 128,
    batch_size: int = 128,
    max_pairs: int | None = None,
    splits_path: str | Path | None = None,
    cont_oppn_out: str | Path | None = None,
) -> pl.DataFrame | None:
    """Every input and setting checked before a model loads (seconds) or an hour of encoding;
    returns the splits table when ``splits_path`` is given."""
    check_senteval_dir(senteval_dir)
    if max_length < 4:  # [CLS] + [SEP] + a word; a model folder's own setting must not hide it
        raise ValueError(f"max_length must be >= 4, got {max_length}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if max_pairs is not None and max_pairs < 1:
        raise ValueError(f"max_pairs must be >= 1 (or unset), got {max_pairs}")
    if (splits_path is None) != (cont_oppn_out is None):
        raise ValueError("the Cont./Oppn. evaluation needs both the splits file (--splits) and "
                         "the output path (--cont-oppn)")
    if splits_path is None:
        return None
    splits = read_shard(splits_path)
    missing = [c for c in SPLIT_COLUMNS if c not in splits.columns]
    if missing:
        raise ValueError(f"{splits_path}: not a Cont./Oppn. splits file (from `hardneg splits`): "
                         f"missing column(s) {', '.join(missing)}")
    return splits


def evaluate_model(
    model: str,
    senteval_dir: str | Path,
    out_json: str | Path,
    *,
    pooler: str = "avg",
    template: str | None = None,
    max_length: int = 128,
    device: str | None = None,
    batch_size: int = 128,
    datasets: Sequence[str] = STS_DATASETS,
    split: str = "test",
    max_pairs: int | None = None,
    predictions_out: str | Path | None = None,
    splits_path: str | Path | None = None,
    cont_oppn_out: str | Path | None = None,
    show_progress: bool = True,
) -> dict:
    """Evaluate ``model`` on STS (and the Cont./Oppn. splits when ``splits_path`` is given)."""
    t0 = time.perf_counter()
    splits = check_inputs(senteval_dir, max_length=max_length, batch_size=batch_size, max_pairs=max_pairs,
                          splits_path=splits_path, cont_oppn_out=cont_oppn_out)
    # imported here: the splits and plots jobs import this module too and need no torch (~3 CPU-s a job)
    from hardneg.encoders import load_encoder

    encoder = load_encoder(model, pooler=pooler, max_length=max_length, device=device, template=template)

    def encode(sentences: list[str]):
        return encoder.encode(sentences, batch_size=batch_size, show_progress=show_progress)

    metrics, preds = evaluate_sts_predictions(encode, senteval_dir, datasets, split, max_pairs)
    write_json_atomic(metrics, out_json)
    log.info("STS %s: %s", split, {k: v["spearman"] for k, v in metrics.items()})
    if predictions_out is not None:
        write_shard(preds.select(PREDICTION_COLUMNS), predictions_out)
    if splits is not None:
        if max_pairs is not None:
            # CI only: score just the split pairs that the subsampled STS run already encoded.
            keys = preds.select("dataset", pl.col("split").alias("data_split"), "pair_index")
            splits = splits.join(keys, on=["dataset", "data_split", "pair_index"], how="semi", maintain_order="left")
        scored = split_cosines(encode, splits, preds)
        cont = split_metrics(scored)
        cont["model"] = {"model": model, "pooler": encoder.pooler, "template": encoder.template,
                         "max_length": encoder.max_length, "max_pairs": max_pairs}
        assert cont_oppn_out is not None  # check_inputs
        write_json_atomic(cont, cont_oppn_out)
        log.info("Cont./Oppn. weighted: %s", cont["weighted_average"])
    log.info("evaluated %s in %.1f s", model, time.perf_counter() - t0)
    return metrics


def run_splits(
    senteval_dir: str | Path,
    out: str | Path,
    stats_out: str | Path,
    settings: Mapping | None = None,
) -> tuple[pl.DataFrame, dict]:
    """Build the Cont./Oppn. splits (OssCSE §3.3) with the ``evaluate.splits`` config section
    ``settings`` (schema defaults filled in; no ``sources``: :data:`DEFAULT_SOURCES`); write the
    splits Parquet and its statistics JSON; return both."""
    from hardneg.evaluate.splits import DEFAULT_SOURCES, build_splits

    cfg = with_defaults("evaluate.splits", dict(settings or {}))
    lo, hi = cfg["median_range"]
    if not lo <= hi:  # also refuses NaN
        raise ValueError(f"median_range: LO {lo} must be <= HI {hi}")
    table, summary = build_splits(senteval_dir, cfg.get("sources") or DEFAULT_SOURCES, (lo, hi))
    write_shard(table, out)
    write_json_atomic(summary, stats_out)
    log.info("splits: %s", summary["totals"])
    return table, summary


def run_plots(
    cont_oppn_json: str | Path,
    predictions: str | Path,
    cont_oppn_png: str | Path,
    hard_pairs_png: str | Path,
    label: str,
) -> None:
    """The plots of one evaluation: Cont./Oppn. bars and the hard pairs' cosine histogram."""
    import json

    from hardneg.evaluate.plots import plot_cont_oppn, plot_hard_pairs

    with open(cont_oppn_json) as fh:
        plot_cont_oppn(json.load(fh), cont_oppn_png, title=f"Cont./Oppn.: {label}")
    plot_hard_pairs({label: read_shard(predictions)}, hard_pairs_png)


def _probe_set_args(
    settings: Mapping | None,
    paraphrase_shards: Sequence[str | Path],
    backtranslation: Mapping | None,
    paraphrase: Mapping | None,
    negation: Mapping | None,
    mlm: str | None,
    device: str | None,
) -> dict:
    """:func:`hardneg.evaluate.probe.make_probe_set`'s settings from the ``probe`` config section
    (schema defaults filled in) and the other stages' sections."""
    cfg = with_defaults("probe", dict(settings or {}))
    para = cfg["paraphrases"]
    neg = {k: v for k, v in (negation or {}).items() if k != "n_process"}
    return {
        "max_sentences": cfg["max_sentences"], "seed": cfg["seed"], "edit_rate": cfg["edit_rate"],
        "paraphrase_shards": list(paraphrase_shards) if para == "shards" else None,
        "backtranslation": dict(backtranslation or {}) if para == "backtranslate" else False,
        "paraphrase_cfg": dict(paraphrase or {}), "negation_cfg": neg, "mlm": mlm, "device": device,
    }


def build_probe_set(
    corpus: Sequence[str | Path],
    rows_out: str | Path,
    meta_out: str | Path,
    settings: Mapping | None = None,
    *,
    paraphrase_shards: Sequence[str | Path] = (),
    backtranslation: Mapping | None = None,
    paraphrase: Mapping | None = None,
    negation: Mapping | None = None,
    mlm: str | None = None,
    device: str | None = None,
) -> pl.DataFrame:
    """The model-independent half of the transformation probe (OssCSE §3.1): the probe set drawn
    from ``corpus`` and its transformed rows (``rows_out``, Parquet) with their metadata
    (``meta_out``, JSON), made once and scored per model by :func:`score_probe_set`. Settings as
    :func:`probe_model`."""
    from hardneg.evaluate.probe import make_probe_set

    rows, meta = make_probe_set(list(corpus), **_probe_set_args(settings, paraphrase_shards, backtranslation,
                                                                paraphrase, negation, mlm, device))
    write_shard(rows, rows_out)
    write_json_atomic(meta, meta_out)
    log.info("probe set: %d sentences, %d rows", meta["probe_set"]["sampled"], rows.height)
    return rows


def score_probe_set(
    model: Mapping,
    rows: str | Path,
    meta: str | Path,
    summary_out: str | Path,
    *,
    pairs_out: str | Path | None = None,
    max_length: int = 128,
    device: str | None = None,
    batch_size: int = 128,
    show_progress: bool = False,
) -> dict:
    """The transformation probe of ``model`` (``{"model", "pooler", "template"}``) on a probe set
    that :func:`build_probe_set` wrote (``rows`` Parquet, ``meta`` JSON)."""
    import json

    from hardneg.evaluate.probe import check_probe_set, probe_encoder

    frame = check_probe_set(read_shard(rows), str(rows))
    with open(meta) as fh:
        info = json.load(fh)
    missing = [k for k in ("probe_set", "edit_rate", "sources") if k not in info]
    if missing:
        raise ValueError(f"{meta}: not a probe set's metadata (rule probe_set): missing {', '.join(missing)}")
    return probe_encoder(
        model["model"], frame, info, summary_out, pairs_out=pairs_out, pooler=model["pooler"],
        template=model.get("template"), max_length=max_length, device=device, batch_size=batch_size,
        show_progress=show_progress,
    )


def probe_model(
    model: Mapping,
    corpus: Sequence[str | Path],
    summary_out: str | Path,
    settings: Mapping | None = None,
    *,
    pairs_out: str | Path | None = None,
    paraphrase_shards: Sequence[str | Path] = (),
    backtranslation: Mapping | None = None,
    paraphrase: Mapping | None = None,
    negation: Mapping | None = None,
    mlm: str | None = None,
    max_length: int = 128,
    device: str | None = None,
    batch_size: int = 128,
    show_progress: bool = False,
) -> dict:
    """The transformation probe (OssCSE §3.1) of ``model`` (``{"model", "pooler", "template"}``)
    with the ``probe`` config section ``settings`` (schema defaults filled in): the probe set made
    and scored in one call. Paraphrases per ``settings["paraphrases"]``: ``shards`` =
    ``paraphrase_shards``; ``backtranslate`` = translate the probe set here with ``backtranslation``
    (a config section); ``none`` = no paraphrase rows."""
    from hardneg.evaluate.probe import run_probe

    args = _probe_set_args(settings, paraphrase_shards, backtranslation, paraphrase, negation, mlm, device)
    return run_probe(
        model["model"], list(corpus), summary_out, pairs_out=pairs_out, pooler=model["pooler"],
        template=model.get("template"), max_length=max_length, batch_size=batch_size,
        show_progress=show_progress, **args,
    )
