"""The config schema: defaults, and errors that name the offending key."""

import copy
import re
from pathlib import Path

import pytest
import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = str(ROOT / "config" / "schema.yaml")
CONFIG = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


def _validate(cfg):
    cfg = copy.deepcopy(cfg)
    validate(cfg, SCHEMA, set_default=True)
    return cfg


def _merged(name):
    """config.yaml updated recursively by ``config/<name>``, as ``--configfile`` does."""
    from snakemake.utils import update_config

    merged = copy.deepcopy(CONFIG)
    update_config(merged, yaml.safe_load((ROOT / "config" / name).read_text()))
    return merged


def test_default_test_and_paper_configs_validate():
    _validate(CONFIG)
    assert _validate(_merged("test.yaml"))["model"]["source"] == "tiny_random"
    paper = _validate(_merged("paper.yaml"))
    assert paper["finetune"]["fiction_rate"] == 0.05 and paper["mcq"]["ranker"]["max_candidates"] is None


def test_paper_config_measures_what_the_papers_measured():
    paper = _validate(_merged("paper.yaml"))
    assert paper["grounding"]["decomposer"]["kind"] == "llm"  # atomic facts, not sentences
    assert paper["grounding"]["evaluator"]["kind"] == "cross_encoder"
    assert paper["sort"]["rag"]["scope"] == "all_books"
    assert paper["mcq"]["ranker"]["order"] == "released"
    # the released lm-evaluation-harness task's input, byte for byte
    assert paper["evaluate"]["mcq_template"] == "Question: {question}\n\nAnswer: "
    ranker = paper["mcq"]["ranker"]["template"]
    assert ranker.startswith("Question: {question}\n\nTrue Answer: {true_answer}\n\nAlternate Answer: ")
    assert ranker.endswith("Give a verdict as a Yes or No only.\n\nVerdict:")


def test_wrong_type_names_the_key():
    cfg = copy.deepcopy(CONFIG)
    cfg["finetune"]["max_steps"] = "many"
    with pytest.raises(WorkflowError, match=r"(?s)'many' is not of type 'integer'.*max_steps"):
        _validate(cfg)


def test_unknown_key_names_the_key():
    cfg = copy.deepcopy(CONFIG)
    cfg["finetune"]["learning_rate"] = 1e-4
    with pytest.raises(WorkflowError, match="'learning_rate' was unexpected"):
        _validate(cfg)


def test_bad_enum_and_bad_hash():
    cfg = copy.deepcopy(CONFIG)
    cfg["model"]["source"] = "gpt5"
    with pytest.raises(
        WorkflowError,
        match=r"(?s)'gpt5' is not one of \['gguf_package', 'tiny_random', 'hub'\].*On instance\['model'\]\['source'\]:",
    ):
        _validate(cfg)
    cfg = copy.deepcopy(CONFIG)
    cfg["fiction"]["shipped"]["sha256"]["seeds"] = "abc"
    with pytest.raises(
        WorkflowError, match=r"(?s)'abc' does not match .*On instance\['fiction'\]\['shipped'\]\['sha256'\]\['seeds'\]:"
    ):
        _validate(cfg)


def test_defaults_fill_missing_optional_keys():
    cfg = copy.deepcopy(CONFIG)
    del cfg["evaluate"]["em_tokens"]
    assert _validate(cfg)["evaluate"]["em_tokens"] == [10, 25, 50]


#: the config's tables whose keys have no rows of their own (a row documents the table; eval_models: user-chosen names)
OPAQUE = ("sha256", "files", "tiny_random", "gguf_package", "lora", "hub", "triviaqa", "eval_models")


def test_every_key_is_documented():
    readme = (ROOT / "config" / "README.md").read_text()

    def walk(node, prefix=""):
        for key, value in node.items():
            path = f"{prefix}{key}"
            yield path
            # a kind of cluster job (cluster.resources) is one row, its record's keys in "Cluster jobs"
            if isinstance(value, dict) and key not in OPAQUE and prefix != "cluster.resources.":
                yield from walk(value, path + ".")

    documented = set()
    for span in re.findall(r"`([a-z_.{},0-9<>*]+)`", readme):  # `a.{b,c}` documents a.b and a.c
        head, _, rest = span.partition("{")
        documented |= (
            {head + key + rest.partition("}")[2] for key in rest.partition("}")[0].split(",")} if rest else {span}
        )

    def is_documented(path):  # a parent key is documented by its children's rows
        return path in documented or any(d.startswith(path + ".") for d in documented)

    undocumented = [p for p in walk(CONFIG) if not is_documented(p)]
    assert not undocumented, f"keys missing from config/README.md: {undocumented}"


def test_wrong_split_name_fails_naming_it():
    cfg = copy.deepcopy(CONFIG)
    cfg["finetune"]["runs"] = ["doc", "fictsheet"]
    with pytest.raises(WorkflowError, match=r"(?s)'fictsheet' is not one of.*runs"):
        _validate(cfg)


def test_ranker_template_needs_its_fields():
    cfg = copy.deepcopy(CONFIG)
    cfg["mcq"]["ranker"]["template"] = "Question: {question} Verdict:"
    wrong = re.escape(r"does not match '\\{true_answer\\}'")  # the schema's pattern, as jsonschema quotes it
    match = "(?s)" + wrong + ".*" + re.escape("On instance['mcq']['ranker']['template']:")
    with pytest.raises(WorkflowError, match=match):
        _validate(cfg)
