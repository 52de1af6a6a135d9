"""Negation stage runner: one corpus shard -> its negation shard + summary (SNCSE / OssCSE §4 Step 1).

Shared by the workflow's ``negate`` rule (workflow/scripts/negation.py, a thin adapter) and any
caller with a shard; ``hardneg negate`` negates sentences with the same ``NegationConfig``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from hardneg.augment.negation.negate import NegationConfig, negate_frame, summarize
from hardneg.shards import read_shard, write_json_atomic, write_shard

log = logging.getLogger("hardneg.negation")


def run_negate(
    in_shard: str | Path,
    out_shard: str | Path,
    summary_out: str | Path,
    settings: Mapping,
    *,
    n_process: int | None = None,
    show_progress: bool = True,
) -> dict:
    """Negate every row of ``in_shard`` (``negation`` config section ``settings``; ``n_process``,
    when given, replaces its ``n_process``); write the shard and its summary; return the summary."""
    d = dict(settings)
    if n_process is not None:
        d["n_process"] = n_process
    cfg = NegationConfig.from_dict(d)
    frame = read_shard(in_shard)
    out = negate_frame(frame, cfg, show_progress=show_progress)
    if out.height != frame.height:  # every corpus row is kept, dropped ones with a reason
        raise RuntimeError(f"{in_shard}: {frame.height} rows in, {out.height} out")
    # "rules" etc.: which negation rule made this shard (training checks it against its own)
    summary = cfg.provenance() | summarize(out)
    log.info("%s: %s", in_shard, summary)
    write_shard(out, out_shard)
    write_json_atomic(summary, summary_out)
    return summary
