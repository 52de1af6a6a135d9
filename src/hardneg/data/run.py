"""Data stage runners: one upstream download, the corpus shards.

Shared by the ``hardneg download`` / ``prepare-corpus`` commands and the workflow's ``download``
/ ``prepare_corpus`` rules (thin adapters in workflow/scripts/), with the schema's defaults for
every setting the caller leaves out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from hardneg.config import with_defaults
from hardneg.data.corpus import prepare_corpus
from hardneg.data.download import download


def run_download(
    url: str,
    dest: str | Path,
    manifest: str | Path,
    settings: Mapping | None = None,
    *,
    mirror: str | None = None,
    sha256: str | None = None,
) -> dict:
    """Download ``url`` (via ``mirror``) to ``dest`` with the ``data`` config section's
    ``retries``, ``backoff_s`` and ``timeout_s``; write and return the manifest."""
    cfg = with_defaults("data", dict(settings or {}))
    return download(url, dest, mirror=mirror, sha256=sha256, retries=cfg["retries"],
                    backoff_s=cfg["backoff_s"], timeout_s=cfg["timeout_s"], manifest=manifest)


def run_prepare_corpus(
    corpus: str | Path,
    shards: Sequence[str | Path],
    rejects: str | Path,
    manifest: str | Path,
    settings: Mapping,
    *,
    senteval_dir: str | Path | None = None,
) -> dict:
    """Normalise, de-duplicate, cap and shard ``corpus`` with the ``corpus`` config section
    (``max_sentences``, ``shard_size``; ``min_chars``, ``dedupe`` default as in the schema)."""
    cfg = with_defaults("corpus", dict(settings))
    for name in ("max_sentences", "shard_size"):
        if name not in cfg:
            raise ValueError(f"corpus.{name} is required")
    return prepare_corpus(corpus, list(shards), rejects, manifest, max_sentences=cfg["max_sentences"],
                          shard_size=cfg["shard_size"], min_chars=cfg["min_chars"], dedupe=cfg["dedupe"],
                          senteval_dir=senteval_dir)
