"""The registry of training methods and presets.

A method (``unit.Method``) is one module here, or in a researcher's own file named in the config
(``train.method_modules``, docs/extending.md); a preset (``records.Preset``) is data over methods with
a paper's hyper-parameters (``hardneg.train.presets``). Everything that lists methods or presets
(the trainer's dispatcher, the config schema's enums, ``hardneg train --help``, the report's method
table, experiments/methods.yaml) reads this registry or is tested against it.

A method module defines ``METHOD`` (a ``Method`` instance) and/or ``PRESETS`` (a list of ``Preset``).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from hardneg.train.methods.records import Paper, Preset

if TYPE_CHECKING:
    from hardneg.train.methods.unit import Method

__all__ = ["Paper", "Preset", "load_modules", "method_names", "methods", "module_of", "preset",
           "preset_names", "presets", "suggest_setting"]

# built-in methods in the order the dispatcher adds their terms (per role) and validates them
BUILTIN = ("infonce", "hince", "hard_negative", "hncse", "hicl", "syncse", "listmle_san", "ranking", "bml", "margin", "recall")

_METHODS: dict[str, Method] = {}
_PRESETS: dict[str, Preset] = {}
_ORIGIN: dict[str, str | None] = {}  # preset or method name -> the external module that defined it
_LOADED: dict[str, ModuleType] = {}  # external module spec -> module


class MethodModuleError(ValueError):
    """An external method module that cannot be loaded or clashes with a registered name."""


def _register(module: ModuleType, origin: str | None) -> None:
    unit = getattr(module, "METHOD", None)
    new_presets = list(getattr(module, "PRESETS", ()) or ())
    where = origin or module.__name__
    if unit is None and not new_presets and origin is not None:
        raise MethodModuleError(f"train.method_modules: {origin} defines neither METHOD nor PRESETS")
    if unit is not None:
        from hardneg.train.methods.unit import ROLES, Method

        if not isinstance(unit, Method):
            raise MethodModuleError(f"{where}: METHOD must be a hardneg.train.methods.unit.Method")
        if unit.role not in ROLES:
            raise MethodModuleError(f"{where}: method {unit.name!r}: role must be one of {', '.join(ROLES)} "
                                    f"(got {unit.role!r})")
        if unit.name in _METHODS and _METHODS[unit.name] is not unit:
            raise MethodModuleError(f"{where}: method {unit.name!r} is already registered")
        _METHODS[unit.name] = unit
        _ORIGIN[unit.name] = origin
    for p in new_presets:
        if not isinstance(p, Preset):
            raise MethodModuleError(f"{where}: PRESETS must hold hardneg.train.methods.Preset records")
        if p.name in _PRESETS and _PRESETS[p.name] is not p:
            raise MethodModuleError(f"{where}: preset {p.name!r} is already registered")
        _PRESETS[p.name] = p
        _ORIGIN[p.name] = origin


def _builtin_presets() -> None:
    if not _PRESETS:
        from hardneg.train import presets as builtin_presets

        _register(builtin_presets, None)


def _builtins() -> None:
    """Register the built-in methods (imports torch) and presets, once."""
    if not _METHODS:
        for name in BUILTIN:
            _register(importlib.import_module(f"hardneg.train.methods.{name}"), None)
    _builtin_presets()


def load_modules(specs: Iterable[str] | None) -> list[str]:
    """Import and register external method modules: a ``.py`` file path (relative to the working
    directory, the repository root under Snakemake) or a dotted module name. Loading one twice is
    a no-op. Returns the presets the modules define."""
    _builtins()
    names: list[str] = []
    for spec in specs or ():
        if not isinstance(spec, str) or not spec:
            raise MethodModuleError(f"train.method_modules: {spec!r} is not a file path or module name")
        if spec not in _LOADED:
            if spec.endswith(".py"):
                path = Path(spec)
                if not path.is_file():
                    raise MethodModuleError(f"train.method_modules: {spec}: no such file")
                mod_name = f"hardneg_method_module_{abs(hash(str(path.resolve())))}"
                loader_spec = importlib.util.spec_from_file_location(mod_name, path)
                module = importlib.util.module_from_spec(loader_spec)
                sys.modules[mod_name] = module
                try:
                    loader_spec.loader.exec_module(module)
                except Exception as exc:  # noqa: BLE001  # any error in the module: one line naming it
                    del sys.modules[mod_name]
                    raise MethodModuleError(f"train.method_modules: {spec}: {type(exc).__name__}: {exc}") from None
            else:
                try:
                    module = importlib.import_module(spec)
                except ImportError as exc:
                    raise MethodModuleError(f"train.method_modules: {spec}: cannot import ({exc})") from None
            _register(module, spec)
            _LOADED[spec] = module
        module = _LOADED[spec]
        names += [p.name for p in getattr(module, "PRESETS", ()) or ()]
    return names


def methods() -> dict[str, Method]:
    """Every registered method by name (built-ins first, in the dispatcher's order)."""
    _builtins()
    return dict(_METHODS)


def method_names() -> tuple[str, ...]:
    return tuple(methods())


def presets() -> dict[str, Preset]:
    """Every registered preset by name (built-ins first)."""
    _builtin_presets()
    return dict(_PRESETS)


def preset_names(builtin_only: bool = False) -> tuple[str, ...]:
    return tuple(n for n in presets() if not (builtin_only and _ORIGIN.get(n)))


def preset(name: str) -> Preset:
    """The preset ``name``; an unknown name is a ValueError listing the known ones."""
    known = presets()
    if name not in known:
        raise ValueError(f"train method {name!r} is not a preset (known: {', '.join(known)}; a method of your "
                         f"own: train.method_modules, docs/extending.md)")
    return known[name]


def module_of(name: str) -> str | None:
    """The external module (``train.method_modules`` entry) that defined a preset or method; None: built in."""
    _builtin_presets()
    return _ORIGIN.get(name)


def suggest_setting(key: str) -> str | None:
    """Where a top-level train setting ``key`` that is not one may live: the own setting of a
    registered method it names (``hicl_alpha`` -> ``method_settings.hicl.alpha``, ``bml_weight``
    -> ``method_settings.bml.weight``, ``listmle_tau`` -> ``method_settings.listmle_san.tau``,
    ``distill_tau`` -> ``method_settings.ranking.distill_tau``) or the method's switch (``hicl`` ->
    ``method_settings.hicl.enabled``); None when it names none."""
    found = []
    for name, m in methods().items():
        if key == name and m.own_defaults:  # the method's switch (hicl: true -> method_settings.hicl.enabled)
            return m.switch if m.switch.startswith(f"method_settings.{name}.") else f"method_settings.{name}"
        prefixes = {f"{name}_", f"{name.split('_')[0]}_"}
        for own in m.own_defaults:
            if key == own or any(key == p + own for p in prefixes):
                found.append(f"method_settings.{name}.{own}")
    return " or ".join(found) or None
