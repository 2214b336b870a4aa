"""The workflow's configuration across studies: cross-field checks, and the names it derives.

``config/schema.yaml`` checks each key on its own (types, enums, ranges) and names the key
that fails.  What one key's schema cannot see is a conflict between keys (a k-way MCQ
whose ranker ranks fewer than k - 1 candidates; a SORT segment not shorter than its
excerpt; RAG on a source without book text).  :func:`check_config` checks every such
rule, once, before Snakemake builds the DAG: the Snakefile calls it right after schema
validation, so a bad configuration fails before any job runs, with a message that names
the keys.  It sits above the study packages because it reads all of them.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from knowlab.core.train import launch_command
from knowlab.fictionalqa.settings import check_candidate_budget
from knowlab.layout import BaseModel, finetune_models, model_name, model_runs
from knowlab.sort.prompts import RAG_CONDITIONS, get_rag_reading, get_template, rag_readings, templates

ROOT = Path(__file__).resolve().parents[2]  # the checkout: config/, rules/, scripts/


def load_config(*overlays: Mapping[str, Any] | str | os.PathLike, root: str | os.PathLike = ROOT) -> dict[str, Any]:
    """``config/config.yaml`` with each overlay merged over it in turn and the schema's defaults filled,
    as ``snakemake --configfile A --configfile B`` builds it (``snakemake.utils.update_config``, then
    ``validate(..., set_default=True)``).

    An overlay is a mapping or the path of a YAML file (e.g. ``config/paper.yaml``); overlays are
    copied, never changed.  A process that asks again with the same texts and mappings gets a copy
    of the config made the first time, not a second validation.

    Raises:
        snakemake.exceptions.WorkflowError: the merged config fails ``config/schema.yaml`` (naming the key).
    """
    # deferred: yaml and snakemake's helpers are only needed by callers outside a workflow run
    import yaml
    from snakemake.utils import update_config, validate

    root = Path(root)
    base, schema = (root / "config" / "config.yaml").read_text(), root / "config" / "schema.yaml"
    given = [overlay if isinstance(overlay, Mapping) else Path(overlay).read_text() for overlay in overlays]
    key = _config_key(base, schema.read_text(), given)
    if key in _LOADED:
        return copy.deepcopy(_LOADED[key])
    config = yaml.safe_load(base)
    for overlay in given:
        if not isinstance(overlay, Mapping):
            overlay = yaml.safe_load(overlay) or {}
        update_config(config, copy.deepcopy(dict(overlay)))
    validate(config, str(schema), set_default=True)
    if key is not None:
        _LOADED[key] = copy.deepcopy(config)
    return config


# load_config's results by what they were made from (the texts read and the mappings given): the same
# inputs give the same config, so a process that loads it again (the tests, the tooling) gets a copy
# instead of a second validation (0.15 s, most of it Snakemake re-reading the schema)
_LOADED: dict[tuple, dict[str, Any]] = {}


def _config_key(base: str, schema: str, overlays: list) -> tuple | None:
    """What a config is made from, as a dict key: the texts, and each overlay mapping as JSON; None (not
    kept) where a mapping does not read back from its JSON as itself (a tuple, a path, a number as a key)."""
    parts = []
    for overlay in overlays:
        if isinstance(overlay, str):
            parts.append(("file", overlay))
            continue
        try:
            text = json.dumps(overlay)
        except TypeError:
            return None
        if json.loads(text) != overlay:
            return None
        parts.append(("mapping", text))
    return base, schema, *parts


# the keys of an entry of finetune.models merged over the top-level blocks of the same name
MODEL_BLOCKS = ("source", "gguf_package", "hub", "tiny_random")


def model_config(config: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The config as the fine-tuning of base model ``name`` (a key of :func:`finetune_models`) reads
    it: the entry's ``source``/``gguf_package``/``hub``/``tiny_random`` merged over ``model``, its
    ``finetune`` over ``finetune``, its ``compute`` over ``compute`` and its ``resources`` over
    ``finetune.resources`` (``snakemake.utils.update_config``);
    the config itself for a ``base`` entry.

    Raises:
        ValueError: ``name`` is not a key of ``finetune.models``.
    """
    # deferred: snakemake's helpers are only needed where a config is resolved, not by its readers
    from snakemake.utils import update_config

    models = finetune_models(config)
    if name not in models:
        raise ValueError(f"{name!r} is not a base model of finetune.models ({', '.join(models)})")
    spec = models[name]
    if spec == "base":
        return dict(config)
    view = copy.deepcopy(dict(config))
    update_config(view["model"], {k: copy.deepcopy(v) for k, v in spec.items() if k in MODEL_BLOCKS})
    for block in ("finetune", "compute"):
        update_config(view[block], copy.deepcopy(dict(spec.get(block) or {})))
    update_config(view["finetune"].setdefault("resources", {}), dict(spec.get("resources") or {}))
    return view


