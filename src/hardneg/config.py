"""Experiment configuration: YAML base + overlays, validated against the JSON schema.

Errors name the key path (``train.lr``) so a typo in an overlay is caught at start-up,
not an hour into a run.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError

# Package data, so a non-editable install finds it: src/hardneg/schemas/config.schema.yaml is a
# symlink to the repository's schemas/config.schema.yaml (the one file to edit); building a wheel
# copies the file's content into the package.
SCHEMA_PATH = Path(str(resources.files("hardneg") / "schemas" / "config.schema.yaml"))


class ConfigError(ValueError):
    """A configuration problem, with the offending key path in the message."""


def _is_integer(_checker: Any, value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# JSON Schema counts 8.0 as an integer; the stages do not (a float batch size or step count fails
# deep inside numpy/torch), so `type: integer` here means an int as YAML reads `8`, never `8.0`
Validator = validators.extend(
    Draft202012Validator, type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer))


def deep_merge(base: dict, overlay: dict) -> dict:
    """Return ``base`` updated recursively by ``overlay`` (overlay wins; lists are replaced)."""
    out = copy.deepcopy(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def load_yaml(path: str | Path) -> dict:
    """Read a YAML mapping, with a clear error naming the file."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"config file not found: {path}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: top level must be a mapping, got {type(data).__name__}")
    return data


def _key_path(err: ValidationError) -> str:
    parts = [str(p) for p in err.absolute_path]
    if err.validator == "additionalProperties":
        # jsonschema reports the parent; name the unknown key itself.
        extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
        parts = parts + [extra[0]] if extra else parts
        return ".".join(parts) or "<root>"
    return ".".join(parts) or "<root>"


def _describe(err: ValidationError) -> str:
    path = _key_path(err)
    if err.validator == "additionalProperties":
        allowed = ", ".join(sorted(err.schema.get("properties", {})))
        return f"unknown key '{path}' (allowed here: {allowed})"
    if err.validator == "type":
        return f"'{path}': expected {err.validator_value}, got {type(err.instance).__name__} ({err.instance!r})"
    if err.validator == "required":
        return f"'{path or '<root>'}': {err.message}"
    return f"'{path}': {err.message}"


def load_schema(schema_path: str | Path = SCHEMA_PATH) -> dict:
    return load_yaml(schema_path)


def fill_defaults(config: dict, schema: dict) -> dict:
    """Fill the schema's ``default`` values into ``config`` in place (the one source of defaults).

    A missing key with a ``default`` gets a copy of it; a missing section (a property of type
    ``object`` with ``properties``) is created and filled too, so a config that leaves out a whole
    section still reaches the rules complete (its required keys are then reported by validation).
    Values of the wrong type are left alone for validation to report. A layer of settings on top
    of presets (``x-layer``: ``train.overrides``) is created but never filled: its defaults are
    the settings' own, which the presets' values must not lose to."""
    for key, sub in (schema.get("properties") or {}).items():
        if key not in config:
            if "default" in sub:
                config[key] = copy.deepcopy(sub["default"])
            elif sub.get("type") == "object" and "properties" in sub:
                config[key] = {}
        if isinstance(config.get(key), dict) and sub.get("properties") and not sub.get("x-layer"):
            fill_defaults(config[key], sub)
    return config


def validate(config: dict, schema_path: str | Path = SCHEMA_PATH) -> dict:
    """Fill schema defaults into ``config`` (in place), validate it, and check the rules between
    fields that JSON Schema cannot state; raise ConfigError listing every problem."""
    schema = load_schema(schema_path)
    if isinstance(config, dict):
        fill_defaults(config, schema)
    module_problems = _accept_method_modules(config, schema)
    moved = _method_setting_problems(config, schema)
    validator = Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    # a method's own setting given top-level: the line naming where it lives replaces the schema's
    errors = [e for e in errors if not (e.validator == "additionalProperties" and moved and set(e.instance)
                                        - set(e.schema.get("properties", {}))
                                        <= moved.get(".".join(map(str, e.absolute_path)), {}).keys())]
    problems = (module_problems + [why for layer in moved.values() for why in layer.values()]
                + [_describe(e) for e in errors] + _value_errors(config))
    if not problems:  # cross-field rules assume a schema-valid config
        problems = _cross_field_errors(config)
    if problems:
        lines = "\n  - ".join(problems)
        raise ConfigError(f"invalid configuration:\n  - {lines}")
    return config


