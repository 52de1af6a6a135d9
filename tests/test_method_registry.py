"""The method registry is what everything lists: the schema's enums, `hardneg train --help`, the
report's method table, experiments/methods.yaml and docs/methods.md follow it (a method added in
one place and not the other fails here); a method from a file outside the package (named in
train.method_modules) validates, builds its term and travels with its settings to a fresh process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from hardneg.config import SCHEMA_PATH, ConfigError, load_config
from hardneg.train import distributed as D
from hardneg.train import methods as registry
from hardneg.train.methods.objective import Objective, active
from hardneg.train.presets import build_settings, settings_from_config
from hardneg.train.settings import TrainSettings

REPO = Path(__file__).resolve().parents[1]
OWN = "tests/methods/uniformity.py"
OWN_OVERLAY = REPO / "tests/methods/own_method.yaml"
BUILTIN = registry.preset_names(builtin_only=True)


@pytest.fixture(autouse=True)
def _registry_as_before():
    """The registry is per process: a test that registers the example method removes it after."""
    saved = [dict(d) for d in (registry._METHODS, registry._PRESETS, registry._ORIGIN, registry._LOADED)]
    yield
    for d, before in zip((registry._METHODS, registry._PRESETS, registry._ORIGIN, registry._LOADED), saved):
        d.clear()
        d.update(before)


def test_schema_enums_are_the_builtin_presets():
    train = yaml.safe_load(Path(SCHEMA_PATH).read_text())["properties"]["train"]["properties"]
    assert sorted(train["methods"]["items"]["enum"]) == sorted(BUILTIN)
    assert sorted(train["presets"]["propertyNames"]["enum"]) == sorted(BUILTIN)


def test_methods_overlay_compares_every_preset_on_the_shared_backbone():
    """experiments/methods.yaml: every built-in preset but those fixing a backbone of their own."""
    listed = yaml.safe_load((REPO / "experiments/methods.yaml").read_text())["train"]["methods"]
    assert sorted(listed) == sorted(n for n in BUILTIN if registry.preset(n).init_model is None)


def test_train_help_lists_every_preset():
    out = subprocess.run([sys.executable, "-m", "hardneg", "train", "--help"], capture_output=True, text=True,
                         check=True, cwd=REPO).stdout
    flat = " ".join(out.split())
    assert all(name in flat for name in BUILTIN), flat


def test_every_preset_has_a_paper_source_and_every_method_a_docs_row():
    from hardneg.report.methods import source

    assert all(registry.preset(n).source and source(n) == registry.preset(n).source for n in BUILTIN)
    docs = (REPO / "docs/training-methods.md").read_text()
    for name, m in registry.methods().items():
        assert f"| `{name}` |" in docs, name
        assert m.role in ("contrast", "global", "local") and m.summary and m.paper.name
    docs += (REPO / "docs/methods.md").read_text()
    for name in BUILTIN:
        assert f"| `{name}` |" in docs, name


def test_each_methods_own_settings_and_defaults_are_the_schemas():
    """A method's module declares its own settings (method_settings.<name>); the schema describes
    each built-in method's with the same names and defaults, and no other."""
    node = yaml.safe_load(Path(SCHEMA_PATH).read_text())["properties"]["train"]["properties"]["overrides"]
    described = node["properties"]["method_settings"]["properties"]
    declared = {name: m.own_defaults for name, m in registry.methods().items()
                if m.own_defaults and registry.module_of(name) is None}
    assert sorted(described) == sorted(declared)
    kinds = {bool: "boolean", int: "integer", float: "number", str: "string"}
    for name, defaults in declared.items():
        props = described[name]["properties"]
        assert {k: v.get("default") for k, v in props.items()} == defaults, name
        assert all("default" in v for v in props.values()), name
        assert described[name].get("additionalProperties") is False, name
        for key, default in defaults.items():  # the validator refuses 8.0 wherever the method would
            kind = type(default) if default is not None else registry.methods()[name].nullable[key]
            schema = props[key]
            types = schema.get("type") or ["string"]  # an enum of strings
            assert kinds[kind] in ([types] if isinstance(types, str) else types), (name, key, types)
            assert type(schema["default"]) is type(default), (name, key)
    # a top-level train setting is never also a method's own: one home per setting
    fields = set(TrainSettings.__dataclass_fields__)
    assert not fields & set(registry.methods()), fields & set(registry.methods())


