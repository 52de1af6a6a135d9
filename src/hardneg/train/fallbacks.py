"""Counted fallbacks of the HNCSE / HiCL / SynCSE objectives ("Bad input").

A degenerate case (K larger than the batch, a sequence shorter than one segment, no pool
sentence above delta, ...) never crashes and never leaves an empty loss term: the objective
takes a documented fallback and counts it here; ``summary.json`` reports the totals.

Counts are kept as tensors on the device (no host sync per step). ``global`` counts come from
terms every rank computes identically over the gathered batch (rank 0's value is the total);
``local`` counts come from a rank's own rows and are summed over ranks at the end.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from hardneg.train import distributed as D


class FallbackCounts:
    """Named counters, declared up front so every rank reports the same keys (zeros included)."""

    def __init__(self, global_keys: tuple[str, ...] = (), local_keys: tuple[str, ...] = ()) -> None:
        self._global: dict[str, torch.Tensor | int] = dict.fromkeys(global_keys, 0)
        self._local: dict[str, torch.Tensor | int] = dict.fromkeys(local_keys, 0)

    def add(self, key: str, n: torch.Tensor | int) -> None:
        if key in self._global:
            self._global[key] = self._global[key] + n
        elif key in self._local:
            self._local[key] = self._local[key] + n
        else:
            raise KeyError(f"undeclared fallback counter {key!r}")

    def state_dict(self) -> dict[str, dict[str, int]]:
        """This rank's running totals (checkpointed per rank, so a resumed run keeps its counts)."""
        return {"global": {k: int(v) for k, v in self._global.items()},
                "local": {k: int(v) for k, v in self._local.items()}}

    def load_state_dict(self, state: dict[str, dict[str, int]]) -> None:
        for key, n in {**state.get("global", {}), **state.get("local", {})}.items():
            if key in self._global:
                self._global[key] = n
            elif key in self._local:
                self._local[key] = n

    def as_dict(self, info: D.DistInfo | None = None) -> dict[str, int]:
        """Totals as plain ints (local counters summed over ranks: call on every rank)."""
        out = {k: int(v) for k, v in self._global.items()}
        local = {k: int(v) for k, v in self._local.items()}
        if info is not None and info.enabled and local:
            keys = sorted(local)
            t = torch.tensor([local[k] for k in keys], dtype=torch.long)
            if dist.get_backend() == "nccl":
                t = t.cuda()
            dist.all_reduce(t)
            local = dict(zip(keys, (int(x) for x in t.tolist())))
        out.update(local)
        return dict(sorted(out.items()))
