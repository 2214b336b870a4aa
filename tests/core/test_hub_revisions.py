"""Hub ids: revisions passed to every loader, unpinned ids warned about and noted in the manifest,
missing local model folders and an unreachable Hub named by their config key (no network)."""

from __future__ import annotations

import logging
import sys
from types import ModuleType, SimpleNamespace

import pytest
from huggingface_hub.errors import LocalEntryNotFoundError

from knowlab.core import models, provenance, retrieval
from knowlab.core.models import CheckpointError, HubUnreachableError, from_hub, split_revision
from knowlab.fiction import release
from knowlab.fictionalqa.corpus import real_qa
from knowlab.sort import instructions
from knowlab.sort import release as sort_release

SHA = "3bac358730f8806e5c3dc7c7e19eb36e045bf720"


class _Stop(Exception):
    """Raised by a fake loader once it has recorded its call."""


@pytest.fixture
def notes(monkeypatch):
    """The running job's manifest notes, empty at the start of the test."""
    monkeypatch.setattr(provenance, "_NOTES", {})
    monkeypatch.setattr(models, "_UNPINNED", {})
    return provenance._NOTES


class _Loader:
    """Stands in for a transformers ``Auto*`` class: records ``from_pretrained`` calls, or raises ``error``."""

    def __init__(self, calls: list, error: Exception | None = None):
        self.calls, self.error = calls, error

    def from_pretrained(self, source, **kwargs):
        self.calls.append((str(source), kwargs.get("revision")))
        if self.error is not None:
            raise self.error
        return SimpleNamespace(source=source)


@pytest.fixture
def fake_transformers(monkeypatch):
    """A ``transformers`` module whose loaders record their calls (and ``_save`` records the folder)."""
    state = SimpleNamespace(calls=[], error=None, saved=[])
    module = ModuleType("transformers")
    module.AutoTokenizer = _Loader(state.calls)
    module.AutoModelForCausalLM = _Loader(state.calls)
    monkeypatch.setitem(sys.modules, "transformers", module)
    monkeypatch.setattr(models, "_save", lambda model, tokenizer, out_dir: state.saved.append(str(out_dir)))

    def fail_with(error):
        module.AutoTokenizer.error = error

    state.fail_with = fail_with
    return state


def test_split_revision_forms():
    assert split_revision("org/model") == ("org/model", None)
    assert split_revision("org/model", SHA) == ("org/model", SHA)
    assert split_revision(f"org/model@{SHA}") == ("org/model", SHA)
    assert split_revision(f"org/model@{SHA}", SHA) == ("org/model", SHA)
    with pytest.raises(ValueError, match="eval_models.x: 'org/model@abc' pins revision 'abc' but revision is 'def'"):
        split_revision("org/model@abc", "def", "eval_models.x")
    with pytest.raises(ValueError, match="is not '<hub id>@<revision>'"):
        split_revision("org/model@", key="sort.rag.embedder")