def _method_setting_problems(config: Any, schema: dict) -> dict[str, dict[str, str]]:
    """train layer -> {key: problem} for each key of ``train.overrides`` / ``train.presets.<preset>``
    that is a method's own setting written top-level (``hicl_alpha``): it lives under
    ``method_settings`` (``hardneg.train.methods.suggest_setting`` says where)."""
    train = config.get("train") if isinstance(config, dict) else None
    if not isinstance(train, dict):
        return {}
    layers = [("train.overrides", train.get("overrides"))]
    presets = train.get("presets")
    if isinstance(presets, dict):
        layers += [(f"train.presets.{name}", layer) for name, layer in presets.items()]
    known = schema["properties"]["train"]["properties"]["overrides"]["properties"]
    out: dict[str, dict[str, str]] = {}
    stray = [(where, k) for where, layer in layers if isinstance(layer, dict) for k in layer if k not in known]
    if stray:  # imports the methods (torch): only for a key the schema does not know
        from hardneg.train.methods import suggest_setting

        for where, key in stray:
            if (to := suggest_setting(key)) is not None:
                out.setdefault(where, {})[key] = f"'{where}': unknown setting {key!r} (did you mean {to}?)"
    return out


def _accept_method_modules(config: Any, schema: dict) -> list[str]:
    """Register the researcher's own methods of ``train.method_modules`` (docs/extending.md) and let
    the schema's method enums (built-in presets, tied to the registry by a test) accept their
    presets too; a module that cannot be loaded is a problem naming it."""
    train = config.get("train") if isinstance(config, dict) else None
    specs = train.get("method_modules") if isinstance(train, dict) else None
    if not specs or not isinstance(specs, list):
        return []
    from hardneg.train.methods import load_modules

    try:
        names = load_modules(specs)
    except ValueError as exc:
        return [str(exc)]
    node = schema["properties"]["train"]["properties"]
    teacher = node["overrides"]["properties"]["teachers"]["items"]["properties"]["method"]["enum"]
    for enum in (node["methods"]["items"]["enum"], node["presets"]["propertyNames"]["enum"], teacher):
        enum.extend(n for n in names if n not in enum)
    return []


def _value_errors(node: Any, path: str = "") -> list[str]:
    """What JSON Schema cannot say: NaN/inf anywhere (NaN passes every minimum/maximum), and
    ordered pairs given in the wrong order (``median_range``, ``mer_min``/``mer_max``)."""
    out: list[str] = []
    if isinstance(node, float) and not math.isfinite(node):
        return [f"'{path or '<root>'}': {node} is not a finite number"]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _value_errors(value, f"{path}.{key}" if path else str(key))
        lo, hi = node.get("mer_min"), node.get("mer_max")
        if _finite(lo) and _finite(hi) and lo > hi:
            out.append(f"'{path}.mer_min' ({lo}) is greater than '{path}.mer_max' ({hi})")
        rng = node.get("median_range")
        if isinstance(rng, list) and len(rng) == 2 and all(map(_finite, rng)) and rng[0] > rng[1]:
            out.append(f"'{path}.median_range': {rng} is reversed (need LO <= HI)")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _value_errors(value, f"{path}[{i}]")
    return out


# Shard names have three digits (shard-000 ... shard-999, the workflow's ``shard`` wildcard);
# a dry run plans ~5 jobs per shard (about 20 CPU-s for 1,000 shards on a busy 2-core machine).
MAX_SHARDS = 1000


