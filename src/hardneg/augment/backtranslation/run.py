"""Back-translation stage runners: one corpus shard -> every pivot's candidate (OssCSE §4 Step 2),
then the MER-window paraphrase selection (OssCSE Appendix A).

Shared by the workflow's ``backtranslate`` / ``select_paraphrase`` rules (thin adapters in
workflow/scripts/) and ``hardneg backtranslate`` (which runs both on sentences given by hand).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import polars as pl

from hardneg.shards import read_shard, write_json_atomic, write_shard

log = logging.getLogger("hardneg.backtranslation")


def backtranslate_and_select(frame: pl.DataFrame, bt_settings: Mapping, para_settings: Mapping,
                             *, show_progress: bool = False) -> pl.DataFrame:
    """Candidates through every pivot, then the selected paraphrase, for an (id, text) frame."""
    from hardneg.augment.backtranslation.paraphrase import ParaphraseConfig, select_frame
    from hardneg.augment.backtranslation.translate import backtranslate_frame

    cands = backtranslate_frame(frame, dict(bt_settings), show_progress=show_progress)
    return select_frame(cands, ParaphraseConfig.from_dict(dict(para_settings)))


def run_backtranslate(
    in_shard: str | Path,
    out_shard: str | Path,
    settings: Mapping,
    *,
    threads: int | None = None,
    show_progress: bool = True,
) -> pl.DataFrame:
    """Back-translate every row of ``in_shard`` through every pivot (``backtranslation`` config
    section ``settings``); every candidate is kept; write and return the candidate shard."""
    from hardneg.augment.backtranslation.translate import backtranslate_frame

    if threads and settings.get("backend") == "transformers":  # torch only where it is used
        import torch

        torch.set_num_threads(max(1, threads))
    frame = read_shard(in_shard)
    out = backtranslate_frame(frame, dict(settings), show_progress=show_progress)
    if out.height != frame.height:
        raise RuntimeError(f"{in_shard}: {frame.height} rows in, {out.height} out")
    dropped = int((out["status"] == "dropped").sum())
    log.info("%s: %d rows, %d dropped", in_shard, out.height, dropped)
    write_shard(out, out_shard)
    return out


def run_select_paraphrase(
    in_shard: str | Path,
    out_shard: str | Path,
    summary_out: str | Path,
    settings: Mapping,
) -> dict:
    """Pick one paraphrase per row of a candidate shard within the MER window (``paraphrase``
    config section ``settings``); write the shard and its summary; return the summary."""
    from hardneg.augment.backtranslation.paraphrase import ParaphraseConfig, select_frame, summarize

    cands = read_shard(in_shard)
    out = select_frame(cands, ParaphraseConfig.from_dict(dict(settings)))
    if out.height != cands.height:
        raise RuntimeError(f"{in_shard}: {cands.height} rows in, {out.height} out")
    summary = summarize(out)
    logging.getLogger("hardneg.paraphrase").info("%s: %s", in_shard, summary)
    write_shard(out, out_shard)
    write_json_atomic(summary, summary_out)
    return summary
