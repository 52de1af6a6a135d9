"""Which SAN settings enter the shard key (the output path): the determinism promise, in code.

Same key -> byte-identical shard, when run
- in fp32 (CPU or GPU): for any batch size, chunking or shard count (exact-length groups without
  padding, counter-based random draws; tests/test_san_maskpredict.py);
- in bf16 (what ``precision: auto`` means on CUDA): for the same batch size, on the same GPU model
  and torch/CUDA build. bf16 matrix kernels are picked per shape, so the number of batch mates
  changes the rounding (H100, bert-base: 130-146 of 512 sentences differ from batch 1 at batch
  8/64/1024; bench/results/san-determinism.md, bench/san_determinism.py). ``batch_size`` and
  ``chunk_rows`` (a batch never spans chunks, so it bounds the batch mates) therefore enter the
  key unless the precision is fp32. GPU model and torch/CUDA version are unknown when the DAG is
  built: the shard's stats JSON records them (``device_name``, ``torch``, ``cuda``).

No torch import here: the Snakefile imports this module at DAG build time.
"""

from __future__ import annotations

NEVER_KEYED = ("threads", "gpus", "finish_workers")  # scheduling only: never change a byte
BATCH_SHAPE = {"batch_size": 64, "chunk_rows": 8192}  # defaults (SanConfig, augment_shard)
# Decoding rules that are off by default (hardneg.augment.san.fill): keyed and recorded in the
# shard's stats only when set, so a configuration that leaves them off keeps its shard path and bytes.
OPTIONAL_RULES = {"same_kind": False, "forbid_adjacent": False}


def batch_size_keyed(san_cfg: dict) -> bool:
    """True when the output may depend on batch size and chunking (any precision but fp32)."""
    return san_cfg.get("precision", "auto") != "fp32"


def keyed_settings(san_cfg: dict) -> dict:
    """The ``san`` config entries that change the output (and so key the shard path)."""
    out = {k: v for k, v in san_cfg.items() if k not in NEVER_KEYED and k not in BATCH_SHAPE
           and not (k in OPTIONAL_RULES and v == OPTIONAL_RULES[k])}
    if batch_size_keyed(san_cfg):
        out |= {k: san_cfg.get(k, default) for k, default in BATCH_SHAPE.items()}
    return out
