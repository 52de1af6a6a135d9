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
