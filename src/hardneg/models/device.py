"""Device picking, one home: every stage that places a model asks here."""

from __future__ import annotations

import torch


def pick_device(device: str | torch.device | None = None, *, index: int | None = None,
                setting: str = "device") -> torch.device:
    """The torch device a stage runs on.

    ``None``, ``""`` or ``"auto"``: CUDA when available (``cuda:index`` when ``index`` is given, e.g. a
    distributed job's local rank), else CPU. An explicit name is taken as written; a CUDA name on
    a machine without CUDA is an error naming ``setting`` (not a traceback from ``.to()`` later).
    """
    if not device or (isinstance(device, str) and device == "auto"):
        if not torch.cuda.is_available():
            return torch.device("cpu")
        return torch.device("cuda" if index is None else f"cuda:{index}")
    try:
        picked = torch.device(device)
    except RuntimeError as exc:
        raise ValueError(f"{setting}: unknown device {str(device)!r} ({exc})") from None
    if picked.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{setting}={str(device)!r} requested but CUDA is not available")
    return picked
