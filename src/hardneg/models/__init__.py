"""Resolve a model name the way users write it: a hub id, a local path, or an installed package."""

from hardneg.models.resolve import ModelNotFound, resolve_model

__all__ = ["ModelNotFound", "resolve_model"]