def test_schema_teacher_method_enum_is_the_builtin_presets(monkeypatch):
    """teachers[].method names a preset trained in the same workflow: any built-in preset, and a
    preset of train.method_modules once the config names its module."""
    overrides = yaml.safe_load(Path(SCHEMA_PATH).read_text())["properties"]["train"]["properties"]["overrides"]
    enum = overrides["properties"]["teachers"]["items"]["properties"]["method"]["enum"]
    assert sorted(enum) == sorted(BUILTIN)
    monkeypatch.chdir(REPO)
    teach = {"train": {"presets": {"rankcse": {"teachers": [{"method": "simcse_uniformity"}]}}}}
    cfg = load_config([REPO / "config.yaml", REPO / "experiments/tiny.yaml", OWN_OVERLAY], overrides=teach)
    assert cfg["train"]["presets"]["rankcse"]["teachers"] == [{"method": "simcse_uniformity"}]
    with pytest.raises(ConfigError, match=r"teachers\.0\.method'.*'simcse_uniformity' is not one of"):
        load_config([REPO / "config.yaml"], overrides=teach)


def test_method_settings_in_a_layer_are_not_filled_and_keep_the_presets_values():
    """train.overrides is a layer over the presets: the schema's defaults of a method's own
    settings describe them but are not filled in, so an override of one knob keeps the others."""
    cfg = load_config([REPO / "config.yaml"], overrides={"train": {"overrides": {
        "method_settings": {"bml": {"alpha": 0.2}, "hicl": {"segment_length": 8}}}}})
    assert cfg["train"]["overrides"]["method_settings"] == {"bml": {"alpha": 0.2}, "hicl": {"segment_length": 8}}
    s = settings_from_config(cfg["train"], "sncse", 42)
    assert (s.own("bml").weight, s.own("bml").alpha, s.own("bml").beta) == (1e-3, 0.2, 0.3)
    assert not s.uses("hicl")  # a knob set for every preset switches no method on
    assert s.method_settings["hicl"] == {"enabled": False, "alpha": 0.15, "segment_length": 8, "max_tokens": 512}


def test_dotted_set_reaches_a_builtin_methods_own_setting():
    from hardneg.cli.train import _parse_set

    extra = _parse_set(["method_settings.hicl.alpha=0.2"])
    s = settings_from_config({"init_model": "m"}, "hicl_simcse", 1, extra=extra)
    assert s.uses("hicl") and (s.own("hicl").alpha, s.own("hicl").segment_length) == (0.2, 32)
    assert build_settings("hicl_simcse", "m", 1).own("hicl").alpha == 0.15


@pytest.mark.parametrize(("key", "where"), [
    ("hicl_alpha", "method_settings.hicl.alpha"), ("bml_weight", "method_settings.bml.weight"),
    ("listmle_tau", "method_settings.listmle_san.tau"), ("distill_tau", "method_settings.ranking.distill_tau"),
    ("hncse", "method_settings.hncse.mode"), ("syncse", "method_settings.syncse.enabled"),
    ("hard_negative_weight", "method_settings.hard_negative.weight"), ("recall_gamma", "method_settings.recall.gamma"),
])
def test_a_methods_setting_given_top_level_is_refused_naming_where_it_lives(key, where):
    from hardneg.cli.train import _parse_set

    line = f"unknown setting '{key}' (did you mean {where}?)"
    with pytest.raises(ValueError, match=f"^{line.replace('(', '[(]').replace(')', '[)]').replace('?', '[?]')}$"):
        settings_from_config({"init_model": "m"}, "simcse", 1, extra=_parse_set([f"{key}=1"]))
    with pytest.raises(ConfigError) as err:
        load_config([REPO / "config.yaml"], overrides={"train": {"presets": {"sncse": {key: 1}}}})
    assert str(err.value).splitlines()[1:] == [f"  - 'train.presets.sncse': {line}"]