def model_source(config: Mapping[str, Any]) -> str:
    """Where a config's base model (``model``) comes from, in one line: ``gguf_package
    <package>/<file>``, ``hub <id>@<revision>`` (``@unpinned`` without one) or ``tiny_random``
    with its width and depth."""
    model = config["model"]
    block = model[model["source"]] or {}
    if model["source"] == "gguf_package":
        return f"gguf_package {block['package']}/{block['file']}"
    if model["source"] == "hub":
        return f"hub {block.get('id')}@{block.get('revision') or 'unpinned'}"
    return f"tiny_random hidden {block['hidden_size']}, {block['num_hidden_layers']} layers"


def _check_generation(config: Mapping[str, Any]) -> None:
    generate = config["fiction"].get("generate")
    if config["fiction"]["source"] != "generate":
        return
    if generate is None:
        raise ValueError("fiction.source is generate but fiction.generate is not configured")
    if (
        generate["backend"] == "transformers"
        and not generate["transformers"]["path"]
        and config["model"]["source"] == "tiny_random"
    ):
        raise ValueError(
            "fiction.generate.backend transformers with transformers.path null generates with the "
            "base model, but model.source tiny_random trains its tokenizer on the fictions: name a "
            "model folder in fiction.generate.transformers.path"
        )


def _check_finetune(config: Mapping[str, Any]) -> None:
    finetune = config["finetune"]
    distributed = finetune["distributed"]
    processes = distributed["nodes"] * distributed["processes_per_node"]
    launch_command(distributed)  # raises for a launcher that cannot start these processes
    batches = [("finetune", finetune)]
    if config["sort"]["parametric"]["enabled"]:
        batches.append(("sort.parametric.finetune", {**finetune, **config["sort"]["parametric"]["finetune"]}))
    for key, block in batches:
        if block["global_batch_size"] % (block["micro_batch_size"] * processes):
            raise ValueError(
                f"{key}.global_batch_size ({block['global_batch_size']}) must be a multiple of micro_batch_size x "
                f"processes ({block['micro_batch_size']} x {processes}, finetune.distributed)"
            )
    if finetune["offload"]["parameters"] and finetune["zero_stage"] != 3:
        raise ValueError(
            "finetune.offload.parameters needs finetune.zero_stage: 3 (only stage 3 partitions parameters)"
        )
    if finetune["offload"]["optimizer"] and finetune["zero_stage"] == 0:
        raise ValueError("finetune.offload.optimizer needs finetune.zero_stage 1, 2 or 3 (ZeRO-Offload)")


def _check_fictionalqa(config: Mapping[str, Any]) -> None:
    mcq = config["mcq"]
    if mcq["distractors"] == "model_ranked":
        check_candidate_budget(mcq["n_choices"], mcq["ranker"]["max_candidates"], mcq["ranker"]["evict"])
    if unbuilt := [s for s in config["stats"]["suites"] if int(s[3:]) not in mcq["n_choices"]]:
        raise ValueError(f"stats.suites {unbuilt} are not built: add their sizes to mcq.n_choices")


