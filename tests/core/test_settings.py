"""Step settings records (knowlab.core.settings): built from every shipped config, carried by a rule
as a dict of builtins (which Snakemake records), rebuilt equal by the script, checked on build."""

import importlib
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

from knowlab.config import load_config
from knowlab.core.device import BATCH_KEYS, ComputeSettings
from knowlab.core.models import BaseModelSettings
from knowlab.core.settings import StepSettings
from knowlab.fiction.settings import FictionCorpusSettings
from knowlab.fictionalqa import settings as fictionalqa

CONFIG = Path(__file__).resolve().parents[2] / "config"
CONFIGS = {
    name: load_config(*([CONFIG / f"{name}.yaml"] if name != "config" else []))
    for name in ("config", "test", "paper", "cpu-full")
}
# every module that defines a step's record: the studies' settings modules, and the core's, the fiction
# corpus's and the findings' own records
for module in (
    "knowlab.core.device",
    "knowlab.core.models",
    "knowlab.core.train",
    "knowlab.fiction.corpus",
    "knowlab.findings",
    "knowlab.fictionalqa.settings",
    "knowlab.sort.settings",
    "knowlab.grounding.settings",
    "knowlab.fiction_generation.settings",
):
    importlib.import_module(module)


# the common part of the generation stages' records, built only through a stage's
COMMON_PARTS = {"FictionGenerationStageSettings"}


def _records(kind=StepSettings) -> list[type[StepSettings]]:
    """Every record a rule builds from the config: those with a ``from_config`` (records without one
    are nested in another and checked through it)."""
    found = []
    for sub in kind.__subclasses__():
        if sub.from_config.__func__ is not StepSettings.from_config.__func__ and sub.__name__ not in COMMON_PARTS:
            found.append(sub)
        found += _records(sub)
    return sorted(set(found), key=lambda record: record.__name__)


RECORDS = _records()
BUILTINS = (type(None), bool, int, float, str, list, tuple, dict)


def _builtins_only(value) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _builtins_only(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(_builtins_only(v) for v in value)
    return isinstance(value, BUILTINS)


def test_every_study_has_records():
    studies = {record.__module__.split(".")[1] for record in RECORDS}
    assert {"core", "fictionalqa", "sort", "grounding", "fiction_generation", "findings"} <= studies
    assert len(RECORDS) >= 30


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.__name__)
def test_a_record_builds_from_every_config_and_round_trips(record, name):
    built = record.from_config(CONFIGS[name])
    param = built.param()
    assert _builtins_only(param), param  # what Snakemake records (a dataclass it would not)
    assert record.from_param(param) == built
    field = next(iter(param))
    with pytest.raises(FrozenInstanceError, match=f"cannot assign to field '{field}'"):
        built.__setattr__(field, None)


def test_an_unknown_field_and_a_bad_value_name_the_key():
    with pytest.raises(TypeError, match=r"SplitSettings has no field\(s\) \['fraction'\]"):
        fictionalqa.SplitSettings.from_param({"fraction": 0.5})
    with pytest.raises(ValueError, match="splits.event_train_fraction must be in"):
        fictionalqa.SplitSettings(event_train_fraction=1.5)
    with pytest.raises(ValueError, match="evaluate.em_tokens must all be at least 1"):
        fictionalqa.EvaluateSettings((0, 5), "{question}", "{question}", None, ("fiction_doc",))
    with pytest.raises(ValueError, match="compute.dtype must be one of"):
        ComputeSettings(dtype="float8")
    with pytest.raises(ValueError, match="model.source must be"):
        BaseModelSettings.from_config({"model": {"source": "ftp"}})
    with pytest.raises(ValueError, match="fiction.source is 'shipped' but fiction.shipped is not set"):
        FictionCorpusSettings("shipped")


def test_batch_sizes_are_result_keys_only_below_float32():
    float32 = ComputeSettings.from_config(CONFIGS["config"])
    assert float32.dtype == "float32" and float32.batching is None
    paper = ComputeSettings.from_config(CONFIGS["paper"])
    assert paper.dtype == "auto" and set(paper.batching) == set(BATCH_KEYS)
    assert paper.batching["evaluate.batch_size"] == CONFIGS["paper"]["evaluate"]["batch_size"]


def test_a_record_holds_only_the_chosen_source():
    config = CONFIGS["test"]
    assert BaseModelSettings.from_config(config) == BaseModelSettings(
        "tiny_random", dict(config["model"]["tiny_random"])
    )
    other_hub = {**config, "model": {**config["model"], "hub": {"id": "org/other", "revision": None}}}
    assert BaseModelSettings.from_config(other_hub) == BaseModelSettings.from_config(config)
    assert FictionCorpusSettings.from_config(config).release is None
