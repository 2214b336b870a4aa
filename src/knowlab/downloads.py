"""What the workflow downloads, and which jobs read it: no cluster job needs a network.

The rules whose jobs fetch from the network are local rules (``localrule: True``, :data:`DOWNLOAD_RULES`):
under a cluster executor their jobs run where Snakemake runs (the submit host, which has a network),
never as cluster jobs (compute nodes often have none).  They only fetch, or fetch and reduce a small
dataset in seconds; whatever is heavy stays a cluster job that reads their files:

- ``hub_download``: a Hugging Face Hub repository at a revision, files only, no model loaded
  (:mod:`knowlab.core.hub`): one job per Hub id of the config (:func:`snapshots`).  The jobs that read
  the repository list its folder among their inputs and load it from there: ``base_model`` and
  ``finetune_base_model`` (:func:`model_snapshot`; they convert it to safetensors: an 8B model holds
  39 GB of memory), ``eval_model`` (:func:`eval_model_snapshot`), the embedders' and the cross-encoder's
  jobs (:data:`EMBEDDERS`, :func:`evaluator_snapshot`) and ``sort_parametric_texts``
  (OpenHermes, :func:`instructions_snapshot`);
- ``fictionalqa_real_qa`` (TriviaQA's sample, ``real_qa.source: triviaqa``), ``fictionalqa_corpus``
  (the released corpus, ``fiction.source: release``), ``sort_sources`` (the SORT texts),
  ``sort_items`` (the Book-SORT release, ``sort.source: release``) and ``grounding_items`` (the KAIST
  release).

Not covered: the ``gguf_package`` base model in an env without its package (the conda envs: rule
``base_model`` fetches the package's wheel with pip, docs/cluster.md says what to do on nodes without
network), and the generation stages of ``fiction.source: generate`` with an API backend, which call
the API from their jobs (kind ``api_generation``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from knowlab.config import model_config
from knowlab.core.hub import HubSnapshot
from knowlab.core.models import is_local_path, split_revision
from knowlab.grounding.methods import DEFAULTS
from knowlab.layout import finetune_models
from knowlab.sort.instructions import OPENHERMES_HUB_ID

#: the rules whose jobs fetch from the network; each a local rule (``tests/test_downloads.py`` checks it
#: on the paper's DAG, ``make test-slurm`` where the jobs ran)
DOWNLOAD_RULES = (
    "hub_download",
    "fictionalqa_real_qa",
    "fictionalqa_corpus",
    "sort_sources",
    "sort_items",
    "grounding_items",
)
#: a model shipped in a Python package (``packaged:all-MiniLM-L6-v2``, :mod:`knowlab.core.retrieval`): no download
PACKAGED_PREFIX = "packaged:"


def snapshot_of(
    spec: str | None, revision: str | None = None, repo_type: str = "model", key: str = ""
) -> HubSnapshot | None:
    """The Hub snapshot a config value names: None for no value, a packaged model (``packaged:...``) or a
    local folder (:func:`knowlab.core.models.is_local_path`); else its Hub id at its revision (``<id>@<revision>``
    or ``revision``, :func:`knowlab.core.models.split_revision`).

    Raises:
        ValueError: conflicting revisions, or not a Hub id (the message names ``key``).
    """
    if not spec or str(spec).startswith(PACKAGED_PREFIX):
        return None
    hub_id, revision = split_revision(str(spec), revision, key)
    if is_local_path(hub_id):
        return None
    try:
        return HubSnapshot(hub_id, revision, repo_type)
    except ValueError as err:
        raise ValueError(f"{key}: {err}") from None


def model_snapshot(config: Mapping[str, Any]) -> HubSnapshot | None:
    """What rule ``base_model`` (or ``finetune_base_model``, ``config`` being a base model's view,
    :func:`knowlab.config.model_config`) reads from the Hub: ``model.hub.id`` at ``model.hub.revision`` when
    ``model.source`` is ``hub``."""
    model = config["model"]
    if model["source"] != "hub":
        return None
    hub = model.get("hub") or {}
    return snapshot_of(hub.get("id"), hub.get("revision"), key="model.hub.id")


def eval_model_snapshot(config: Mapping[str, Any], name: str) -> HubSnapshot | None:
    """What rule ``eval_model`` reads from the Hub for ``eval_models.<name>`` (``base``: nothing)."""
    spec = config["eval_models"][name]
    return None if spec == "base" else snapshot_of(spec, key=f"eval_models.{name}")


def evaluator_snapshot(config: Mapping[str, Any]) -> HubSnapshot | None:
    """The Hub snapshot of the grounding evaluator (``grounding.evaluator``: its ``model``, else its kind's
    default, :data:`knowlab.grounding.methods.DEFAULTS`; the LLM judge reads a model folder)."""
    evaluator = config["grounding"]["evaluator"]
    if evaluator["kind"] == "llm_judge":
        return None
    return snapshot_of(evaluator.get("model") or DEFAULTS[evaluator["kind"]][0], key="grounding.evaluator.model")


def instructions_snapshot(config: Mapping[str, Any]) -> HubSnapshot | None:
    """The Hub dataset of SORT's instruction data (``sort.parametric.instructions``, source ``openhermes``:
    its ``path``, else OpenHermes-2.5, at its ``revision``)."""
    block = config["sort"]["parametric"]["instructions"]
    if block["source"] != "openhermes":
        return None
    path = block.get("path") or OPENHERMES_HUB_ID
    return snapshot_of(path, block.get("revision"), "dataset", key="sort.parametric.instructions.path")


#: the sentence embedders a config names, by the input name of the jobs that read each: its config key
EMBEDDERS = {
    "sort_embedder": ("sort", "rag", "embedder"),
    "grounding_retriever": ("grounding", "retriever"),
    "near_duplicates_embedder": ("fiction", "generate", "near_duplicates", "embedder"),
}


def reader_snapshots(config: Mapping[str, Any]) -> dict[str, HubSnapshot | None]:
    """The Hub snapshot each kind of job that reads one beside its model reads (None: from no Hub
    repository): the embedders of :data:`EMBEDDERS`, ``grounding_evaluator`` (:func:`evaluator_snapshot`)
    and ``instructions`` (:func:`instructions_snapshot`)."""
    found: dict[str, HubSnapshot | None] = {}
    for name, keys in EMBEDDERS.items():
        value: Any = config
        for key in keys:
            value = value[key]
        found[name] = snapshot_of(value, key=".".join(keys))
    found["grounding_evaluator"] = evaluator_snapshot(config)
    found["instructions"] = instructions_snapshot(config)
    return found


def snapshots(config: Mapping[str, Any]) -> dict[str, HubSnapshot]:
    """Every Hub snapshot a job of ``config`` may read, by its key (:attr:`knowlab.core.hub.HubSnapshot.key`,
    rule ``hub_download``'s wildcard): the base models (each of ``finetune.models``), ``eval_models`` and
    :func:`reader_snapshots`."""
    found = [model_snapshot(model_config(config, name)) for name in finetune_models(config)]
    found.append(model_snapshot(config))
    found += [eval_model_snapshot(config, name) for name in config["eval_models"]]
    found += reader_snapshots(config).values()
    return {snapshot.key: snapshot for snapshot in found if snapshot is not None}


def snapshot_inputs(**snapshots_by_name: HubSnapshot | None) -> dict[str, str]:
    """A rule's named inputs of Hub snapshots: ``hub_<name>`` -> its folder, for each that is not None."""
    return {f"hub_{name}": snapshot.folder for name, snapshot in snapshots_by_name.items() if snapshot is not None}
