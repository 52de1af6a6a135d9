"""DDP helpers: process-group set-up from torchrun's environment, gathers that keep gradients."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class DistInfo:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1


def init_distributed() -> DistInfo:
    """Join the process group torchrun describes (RANK/WORLD_SIZE/LOCAL_RANK); single process
    otherwise. NCCL on CUDA, gloo on CPU."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return DistInfo()
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", str(rank)))
    if not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        if backend == "nccl":
            torch.cuda.set_device(local)
        dist.init_process_group(backend=backend)
    return DistInfo(rank=dist.get_rank(), world_size=dist.get_world_size(), local_rank=local)


def gather_with_grad(x: torch.Tensor, info: DistInfo) -> torch.Tensor:
    """Concatenate ``x`` from every rank (rank order). The local slice is the live tensor, so
    gradients flow to this rank's embeddings (SimCSE's DDP convention); other slices are
    constants. Single process: ``x`` itself."""
    if not info.enabled:
        return x
    parts = [torch.empty_like(x) for _ in range(info.world_size)]
    dist.all_gather(parts, x.detach().contiguous())
    parts[info.rank] = x
    return torch.cat(parts, dim=0)


def gather_no_grad(x: torch.Tensor, info: DistInfo) -> torch.Tensor:
    if not info.enabled:
        return x
    parts = [torch.empty_like(x) for _ in range(info.world_size)]
    dist.all_gather(parts, x.contiguous())
    return torch.cat(parts, dim=0)


def all_true(flag: bool, info: DistInfo) -> bool:
    """True when ``flag`` holds on every rank (so all ranks stop together on a NaN)."""
    if not info.enabled:
        return flag
    t = torch.tensor([1 if flag else 0], dtype=torch.int32)
    if dist.get_backend() == "nccl":
        t = t.cuda()
    dist.all_reduce(t, op=dist.ReduceOp.MIN)
    return bool(t.item())


def barrier(info: DistInfo) -> None:
    if info.enabled:
        dist.barrier()
