"""Models, one home per concern: resolve a name (hub id, local path or installed package; here,
torch-free), load it (``hardneg.models.load``), pick its device (``hardneg.models.device``) and its
compute precision (``hardneg.models.precision``). The last three import torch, so they are
imported from their modules, not re-exported here."""

from hardneg.models.resolve import ModelNotFound, resolve_model

__all__ = ["ModelNotFound", "resolve_model"]
