# Shared helpers: config validation (schema defaults filled in), code versions, target registry.
# Output paths: rules/functions/paths.smk.
import hashlib
import importlib.util
import os
import re
import sys
from pathlib import Path

# The library lives in src/: importable here and, through PYTHONPATH, in every job's script
# (also under --use-conda and on cluster nodes), whether or not the package is installed.
# The repository root, from this file's place (not workflow.basedir: an ablation family's generated
# Snakefile, which loads this workflow once per variant as a module, lives elsewhere).
REPO_DIR = Path(str(workflow.current_basedir)).parent
_SRC = str(REPO_DIR / "src")
sys.path.insert(0, _SRC)
_PP = "PYTHONPATH"  # optional: extended, never required
os.environ[_PP] = os.pathsep.join(p for p in (_SRC, os.environ.get(_PP)) if p)
CONDA_ENV = str(REPO_DIR / "envs" / "hardneg.yaml")

from hardneg.config import ConfigError, validate as _validate_config
from hardneg.augment.units import (
    by_name as augmenter_by_name,
    load_augmenters,
    units as augmenter_units,
)

try:
    _validate_config(config)
    load_augmenters(config["augmenters"])  # augmenters of your own (docs/extending.md)
except (ConfigError, ValueError) as _exc:
    raise WorkflowError(str(_exc)) from None


LOGS = "logs"
BENCH = "benchmarks"
N_SHARDS = -(-config["corpus"]["max_sentences"] // config["corpus"]["shard_size"])
SHARDS = [f"{i:03d}" for i in range(N_SHARDS)]

# Every stage registers a function returning its final targets; the 'all' target collects them.
_TARGET_FUNCS = []


def register_targets(func):
    _TARGET_FUNCS.append(func)
    return func


# Every augmenter's shard path function, by name (AugmenterUnit.shard_helper names one): the train
# and report rules find an augmenter's shards here, for the packaged units and your own alike.
SHARD_HELPERS = {}


def shard_helper(func):
    SHARD_HELPERS[func.__name__] = func
    return func


def all_targets():
    out = []
    for func in _TARGET_FUNCS:
        out.extend(func())
    return out


def code_version(*modules):
    """Hash of the library source behind a job, passed as a param so that a change to the
    library code re-runs it (Snakemake tracks neither script files nor imported modules)."""
    h = hashlib.sha256()
    for name in modules:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise WorkflowError(f"code_version: module {name} not found")
        origin = Path(spec.origin)
        files = sorted(origin.parent.rglob("*.py")) if origin.name == "__init__.py" else [origin]
        for f in files:
            h.update(f.relative_to(origin.parent).as_posix().encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def derived(value):
    """``value`` as a param derived from the output (a function of ``output``): Snakemake leaves
    derived params out of its params re-run trigger. For settings that change no byte of the
    output (scheduling: batch sizes, processes, timeouts)."""
    return lambda wildcards, output: value


def keyed_unless(value, unkeyed):
    """``value`` as a watched param (a change re-runs the job), or derived when ``unkeyed``."""
    return derived(value) if unkeyed else value


def short_hash(obj):
    """A stable 8-character key for a parameter set (used in parameter-keyed output paths)."""
    import json

    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:8]


def file_sha256(path):
    """sha256 of a config-named input file (keys outputs by content); a missing file is named."""
    p = Path(path)
    if not p.is_file():
        raise WorkflowError(f"config names {path}, which does not exist")
    return hashlib.sha256(p.read_bytes()).hexdigest()