def test_own_method_module_validates_trains_its_term_and_reaches_a_fresh_process(monkeypatch):
    monkeypatch.chdir(REPO)
    cfg = load_config([REPO / "config.yaml", REPO / "experiments/tiny.yaml", OWN_OVERLAY])
    assert "simcse_uniformity" in registry.preset_names()
    s = settings_from_config(cfg["train"], "simcse_uniformity", 42)
    # the entry is completed with the method's defaults, as a built-in method's is
    assert s.method_modules == [OWN] and s.method_settings == {"uniformity": {"weight": 0.1, "t": 2.0}}
    assert [m.name for m in active(s)] == ["infonce", "uniformity"]
    assert registry.methods()["uniformity"].options(s).t == 2.0  # the module's default
    # the built-in presets' settings do not mention the external module
    assert "method_modules" not in settings_from_config(cfg["train"], "simcse", 42).to_dict()

    torch.manual_seed(0)
    a, p = torch.randn(8, 16), torch.randn(8, 16)
    loss, parts = Objective(s, encoder=None)({"anchor": a, "positive": p}, D.DistInfo())
    from hardneg.train.objectives import InfoNCE

    uniformity = sys.modules[type(registry.methods()["uniformity"]).__module__].uniformity
    expected = InfoNCE(s.temperature)(a, p) + 0.1 * uniformity(a, 2.0)
    torch.testing.assert_close(loss, expected, rtol=0, atol=0)
    assert set(parts) == {"infonce", "uniformity", "loss"}

    # a job process gets only the settings: method_modules registers the method there
    code = ("import json,sys; from hardneg.train.settings import TrainSettings; "
            "s = TrainSettings.from_dict(json.loads(sys.argv[1])); print(s.needs_teacher(), s.method)")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(s.to_dict())], capture_output=True, text=True,
                         cwd=REPO, check=True).stdout.split()
    assert out == ["False", "simcse_uniformity"]


def test_own_method_settings_are_checked_and_dotted_set_reaches_them(monkeypatch):
    monkeypatch.chdir(REPO)
    registry.load_modules([OWN])
    with pytest.raises(ValueError, match=r"'method_settings'.*uniformity: unknown setting\(s\) wieght"):
        build_settings("simcse_uniformity", "m", 1, overrides={"method_settings": {"uniformity": {"wieght": 1}}})
    with pytest.raises(ValueError, match=r"'method_settings'.*uniformity.t: must be a number >= 0"):
        build_settings("simcse_uniformity", "m", 1, overrides={"method_settings": {"uniformity": {"t": -1}}})
    with pytest.raises(ValueError, match=r"'method_settings'.*'nosuch' is not a method with nested settings"):
        build_settings("simcse", "m", 1, overrides={"method_settings": {"nosuch": {}}})
    from hardneg.cli.train import _parse_set

    extra = _parse_set(["method_settings.uniformity.t=3", "lr=2e-5"])
    assert extra == {"method_settings": {"uniformity": {"t": 3}}, "lr": 2e-5}
    s = settings_from_config({"init_model": "m"}, "simcse_uniformity", 1, extra=extra)
    assert s.method_settings == {"uniformity": {"weight": 0.1, "t": 3}}  # merged into the preset's


def test_unloadable_method_module_is_a_config_error_naming_it(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    with pytest.raises(ConfigError, match=r"train.method_modules: nowhere/own\.py: no such file"):
        load_config([REPO / "config.yaml"], overrides={"train": {"method_modules": ["nowhere/own.py"]}})
    empty = tmp_path / "empty.py"
    empty.write_text("X = 1\n")
    with pytest.raises(ConfigError, match="defines neither METHOD nor PRESETS"):
        load_config([REPO / "config.yaml"], overrides={"train": {"method_modules": [str(empty)]}})
    with pytest.raises(ConfigError, match=r"'train\.methods\.0': 'not_registered' is not one of"):
        load_config([REPO / "config.yaml"], overrides={"train": {"methods": ["not_registered"]}})
