"""SAN stage runners: the POS lexicon, the MLM bootstrap, mask-predict of one shard.

Shared by the ``hardneg lexicon`` / ``bootstrap-mlm`` / ``san`` commands and the workflow's
``lexicon`` / ``bootstrap_mlm`` / ``san`` rules (workflow/scripts/*.py are thin adapters), so
both write the same files from the same code and settings.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from hardneg.config import with_defaults

log = logging.getLogger(__name__)


def run_lexicon(
    out_path: str | Path,
    tokenizer: str,
    settings: Mapping | None = None,
    *,
    corpus: Sequence[str | Path] = (),
    tags_file: str | Path | None = None,
    reference: str | Path | None = None,
    setting: str = "san.mlm",
) -> dict:
    """Build the SAN POS lexicon (SAN §3.1, Appendix A) for ``tokenizer`` (hub id, folder or
    package:NAME) with the ``lexicon`` config section ``settings`` (schema defaults filled in);
    write it and its manifest to ``out_path``; return the manifest's ``extra`` record. ``setting``
    names ``tokenizer``'s source in errors (the config key or the CLI option)."""
    from hardneg.augment.san import lexicon as lx
    from hardneg.models.load import load_tokenizer

    cfg = with_defaults("lexicon", dict(settings or {}))
    tok = load_tokenizer(tokenizer, setting=setting)
    mode = cfg["mode"]
    nlp = None if mode == "file" else lx.load_spacy(cfg["spacy_model"])
    texts = None
    if mode == "corpus":
        texts = lx.read_corpus_texts(list(corpus))
        if cfg["corpus_max_sentences"]:
            texts = texts[: cfg["corpus_max_sentences"]]
    t0 = time.perf_counter()
    frame, stats = lx.build_lexicon(
        tok, nlp, mode=mode, corpus_texts=texts, continuation=cfg["continuation"],
        scores={**lx.PAPER_SCORES, **(cfg["scores"] or {})}, scale=cfg["scale"], tags_file=tags_file,
    )  # fmt: skip
    stats["seconds"] = round(time.perf_counter() - t0, 1)
    extra = {"stats": stats, "spacy_model": cfg["spacy_model"], "mode": mode}
    if mode == "corpus":
        # How the corpus lexicon differs from the isolation one, id by id.
        iso, _ = lx.build_lexicon(tok, nlp, mode="isolation", continuation=cfg["continuation"])
        same = (iso["pos"] == frame["pos"]).sum()
        extra["isolation_agreement_pct"] = round(100.0 * same / frame.height, 2)
    if reference:
        extra["reference_comparison"] = lx.compare_with_reference(frame, reference)
    log.info("lexicon: %s", extra)
    lx.write_lexicon(frame, out_path, tok, extra=extra)
    return extra


def run_bootstrap_mlm(
    corpus: Sequence[str | Path],
    out_dir: str | Path,
    settings: Mapping | None = None,
    *,
    seed: int,
    threads: int,
    source_file: str | Path | None = None,
    senteval_dir: str | Path | None = None,
) -> dict:
    """Fit an MLM head on an encoder over the corpus shards, or (``text: source_file``) over every
    line of ``source_file`` minus the evaluation sentences found in ``senteval_dir``
    (``bootstrap_mlm`` config section, schema defaults filled in; its own ``threads`` key is
    replaced by ``threads``); return the metrics."""
    from hardneg.augment.san.bootstrap_mlm import BootstrapConfig, bootstrap_mlm

    cfg = with_defaults("bootstrap_mlm", dict(settings or {}))
    cfg.update(seed=seed, threads=threads)
    exclude = None
    if cfg["text"] == "source_file":
        if source_file is None or senteval_dir is None:
            raise ValueError("bootstrap_mlm.text=source_file needs the corpus source file and the SentEval folder "
                             "(its STS/SICK sentences are never trained on)")
        from hardneg.data.leakage import evaluation_sentences
        from hardneg.data.senteval import check_senteval_dir

        check_senteval_dir(senteval_dir)  # a wrong folder would exclude nothing
        exclude = set().union(*evaluation_sentences(senteval_dir).values())
    metrics = bootstrap_mlm(list(corpus), out_dir, BootstrapConfig(**cfg), source_file=source_file, exclude_keys=exclude)
    log.info("metrics: %s", metrics)
    return metrics


def run_san(
    shard: str | Path,
    out_shard: str | Path,
    mlm: str,
    lexicon: str | Path,
    settings: Mapping,
    *,
    seed: int,
    batch_size: int,
    chunk_rows: int,
    stats_out: str | Path | None = None,
    negation: str | Path | None = None,
    threads: int | None = None,
    device: str | None = None,
    progress: bool = False,
    finish_workers: int = 0,
) -> dict:
    """Mask-predict one corpus shard (SAN §3.1) with the SanConfig fields in ``settings`` (the
    keyed ``san`` settings; ``mlm`` and ``chunk_rows`` there are ignored: they are arguments).
    ``batch_size`` and ``chunk_rows`` do not change the output in fp32 (``hardneg.augment.san.key``), ``finish_workers``
    (processes that decode, filter and build rows) never does. Writes the SAN
    shard and, with ``stats_out``, ``{"config", "mlm", "mlm_heldout", **stats}``; returns the stats."""
    import torch

    from hardneg.augment.san.mask_predict import SanConfig, augment_shard
    from hardneg.shards import write_json_atomic

    if threads:
        torch.set_num_threads(max(1, threads))
    raw = dict(settings)
    raw.pop("mlm", None)
    raw.pop("chunk_rows", None)  # keyed (hardneg.augment.san.key) but an augment_shard argument, not a SanConfig field
    cfg = SanConfig.from_dict({**raw, "seed": seed, "batch_size": batch_size})
    stats = augment_shard(shard, out_shard, mlm, lexicon, cfg, negation_path=negation, device=device,
                          chunk_rows=chunk_rows, progress=progress, finish_workers=finish_workers)
    if stats_out is not None:
        write_json_atomic({"config": cfg.as_dict(), "mlm": mlm, "mlm_heldout": mlm_heldout(mlm), **stats}, stats_out)
    return stats


def mlm_heldout(mlm: str) -> dict | None:
    """The held-out masked-token accuracy a bootstrap MLM folder records (its ``metrics.json``
    ``after``), so the report can say how far its examples are to be trusted; None otherwise."""
    import json

    path = Path(mlm) / "metrics.json"
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())["after"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a bootstrap MLM metrics file ({exc})") from exc