def shard_plan_error(max_sentences: int, shard_size: int, where: str = "corpus.") -> str | None:
    """Why ``max_sentences`` / ``shard_size`` plan too many shards, or None."""
    n = -(-max_sentences // shard_size)
    if n <= MAX_SHARDS:
        return None
    return (f"{where}max_sentences={max_sentences} / {where}shard_size={shard_size} plan {n:,} "
            f"shards, more than the {MAX_SHARDS:,} the workflow names (shard-000 ... shard-999): "
            f"raise {where}shard_size to at least {-(-max_sentences // MAX_SHARDS):,}")


def _cross_field_errors(config: dict) -> list[str]:
    """Rules between settings that the stages would otherwise enforce only when their job runs."""
    out: list[str] = []
    corpus = config.get("corpus") or {}
    if err := shard_plan_error(corpus.get("max_sentences", 1), corpus.get("shard_size", 1)):
        out.append(f"'corpus': {err}")  # before Snakemake builds a DAG of every shard's jobs
    lex = config.get("lexicon") or {}
    if lex.get("mode") == "file" and not lex.get("file"):
        out.append("'lexicon.file': lexicon.mode 'file' needs lexicon.file "
                   "(a one-tag-per-line file, e.g. SAN's vocab_pos_end.txt)")
    pivots = (config.get("backtranslation") or {}).get("pivots") or []
    names = [p.get("name") for p in pivots if isinstance(p, dict)]
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        out.append(f"'backtranslation.pivots': pivot name(s) {dups} occur more than once "
                   f"(names: {names}); each names its output column")
    if isinstance(config.get("negation"), dict) and (err := negation_rule_error(config["negation"])):
        out.append(f"'negation': {err}")  # fails before any job runs
    return out


# Negation settings only the ROOT rule set reads, with their defaults (sncse has no drop filters).
NEGATION_ROOT_ONLY = {"already_negated": "remove", "fallback": "prefix", "questions": "negate",
                      "max_chars": 1000, "min_ascii_letters": 0.5}


def negation_rule_error(settings: Mapping[str, Any]) -> str | None:
    """The negation stage's cross-field rule, in one place (``NegationConfig`` and config validation):
    ``rules: sncse`` takes no root-only filter (SNCSE negates every line), ``spacing: joined`` needs it."""
    if settings.get("rules", "sncse") == "sncse":
        odd = [k for k, v in NEGATION_ROOT_ONLY.items() if settings.get(k, v) != v]
        if odd:  # a drop filter here would be silently ignored
            return (f"negation.{odd[0]}: {settings[odd[0]]!r} only applies to rules: root "
                    "(rules: sncse negates every line, as SNCSE does)")
    elif settings.get("spacing", "original") != "original":
        return "negation.spacing: 'joined' only applies to rules: sncse"
    return None


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def load_config(paths: Iterable[str | Path], overrides: dict | None = None) -> dict:
    """Merge config files in order (later wins), apply ``overrides``, and validate."""
    merged: dict[str, Any] = {}
    for path in paths:
        merged = deep_merge(merged, load_yaml(path))
    if overrides:
        merged = deep_merge(merged, overrides)
    return validate(merged)


_SCHEMA_CACHE: dict[str, dict] = {}


def _schema_node(key: str, schema_path: str | Path = SCHEMA_PATH) -> dict:
    path = str(schema_path)
    if path not in _SCHEMA_CACHE:
        _SCHEMA_CACHE[path] = load_schema(path)
    node = _SCHEMA_CACHE[path]
    for part in key.split("."):
        props = node.get("properties", {})
        if part not in props:
            raise KeyError(f"'{key}': no such key in {path}")
        node = props[part]
    return node


def schema_default(key: str, schema_path: str | Path = SCHEMA_PATH) -> Any:
    """The schema's default of a dotted config key (``san.mlm``): the one place that the CLI's
    option defaults and the workflow's settings both come from."""
    node = _schema_node(key, schema_path)
    if "default" not in node:
        raise KeyError(f"'{key}': {schema_path} gives no default")
    return copy.deepcopy(node["default"])


def section_defaults(key: str, schema_path: str | Path = SCHEMA_PATH) -> dict:
    """Every default under a config section (``lexicon``, ``san.quality``), nested as in the config."""
    node = _schema_node(key, schema_path)
    out: dict[str, Any] = {}
    for name, sub in node.get("properties", {}).items():
        if "default" in sub:
            out[name] = copy.deepcopy(sub["default"])
        elif sub.get("type") == "object" and "properties" in sub:
            nested = section_defaults(f"{key}.{name}", schema_path)
            if nested:
                out[name] = nested
    return out


def with_defaults(section: str, settings: dict | None) -> dict:
    """``settings`` (one config section) with the schema's defaults filled in where a key is missing."""
    return deep_merge(section_defaults(section), dict(settings or {}))