def test_pinned_hub_id_passes_its_revision(fake_transformers, notes, tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        from_hub(f"org/model@{SHA}", tmp_path / "out", key="eval_models.zephyr-7b")
    assert fake_transformers.calls == [("org/model", SHA), ("org/model", SHA)]
    assert fake_transformers.saved == [str(tmp_path / "out")]
    assert "unpinned_hub_ids" not in notes and not caplog.records


def test_unpinned_hub_id_warns_and_is_noted_in_the_manifest(fake_transformers, notes, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="knowlab.core.models"):
        from_hub("org/model", tmp_path / "a", key="eval_models.a")
        from_hub("org/other", tmp_path / "b", None, key="model.hub.id")
        from_hub("org/branch@main", tmp_path / "c", key="eval_models.c")
    assert fake_transformers.calls[0] == ("org/model", None)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("eval_models.a: Hub id org/model has no pinned revision" in m for m in warnings)
    assert any(
        "eval_models.c: Hub id org/branch has revision 'main', a branch or tag rather than a commit sha" in m
        for m in warnings
    )
    assert fake_transformers.calls[-1] == ("org/branch", "main")
    assert notes["unpinned_hub_ids"] == {
        "org/model": "eval_models.a",
        "org/other": "model.hub.id",
        "org/branch": "eval_models.c",
    }


def test_missing_local_model_folder_names_key_and_path(fake_transformers, tmp_path):
    missing = tmp_path / "models" / "mine"
    with pytest.raises(CheckpointError, match=f"eval_models.mine: local model folder '{missing}' does not exist"):
        from_hub(str(missing), tmp_path / "out", key="eval_models.mine")
    cfg = {"source": "hub", "hub": {"id": "./no/such/folder", "revision": None}}
    with pytest.raises(CheckpointError, match="model.hub.id: local model folder './no/such/folder' does not exist"):
        models.prepare_base_model(models.BaseModelSettings.from_config({"model": cfg}), tmp_path / "base", seed=0)
    assert fake_transformers.calls == [] and not (tmp_path / "out").exists()


def test_existing_local_folder_loads_without_revision_or_warning(fake_transformers, notes, tmp_path):
    folder = tmp_path / "my-model"
    folder.mkdir()
    from_hub(str(folder), tmp_path / "out", key="eval_models.mine")
    assert fake_transformers.calls == [(str(folder), None), (str(folder), None)]
    assert notes == {}


def test_unreachable_hub_id_names_key_id_and_the_hub(fake_transformers, notes, tmp_path):
    fake_transformers.fail_with(LocalEntryNotFoundError("Cannot find the requested files in the local cache"))
    cfg = {"source": "hub", "hub": {"id": "org/model", "revision": SHA}}
    with pytest.raises(HubUnreachableError, match=f"model.hub.id: could not fetch Hub id 'org/model' at revision {SHA}: "
                       "the Hugging Face Hub could not be reached") as raised:  # fmt: skip
        models.prepare_base_model(models.BaseModelSettings.from_config({"model": cfg}), tmp_path / "base", seed=0)
    assert isinstance(raised.value.__cause__, LocalEntryNotFoundError)
    assert fake_transformers.saved == []
    with pytest.raises(ValueError, match="model.hub.id: model.source is hub but no Hub id"):
        models.prepare_base_model(models.BaseModelSettings("hub", {"id": None}), tmp_path / "base", seed=0)


def test_embedder_hub_id_revision_and_unreachable(monkeypatch, notes, tmp_path):
    calls = []

    class FakeSentenceTransformer:
        def __init__(self, name, device=None, revision=None, model_kwargs=None):
            calls.append((name, revision))
            if name == "org/down":
                raise OSError("We couldn't connect to 'https://huggingface.co'")

    module = ModuleType("sentence_transformers")
    module.SentenceTransformer = FakeSentenceTransformer
    monkeypatch.setitem(sys.modules, "sentence_transformers", module)
    monkeypatch.setattr(retrieval, "current_compute", lambda: SimpleNamespace(device="cpu", torch_dtype="float32"))

    retrieval.load_embedder(f"BAAI/bge-large-en-v1.5@{SHA}", key="sort.rag.embedder")
    retrieval.load_embedder("facebook/contriever", key="grounding.retriever")
    assert calls == [("BAAI/bge-large-en-v1.5", SHA), ("facebook/contriever", None)]
    assert notes["unpinned_hub_ids"] == {"facebook/contriever": "grounding.retriever"}
    with pytest.raises(
        HubUnreachableError, match="sort.rag.embedder: could not fetch Hub id 'org/down'.*Hub could not"
    ):
        retrieval.load_embedder("org/down", key="sort.rag.embedder")
    with pytest.raises(
        CheckpointError, match="sort.rag.embedder: local model folder '/no/such/embedder' does not exist"
    ):
        retrieval.load_embedder("/no/such/embedder", key="sort.rag.embedder")


def test_dataset_loaders_pass_revisions_and_note_unpinned_ids(monkeypatch, notes, tmp_path):
    """TriviaQA, the FictionalQA release, Book-SORT and OpenHermes: revision passed, bare ids noted."""
    calls = []

    def load_dataset(path, *args, **kwargs):
        calls.append((path, kwargs.get("revision")))
        if path == "org/down":
            raise ConnectionError("Couldn't reach 'org/down' on the Hub (LocalEntryNotFoundError)")
        raise _Stop  # stop after the call: the rows are not what is tested here

    def snapshot_download(repo_id, repo_type, revision, allow_patterns, local_dir):
        calls.append((repo_id, revision))
        raise LocalEntryNotFoundError("offline")

    fake_datasets = ModuleType("datasets")
    fake_datasets.load_dataset = load_dataset
    monkeypatch.setitem(sys.modules, "datasets", fake_datasets)
    monkeypatch.setattr("huggingface_hub.snapshot_download", snapshot_download)

    with pytest.raises(_Stop):
        real_qa.load_triviaqa(f"mandarjoshi/trivia_qa@{SHA}")
    with pytest.raises(_Stop):
        sort_release.load_booksort_release("memari/booksort")
    with pytest.raises(_Stop):
        instructions.load_openhermes("teknium/OpenHermes-2.5", n=1, seed=0, revision=SHA)
    with pytest.raises(
        HubUnreachableError, match="fiction.release.hub_id: could not fetch Hub id 'tomg-group-umd/fictionalqa'"
    ):
        release.load_release(None, "tomg-group-umd/fictionalqa", None, cache_dir=tmp_path)
    with pytest.raises(HubUnreachableError, match="real_qa.triviaqa.hub_id: could not fetch Hub id 'org/down'"):
        real_qa.load_triviaqa("org/down", revision=SHA)
    assert calls == [
        ("mandarjoshi/trivia_qa", SHA),
        ("memari/booksort", None),
        ("teknium/OpenHermes-2.5", SHA),
        ("tomg-group-umd/fictionalqa", None),
        ("org/down", SHA),
    ]
    assert notes["unpinned_hub_ids"] == {
        "memari/booksort": "sort.release.path",
        "tomg-group-umd/fictionalqa": "fiction.release.hub_id",
    }
