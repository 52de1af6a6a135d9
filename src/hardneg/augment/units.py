"""The augmenter registry: one :class:`AugmenterUnit` per augmenter, read by everything that
names an augmenter or its training view (train/, the train rule's inputs and CLI options,
``hardneg inspect``, the report).

A unit declares, once: its name (the shards' ``augmenter`` column), the column it adds (the
training view a method asks for), its config section, its rule file and the workflow's path
helper for its shards, its ``inspect`` renderer, the prompt template its view takes, and
optional hooks (report section, failed-row handling while the training rows are joined).

The built-in units live in their packages (``hardneg.augment.<name>.unit``). A researcher's own
augmenter is a module or a ``.py`` file named in the config's ``augmenters`` list that defines
``UNIT`` (or ``UNITS``); :func:`load_augmenters` registers it (docs/extending.md).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

# the built-in units, in the order the Snakefile includes their rule files
BUILTIN_UNIT_MODULES = (
    "hardneg.augment.san.unit",
    "hardneg.augment.negation.unit",
    "hardneg.augment.backtranslation.unit",
    "hardneg.augment.mine.unit",
)
# view names a method owns (anchor and positive: the corpus sentence; syncse: pool negatives)
# and the corpus shard's columns: no augmenter may take them
RESERVED_COLUMNS = frozenset({"id", "text", "anchor", "positive", "syncse", "status", "reason", "augmenter"})
TEMPLATE_CHOICES = ("anchor", "positive")


@dataclass
class FillContext:
    """What a unit's ``fill_failed`` hook sees while the training rows are joined.

    ``options``: the train settings that steer failed rows (``failed``: keep|drop,
    ``post_process``, ``negation_rules``); ``counts``: the accounting the hook adds its counts to.
    """

    needed: Sequence[str]
    options: Mapping[str, Any]
    counts: dict[str, int]

    @staticmethod
    def missing(data: pl.DataFrame, col: str) -> pl.Series:
        """Rows whose ``col`` is null or blank (the augmenter dropped them)."""
        return data[col].is_null() | (data[col].str.strip_chars() == "")


@dataclass(frozen=True)
class AugmenterUnit:
    """Everything the rest of the package needs to know about one augmenter."""

    name: str  # the shards' ``augmenter`` value and ``hardneg inspect``'s renderer key
    column: str  # the column it adds: the training view a method asks for
    config_section: str  # its top-level config section
    title: str  # what it is, for messages ("the SAN augmentation rule")
    rule_file: str  # its Snakemake rule file (repository-relative, or absolute for an external unit)
    shard_helper: str  # the workflow function (defined before the train rule runs) giving shard NNN's path
    renderer: str | Callable[[pl.DataFrame, int, int], str]  # "module:function" or a callable
    render_columns: tuple[str, ...] = ()  # shard columns the renderer reads besides id/text/status/reason
    view_template: str = "positive"  # which of the two templates its view is encoded with by default
    append_period: bool = False  # SNCSE's " ." is appended to this view (train.append_period)
    views_pass: bool = True  # encoded in the ordinary views pass (False: a pass of its own)
    # made only when a configured training run reads its column (the report lists its shards then);
    # False: every workflow makes its shards (the report's augmentation page shows them)
    on_demand: bool = False
    # report: (augmentation shards, examples) -> HTML parts for the augmentation page, "module:function"
    report_section: str | Callable[[Sequence[str | Path], int], list[str]] | None = None
    # training rows, all optional: extra shard columns to read {shard column: frame column}
    read_extra: Callable[[Path, Mapping[str, Any]], dict[str, str]] | None = None
    check_shard: Callable[[Path, Mapping[str, Any]], None] | None = None  # raises on a shard unfit to train on
    fill_failed: Callable[[pl.DataFrame, FillContext], pl.DataFrame] | None = None  # values for failed rows
    fill_reads: tuple[str, ...] = ()  # views whose filled values ``fill_failed`` reads (filled first)
    module: str = ""  # the module that declared the unit (set on registration)
    extra: Mapping[str, Any] = field(default_factory=dict)  # anything a unit's own code wants to carry

    @property
    def producer(self) -> str:
        """``the SAN augmentation rule in rules/san.smk (helper san_shard)``: for error messages."""
        return f"{self.title} in {self.rule_file} (helper {self.shard_helper})"


_UNITS: dict[str, AugmenterUnit] = {}
_EXTERNAL: list[str] = []  # the specs load_augmenters registered, in order


def _resolve(func: str | Callable, what: str) -> Callable:
    if callable(func):
        return func
    module, _, name = func.partition(":")
    return getattr(importlib.import_module(module), name)


def register(unit: AugmenterUnit, module: str = "") -> AugmenterUnit:
    """Add ``unit``; a name or column another unit (or a method's view) has is an error."""
    if not isinstance(unit, AugmenterUnit):
        raise TypeError(f"{module or 'register'}: expected an AugmenterUnit, got {type(unit).__name__}")
    if unit.column in RESERVED_COLUMNS:
        raise ValueError(f"augmenter {unit.name!r} ({module}): column {unit.column!r} is reserved "
                         f"({', '.join(sorted(RESERVED_COLUMNS))})")
    if unit.view_template not in TEMPLATE_CHOICES:
        raise ValueError(f"augmenter {unit.name!r} ({module}): view_template must be one of "
                         f"{', '.join(TEMPLATE_CHOICES)} (got {unit.view_template!r})")
    for other in _UNITS.values():
        if other.name == unit.name or other.column == unit.column:
            raise ValueError(f"augmenter {unit.name!r} ({module}): name or column {unit.column!r} is already "
                             f"taken by augmenter {other.name!r} ({other.module})")
    if module and not unit.module:
        object.__setattr__(unit, "module", module)
    _UNITS[unit.name] = unit
    return unit


def unregister(name: str) -> None:
    """Remove a unit (tests that register their own)."""
    _UNITS.pop(name, None)


def _ensure_builtins() -> None:
    if not _UNITS:
        for mod in BUILTIN_UNIT_MODULES:
            register(importlib.import_module(mod).UNIT, mod)


def units() -> list[AugmenterUnit]:
    """Every registered unit: the built-ins, then external ones in the order they were loaded."""
    _ensure_builtins()
    return list(_UNITS.values())


def columns() -> list[str]:
    """Every augmentation column a method can ask for as a view."""
    return [u.column for u in units()]


def by_column(column: str) -> AugmenterUnit:
    """The unit adding ``column``; unknown: an error listing the known ones."""
    for u in units():
        if u.column == column:
            return u
    raise ValueError(f"unknown augmentation column {column!r} (known: {', '.join(columns())}; an augmenter "
                     f"of your own is named in the config's 'augmenters' list, docs/extending.md)")


def by_name(name: str) -> AugmenterUnit | None:
    """The unit named ``name`` (the shards' ``augmenter`` value), or None."""
    _ensure_builtins()
    return _UNITS.get(name)


def renderer(unit: AugmenterUnit) -> Callable[[pl.DataFrame, int, int], str]:
    """The unit's ``inspect`` renderer, imported on first use."""
    return _resolve(unit.renderer, f"augmenter {unit.name}: renderer")


def report_section(unit: AugmenterUnit) -> Callable[[Sequence[str | Path], int], list[str]] | None:
    """The unit's report section builder, or None."""
    return None if unit.report_section is None else _resolve(unit.report_section, f"augmenter {unit.name}")


def _import_spec(spec: str, setting: str) -> tuple[Any, str]:
    """Import a module name (``pkg.mod``) or a ``.py`` file (relative to the working folder)."""
    if spec.endswith(".py"):
        path = Path(spec).resolve()
        if not path.is_file():
            raise ValueError(f"{setting}: file not found: {spec}")
        name = f"hardneg_augmenter_{path.stem}"
        if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(path):
            return sys.modules[name], name
        loader_spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[name] = module
        loader_spec.loader.exec_module(module)
        return module, name
    try:
        return importlib.import_module(spec), spec
    except ImportError as exc:
        raise ValueError(f"{setting}: cannot import {spec!r}: {exc}") from None


def load_augmenters(specs: Sequence[str] | None, setting: str = "config setting 'augmenters'") -> list[AugmenterUnit]:
    """Register the units of every module/file in ``specs`` (the config's ``augmenters``) that is
    not registered yet; each defines ``UNIT`` or ``UNITS``. A relative ``rule_file`` is taken
    relative to the module's file. Returns the units of ``specs``; ``setting`` names where the
    specs came from in error messages."""
    _ensure_builtins()
    out = []
    for spec in specs or []:
        module, name = _import_spec(str(spec), setting)
        declared = getattr(module, "UNITS", None) or ([module.UNIT] if hasattr(module, "UNIT") else [])
        if not declared:
            raise ValueError(f"{setting}: {spec} defines neither UNIT nor UNITS")
        for unit in declared:
            if not isinstance(unit, AugmenterUnit):  # a config error: one line from the CLI, as ValueError
                raise ValueError(  # noqa: TRY004
                    f"{setting}: {spec}: UNIT(S) must be AugmenterUnit, got {type(unit).__name__}")
            rule_file = Path(unit.rule_file)
            if not rule_file.is_absolute() and getattr(module, "__file__", None):
                rule_file = Path(module.__file__).resolve().parent / rule_file
            if not rule_file.is_file():
                raise ValueError(f"{setting}: {spec}: augmenter {unit.name!r}: rule file "
                                 f"not found: {rule_file}")
            unit = AugmenterUnit(**{**unit.__dict__, "rule_file": str(rule_file), "module": name})
            known = _UNITS.get(unit.name)
            if known is not None and known.module == name:
                out.append(known)
                continue
            out.append(register(unit, name))
        if str(spec) not in _EXTERNAL:
            _EXTERNAL.append(str(spec))
    return out


def external_specs() -> list[str]:
    """The specs :func:`load_augmenters` registered (passed on to torchrun's processes)."""
    return list(_EXTERNAL)
