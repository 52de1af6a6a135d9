"""Config: the shipped configs validate; typos and wrong types name the key path."""

from __future__ import annotations

import pytest

from hardneg.config import ConfigError, deep_merge, load_config, load_yaml

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("overlay", sorted(p.name for p in (ROOT / "experiments").glob("*.yaml")))
def test_shipped_configs_validate(overlay):
    load_config([ROOT / "config.yaml", ROOT / "experiments" / overlay])


def test_unknown_key_names_path():
    with pytest.raises(ConfigError, match=r"unknown key 'corpus\.shard_szie'"):
        load_config([ROOT / "config.yaml"], {"corpus": {"shard_szie": 3}})


def test_wrong_type_names_path():
    with pytest.raises(ConfigError, match=r"'corpus\.max_sentences': expected integer"):
        load_config([ROOT / "config.yaml"], {"corpus": {"max_sentences": "many"}})


def test_bad_mirror_type_and_bad_yaml(tmp_path):
    with pytest.raises(ConfigError, match="'mirror'"):
        load_config([ROOT / "config.yaml"], {"mirror": 3})
    bad = tmp_path / "bad.yaml"
    bad.write_text("corpus: [unclosed\n")
    with pytest.raises(ConfigError, match="bad.yaml: invalid YAML"):
        load_yaml(bad)


def test_deep_merge_overlay_wins_without_mutating():
    base = {"a": {"b": 1, "c": 2}, "l": [1]}
    out = deep_merge(base, {"a": {"b": 3}, "l": [2]})
    assert out == {"a": {"b": 3, "c": 2}, "l": [2]} and base["a"]["b"] == 1


def test_schema_is_package_data_one_file():
    from hardneg.config import SCHEMA_PATH

    # The package's schema is the repository's schemas/config.schema.yaml (a symlink), not a copy.
    assert SCHEMA_PATH.is_symlink() and SCHEMA_PATH.resolve() == (ROOT / "schemas" / "config.schema.yaml").resolve()


def test_wheel_ships_the_schema_and_a_plain_install_validates(tmp_path):
    import shutil
    import subprocess
    import sys
    import zipfile

    # Build the wheel from a copy of the sources (setuptools' PEP 517 backend, no network).
    src = tmp_path / "src-tree"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "schemas", "src"):
        p = ROOT / name
        if p.is_dir():
            shutil.copytree(p, src / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(p, src / name)
    build = subprocess.run([sys.executable, "-c", "from setuptools import build_meta as b; print(b.build_wheel('dist'))"],
                           cwd=src, capture_output=True, text=True, check=False)
    assert build.returncode == 0, build.stderr[-3000:]
    wheel = src / "dist" / build.stdout.strip().splitlines()[-1]
    with zipfile.ZipFile(wheel) as z:
        shipped = z.read("hardneg/schemas/config.schema.yaml")
        z.extractall(tmp_path / "site")
    assert shipped == (ROOT / "schemas" / "config.schema.yaml").read_bytes()
    # Installed without the repository: the schema is found and the shipped config validates.
    code = ("import hardneg.config as c, sys; assert c.__file__.startswith(sys.argv[1]), c.__file__; "
            "assert not c.SCHEMA_PATH.is_symlink(); c.load_config([sys.argv[2]]); print(c.SCHEMA_PATH)")
    run = subprocess.run([sys.executable, "-c", code, str(tmp_path / "site"), str(ROOT / "config.yaml")],
                         cwd=tmp_path, env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().startswith(str(tmp_path / "site"))
