"""The schema is the one source of defaults: validation fills them (whole sections too), they equal
config.yaml, and the rules between fields fail at start-up with the key and values named."""

from __future__ import annotations

import copy

import pytest

from hardneg.config import ConfigError, load_config, load_schema, load_yaml, validate

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def _is_section(sub: dict) -> bool:
    return sub.get("type") == "object" and "properties" in sub


def minimal_config(cfg: dict, schema: dict) -> dict:
    """Only what has no default: the schema's required keys (at every level) with cfg's values."""
    out = {}
    required = schema.get("required", [])
    for key, sub in schema.get("properties", {}).items():
        if key not in cfg:
            continue
        if _is_section(sub):
            inner = minimal_config(cfg[key], sub)
            if inner or key in required:
                out[key] = inner
        elif key in required:
            out[key] = copy.deepcopy(cfg[key])
    return out


def test_minimal_config_filled_equals_config_yaml():
    full = load_yaml(ROOT / "config.yaml")
    minimal = minimal_config(full, load_schema())
    # what has no default: names, data source, corpus size, the negation model, the pivots, the methods
    assert set(minimal) == {"experiment", "seed", "data", "corpus", "negation", "backtranslation", "train"}
    assert minimal["negation"] == {"spacy_model": "en_core_web_sm"} and "san" not in minimal
    # every default the schema fills is config.yaml's value, and config.yaml has no key the schema
    # leaves without a default (else the filled minimal config would differ)
    assert validate(copy.deepcopy(minimal)) == full
    assert validate(copy.deepcopy(full)) == full  # filling never changes a run that loads config.yaml


def test_missing_section_is_filled_and_a_required_key_is_named():
    cfg = load_yaml(ROOT / "config.yaml")
    del cfg["san"], cfg["evaluate"]
    validate(cfg)
    assert cfg["san"]["quality"]["postprocess"] == "none" and cfg["san"]["batch_size"] == 64
    assert cfg["evaluate"]["splits"]["median_range"] == [2.0, 3.5]
    cfg = load_yaml(ROOT / "config.yaml")
    del cfg["negation"]
    with pytest.raises(ConfigError, match=r"'negation': 'spacy_model' is a required property"):
        validate(cfg)


def test_three_former_fallbacks_follow_config_yaml():
    # the rules' old .get fallbacks said avg, 2 and 1: config.yaml's values are the defaults now
    schema = load_schema()["properties"]
    assert schema["evaluate"]["properties"]["baseline_pooler"]["default"] == "avg_first_last"
    assert schema["train"]["properties"]["threads"]["default"] == 4
    assert schema["negation"]["properties"]["n_process"]["default"] == 4


@pytest.mark.parametrize(
    ("overlay", "message"),
    [
        ({"paraphrase": {"mer_min": 0.7, "mer_max": 0.2}},
         r"'paraphrase\.mer_min' \(0\.7\) is greater than 'paraphrase\.mer_max' \(0\.2\)"),
        ({"evaluate": {"splits": {"median_range": [3.5, 2.0]}}},
         r"'evaluate\.splits\.median_range': \[3\.5, 2\.0\] is reversed"),
        ({"lexicon": {"mode": "file"}}, r"'lexicon\.file': lexicon\.mode 'file' needs lexicon\.file"),
        ({"backtranslation": {"pivots": [{"name": "de", "forward": "a", "backward": "b"},
                                         {"name": "de", "forward": "c", "backward": "d"}]}},
         r"'backtranslation\.pivots': pivot name\(s\) \['de'\] occur more than once"),
        ({"negation": {"fallback": "drop"}}, r"'negation': negation\.fallback: 'drop' only applies to rules: root"),
        ({"negation": {"rules": "root", "spacing": "joined"}},
         r"'negation': negation\.spacing: 'joined' only applies to rules: sncse"),
    ],
)
def test_cross_field_errors_name_keys_and_values(overlay, message):
    with pytest.raises(ConfigError, match=message):
        load_config([ROOT / "config.yaml"], overlay)


def test_cross_field_rules_accept_the_shipped_combinations():
    load_config([ROOT / "config.yaml"], {"negation": {"rules": "root", "fallback": "drop"},
                                         "paraphrase": {"mer_min": 0.3, "mer_max": 0.3}})


def test_schema_method_enums_are_the_presets():
    """train.methods and the keys of train.presets accept exactly the presets hardneg has."""
    from hardneg.train.methods import preset_names

    train = load_schema()["properties"]["train"]["properties"]
    assert sorted(train["methods"]["items"]["enum"]) == sorted(preset_names(builtin_only=True))
    assert sorted(train["presets"]["propertyNames"]["enum"]) == sorted(preset_names(builtin_only=True))


def test_san_key_batch_shape_is_the_schema_defaults():
    """The SAN key's fallbacks for a config without batch_size / chunk_rows are the schema's."""
    from hardneg.augment.san.key import BATCH_SHAPE
    from hardneg.config import schema_default

    assert BATCH_SHAPE == {k: schema_default(f"san.{k}") for k in BATCH_SHAPE}
