"""Which SAN settings enter the shard key (the output path): the determinism promise, in code.

Same key -> byte-identical shard, when run
- in fp32 (CPU or GPU): for any batch size, chunking or shard count (exact-length groups without
  padding, counter-based random draws; tests/test_san_maskpredict.py);
- in bf16 (what ``precision: auto`` means on CUDA): for the same batch size, on the same GPU model
  and torch/CUDA build. bf16 matrix kernels are picked per shape, so the number of batch mates
  changes the rounding (issue 15: 334-349 of 1,024 bert-base sentences differ between batch 1 and
  64 on an H100; bench/san_determinism.py prints the count). ``batch_size`` therefore enters the
  key unless the precision is fp32. GPU model and torch/CUDA version are unknown when the DAG is
  built: the shard's stats JSON records them (``device_name``, ``torch``, ``cuda``).

No torch import here: the Snakefile imports this module at DAG build time.
"""

from __future__ import annotations

NEVER_KEYED = ("chunk_rows", "threads", "gpus")  # scheduling only: never change a byte
DEFAULT_BATCH_SIZE = 64  # SanConfig.batch_size


def batch_size_keyed(san_cfg: dict) -> bool:
    """True when the output may depend on the batch size (any precision but fp32)."""
    return san_cfg.get("precision", "auto") != "fp32"


def keyed_settings(san_cfg: dict) -> dict:
    """The ``san`` config entries that change the output (and so key the shard path)."""
    out = {k: v for k, v in san_cfg.items() if k not in NEVER_KEYED and k != "batch_size"}
    if batch_size_keyed(san_cfg):
        out["batch_size"] = san_cfg.get("batch_size", DEFAULT_BATCH_SIZE)
    return out