def _check_sort(config: Mapping[str, Any]) -> None:
    sort = config["sort"]
    for key, part in (("sort", sort), ("sort.fiction", sort["fiction"])):
        if too_long := [(s, e) for s in part["segment_lengths"] for e in part["excerpt_lengths"] if s >= e]:
            raise ValueError(
                f"{key}.segment_lengths must be below every {key}.excerpt_lengths: (segment, excerpt) {too_long}"
            )
    if sort["template"] is not None:
        try:
            get_template(templates(sort["templates"]), sort["template"])
        except ValueError as err:
            raise ValueError(f"sort.template: {err}") from None
    try:
        rag_readings(sort["rag_readings"])
    except ValueError as err:
        raise ValueError(f"sort.rag_readings: {err}") from None
    if sort["rag_reading"] is not None:
        try:
            get_rag_reading(sort["rag_readings"], sort["rag_reading"])
        except ValueError as err:
            raise ValueError(f"sort.rag_reading: {err}") from None
    if sort["source"] == "release" and set(sort["conditions"]) & set(RAG_CONDITIONS):
        raise ValueError(
            "sort.conditions rag/oracle_rag need the books' text, which sort.source: release "
            "does not have: use shakespeare or gutenberg, or drop them from sort.conditions"
        )


def check_config(config: Mapping[str, Any]) -> None:
    """Check every cross-field rule of a schema-validated config (defaults filled).

    Rules: ``eval_models`` names the base model; fiction generation with the transformers
    backend and no model folder cannot use the tiny test model; ``mcq.ranker.max_candidates``
    supplies ``max(mcq.n_choices) - 1`` alternates; every ``stats.suites`` entry is built by
    ``mcq.n_choices``; ``sort.segment_lengths`` (and ``sort.fiction``'s) are below every
    excerpt length; ``sort.template``, ``sort.rag_readings`` and ``sort.rag_reading`` name
    valid entries; ``sort.source: release`` has no RAG condition; every global batch
    (``finetune`` and ``sort.parametric.finetune``) divides into micro-batches over the
    ``finetune.distributed`` processes; torchrun runs on one node; offload needs ZeRO
    (parameters: stage 3); each base model of ``finetune.models`` with its own settings merged
    (:func:`model_config`), and its runs a subset of ``finetune.runs`` (:func:`knowlab.layout.model_runs`);
    ``finetune.probe_models`` names base models of ``finetune.models``, and ``finetune.probe_runs``
    runs that are trained (``finetune.runs``, and the control when ``finetune.control`` is on), at
    least one of them by each probed base model.

    Raises:
        ValueError: the first rule broken, with a message naming the config keys.
    """
    if BaseModel.from_config(config).evaluated_as is None:
        raise ValueError(
            "eval_models must name the base model (a key with the value `base`, e.g. "
            "base_model: base): the fiction and parametric SORT runs use its prompt selection"
        )
    _check_generation(config)
    models = finetune_models(config)
    for name in models:
        try:
            model_runs(config, name)
            _check_finetune(model_config(config, name))
        except ValueError as err:
            raise ValueError(
                f"finetune.models.{name}: {err}" if config["finetune"].get("models") else str(err)
            ) from None
    if unknown := [name for name in config["finetune"].get("probe_models") or () if name not in models]:
        raise ValueError(
            f"finetune.probe_models {unknown} are not base models of finetune.models ({', '.join(models)})"
        )
    if probed := config["finetune"].get("probe_runs"):
        trained = model_runs(config, next(iter(models)))  # the first base model trains every run
        if unknown := [run for run in probed if run not in trained]:
            raise ValueError(f"finetune.probe_runs {unknown} are not trained runs ({', '.join(trained)})")
        for name in config["finetune"].get("probe_models") or models:
            if not set(probed) & set(own := model_runs(config, name)):
                raise ValueError(
                    f"finetune.probe_runs {probed}: base model {name} of finetune.probe_models trains none of "
                    f"them ({', '.join(own)})"
                )
    _check_fictionalqa(config)
    _check_sort(config)


def settings_note(config: Mapping[str, Any], model: str | None = None) -> str:
    """The line printed under every FictionalQA figure: the model (the base model's name; with
    ``model``, a key of ``finetune.models``, that key, followed by the model's name in brackets where
    they differ; ``""``: none, for the figures across models), seed, batches, fiction rate,
    distractors."""
    finetune = config["finetune"]
    sequences = finetune["global_batch_size"]
    name = model_name(config["model"])
    if model is not None:
        name = model if model in ("", name) else f"{model} ({name})"
    return (
        f"{name + '; ' if name else ''}seed {config['seed']}; {finetune['max_steps']} steps of {sequences} sequences, "
        f"fiction rate {finetune['fiction_rate']}; MCQ distractors: {config['mcq']['distractors']}"
    )
