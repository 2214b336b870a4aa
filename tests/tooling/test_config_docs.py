"""config/README.md (knowlab.tooling.config_docs): generated from config/schema.yaml and config/config.yaml,
current, with a row for every key of config/config.yaml; and the generator's rules on a small schema."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from knowlab.tooling import config_docs
from knowlab.tooling.config_docs import UNSET, render_value, rows

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = yaml.safe_load((ROOT / config_docs.SCHEMA).read_text(encoding="utf-8"))
CONFIG = yaml.safe_load((ROOT / config_docs.CONFIG).read_text(encoding="utf-8"))


def test_the_readme_is_current():
    page = (ROOT / config_docs.README).read_text(encoding="utf-8")
    assert page == config_docs.render(ROOT), (
        f"{config_docs.README} is stale (config/schema.yaml, config/config.yaml or config/README.md.in changed): "
        f"run `make config-docs` ({config_docs.COMMAND})"
    )


def _leaves(schema, config, path=""):
    """The dotted keys of ``config`` down to the schema's leaves (a user-named table such as ``eval_models``
    or ``grounding.kaist.sha256`` is one key)."""
    for key, value in config.items():
        prop = schema["properties"][key]
        dotted = f"{path}.{key}" if path else key
        if "properties" in prop and isinstance(value, dict):
            yield from _leaves(prop, value, dotted)
        else:
            yield dotted


def test_every_key_of_the_embedded_default_has_a_row():
    documented = set(config_docs.documented(SCHEMA, CONFIG))
    leaves = list(_leaves(SCHEMA, CONFIG))
    assert "finetune.lora.target_modules" in leaves and "grounding.kaist.sha256" in leaves
    missing = [key for key in leaves if key not in documented]
    assert not missing, f"keys of config/config.yaml without a row in config/README.md: {missing}"


def _schema_defaults(schema, path=""):
    for key, prop in schema.get("properties", {}).items():
        dotted = f"{path}.{key}" if path else key
        if "properties" in prop:
            yield from _schema_defaults(prop, dotted)
        elif "default" in prop:
            yield dotted, prop["default"]


def test_the_schema_defaults_agree_with_the_embedded_default():
    """config/config.yaml holds the defaults (every run starts from it); a schema ``default`` fills only what
    it leaves out, so one it also gives must be the same value, or the schema would say another."""
    disagree = []
    for key, default in _schema_defaults(SCHEMA):
        value = CONFIG
        for part in key.split("."):
            value = value.get(part, UNSET) if isinstance(value, dict) else UNSET
        if value is not UNSET and value != default:
            disagree.append(f"{key}: schema {default!r}, config/config.yaml {value!r}")
    assert not disagree, "\n".join(disagree)


# ------------------------------------------------------------------------------ the rules, on a small schema

SMALL = {
    "description": "the whole config",
    "properties": {
        "seed": {"type": "integer", "default": 1, "description": "the seed"},
        "train": {
            "type": "object",
            "description": "learning rate | steps",
            "properties": {
                "mode": {"type": "string", "description": "how", "default": "fast"},
                "lr": {"type": "number", "default": 5.0e-5},
                "steps": {"type": "integer"},
                "files": {
                    "type": "object",
                    "description": "pinned files",
                    "properties": {"a": {"$ref": "#/definitions/file"}, "b": {"$ref": "#/definitions/file"}},
                },
            },
        },
    },
}


def test_an_objects_description_covers_its_undescribed_properties_in_one_row():
    config = {
        "train": {"steps": 3, "files": {"a": {"name": "x", "sha256": "0" * 64}, "b": {"name": "y", "sha256": "1" * 64}}}
    }
    found = rows(SMALL, config)
    assert [row.key for row in found] == ["seed", "train.mode", "train.{lr,steps}", "train.files.{a,b}"]
    assert [row.markdown() for row in found] == [
        "| `seed` | 1 | the seed |",
        "| `train.mode` | `fast` | how |",
        "| `train.{lr,steps}` | 5e-5, 3 | learning rate \\| steps |",
        "| `train.files.{a,b}` | pinned | pinned files |",
    ]
    assert found[2].keys == ("train.lr", "train.steps")
    # config/config.yaml's value wins over the schema's default; no value anywhere is `unset`
    assert rows(SMALL, {"seed": 7})[0].defaults == (7,) and rows(SMALL, {})[2].defaults == (5.0e-5, UNSET)


def test_a_key_without_a_description_fails_naming_it():
    schema = {"properties": {"seed": {"type": "integer"}}}
    with pytest.raises(ValueError, match="seed has no description"):
        rows(schema, {})
    schema = {"properties": {"a": {"description": "covers nothing", "properties": {"b": {"description": "b"}}}}}
    with pytest.raises(ValueError, match="the description of a covers none of its properties"):
        rows(schema, {})


@pytest.mark.parametrize(
    "value, text",
    [
        (None, "null"),
        (True, "true"),
        (0.6667, "0.6667"),
        (3.0e-4, "3e-4"),
        (2.5e-5, "2.5e-5"),
        ("Question: {question}\nAnswer:", "`Question: {question}\\nAnswer:`"),
        (["doc", "event"], "[doc, event]"),
        ({}, "{}"),
        ({"base_model": "base"}, "{base_model: base}"),
        ({"x.json": "a" * 64}, "pinned"),
        (UNSET, "unset"),
    ],
)
def test_defaults_are_written_as_yaml_writes_them(value, text):
    assert render_value(value) == text


def test_the_template_needs_its_key_line(tmp_path):
    for name in ("schema.yaml", "config.yaml"):
        (tmp_path / "config").mkdir(exist_ok=True)
        (tmp_path / "config" / name).write_text((ROOT / "config" / name).read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / config_docs.TEMPLATE).write_text("# Configuration\n\nno table\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"needs the line '\{\{ keys \}\}' once"):
        config_docs.render(tmp_path)
    (tmp_path / config_docs.TEMPLATE).write_text("# Configuration\n\nintro\n\n{{ keys }}\n\nafter\n", encoding="utf-8")
    page = config_docs.render(tmp_path).splitlines()
    assert page[:5] == ["# Configuration", "", config_docs.NOTICE, "", "intro"]
    assert page[6:8] == list(config_docs.HEADER) and page[-2:] == ["", "after"]
    assert any(line.startswith("| `seed` | 1234 | ") for line in page)
