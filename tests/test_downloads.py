"""Downloads before the cluster (knowlab.downloads, knowlab.core.hub): every rule that fetches from the network is
a local rule (the submit host's network), and the cluster jobs read what it fetched from local folders: on
config/paper.yaml's DAG through the SLURM profile, and in the loaders (no network once a download is there)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
import yaml

from knowlab import downloads
from knowlab.config import load_config
from knowlab.core import hub
from knowlab.core.hub import HubSnapshot
from knowlab.core.models import HubUnreachableError, download_snapshot, from_hub, resolve_model
from knowlab.tooling.slurm import LocalRules, printed_jobs

ROOT = Path(__file__).resolve().parents[1]
SHA = "4e20de362430cd3b72f300e6b0f18e50e7166e08"
PREFIX = "knowlab_"  # tests/conftest.py's MODULE_SNAKEFILE: use rule * from knowlab as knowlab_*


def test_a_config_value_names_a_hub_snapshot_or_none(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    snapshot = downloads.snapshot_of(f"meta-llama/Llama-3.2-1B@{SHA}")
    assert snapshot == HubSnapshot("meta-llama/Llama-3.2-1B", SHA, "model")
    assert snapshot.folder == f"resources/hub/models/meta-llama/Llama-3.2-1B/{SHA}"
    assert downloads.snapshot_of("gpt2", "v1/x", "dataset").folder == "resources/hub/datasets/gpt2/v1--x"
    assert downloads.snapshot_of("BAAI/bge-large-en-v1.5").key == "models/BAAI/bge-large-en-v1.5/unpinned"
    (tmp_path / "owner").mkdir()
    (tmp_path / "owner" / "mine").mkdir()
    for local in (None, "", "packaged:all-MiniLM-L6-v2", "./models/mine", "/abs/model", "a/b/c", "owner/mine"):
        assert downloads.snapshot_of(local) is None, local
    with pytest.raises(ValueError, match="pins revision 'a' but revision is 'b'"):
        downloads.snapshot_of("owner/name@a", "b", key="model.hub.id")
    with pytest.raises(ValueError, match="model.hub.id: not a Hub id: 'own er/name'"):
        downloads.snapshot_of("own er/name", key="model.hub.id")
    with pytest.raises(ValueError, match="Hub repository type must be one of"):
        HubSnapshot("owner/name", None, "space")


def test_the_snapshots_of_the_shipped_configs():
    assert downloads.snapshots(load_config()) == {} == downloads.snapshots(load_config(ROOT / "config" / "test.yaml"))
    paper = downloads.snapshots(load_config(ROOT / "config" / "paper.yaml"))
    assert {snapshot.folder for snapshot in paper.values()} == _paper_hub_reads()["all"]
    assert paper["datasets/teknium/OpenHermes-2.5/unpinned"].repo_type == "dataset"


def test_a_model_download_leaves_out_what_no_loader_reads():
    files = ["config.json", "model.safetensors", "pytorch_model.bin", "original/consolidated.00.pth", "x.gguf"]
    ignored = hub.ignore_patterns("model", files)
    assert "original/*" in ignored and "*.gguf" in ignored and hub.PICKLED_WEIGHTS in ignored
    assert hub.PICKLED_WEIGHTS not in hub.ignore_patterns("model", ["config.json", "pytorch_model.bin"])
    assert hub.ignore_patterns("dataset", files) == []


class _Info:
    sha = SHA

    class _File:
        def __init__(self, name):
            self.rfilename = name

    siblings = [_File("config.json"), _File("model.safetensors"), _File("pytorch_model.bin")]


def test_download_fetches_one_commit_and_says_what_a_gated_model_needs(tmp_path, monkeypatch):
    import httpx2
    import huggingface_hub
    from huggingface_hub.errors import GatedRepoError

    calls = {}

    def fake_snapshot_download(repo_id, **kwargs):
        calls.update(kwargs, repo_id=repo_id)
        folder = Path(kwargs["local_dir"])
        (folder / "config.json").write_text("{}")
        (folder / ".cache" / "huggingface").mkdir(parents=True)
        return str(folder)

    monkeypatch.setattr(huggingface_hub.HfApi, "repo_info", lambda self, repo, **kwargs: _Info())
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    snapshot = HubSnapshot("owner/name", None)  # unpinned: the default branch's commit is downloaded
    assert download_snapshot(snapshot, tmp_path / "out") == SHA
    assert calls["revision"] == SHA and calls["repo_type"] == "model" and "*.bin" in calls["ignore_patterns"]
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["config.json"]  # no download metadata

    response = httpx2.Response(403, request=httpx2.Request("GET", "https://huggingface.co/api/models/owner/name"))

    def gated(self, repo, **kwargs):
        raise GatedRepoError("403 gated", response=response)

    monkeypatch.setattr(huggingface_hub.HfApi, "repo_info", gated)
    with pytest.raises(HubUnreachableError, match=r"owner/name is gated: set HF_TOKEN .* accepted its licence"):
        download_snapshot(snapshot, tmp_path / "gated", key="model.hub.id")

    def offline(self, repo, **kwargs):
        raise httpx2.ConnectError("no route to host")

    monkeypatch.setattr(huggingface_hub.HfApi, "repo_info", offline)
    with pytest.raises(HubUnreachableError, match="model.hub.id: could not fetch Hub id 'owner/name'"):
        download_snapshot(snapshot, tmp_path / "offline", key="model.hub.id")
    assert not (tmp_path / "gated").exists() and not (tmp_path / "offline").exists()


def _tree_hashes(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()
    }


def test_a_hub_model_is_read_from_its_download_without_the_network(tmp_path, monkeypatch, tiny_model_dir):
    """The loaders read a Hub id from rule hub_download's folder under the working directory, offline; the
    conversion of that folder is the conversion of the same model from any folder, byte for byte."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert resolve_model(f"someone/tiny@{SHA}", None, "model.hub.id") == ("someone/tiny", SHA, True)
    folder = tmp_path / HubSnapshot("someone/tiny", SHA).folder
    shutil.copytree(tiny_model_dir, folder)
    assert resolve_model(f"someone/tiny@{SHA}", None, "model.hub.id") == (
        str(folder.relative_to(tmp_path)),
        None,
        False,
    )
    from_hub(f"someone/tiny@{SHA}", tmp_path / "via_download")
    from_hub(str(tiny_model_dir), tmp_path / "direct")
    assert _tree_hashes(tmp_path / "via_download") == _tree_hashes(tmp_path / "direct")


def test_openhermes_is_read_from_its_download_without_the_network(tmp_path, monkeypatch):
    from knowlab.sort.instructions import load_openhermes

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = tmp_path / HubSnapshot(downloads.OPENHERMES_HUB_ID, None, "dataset").folder
    folder.mkdir(parents=True)
    rows = [
        {"conversations": [{"from": "human", "value": f"q{i}"}, {"from": "gpt", "value": f"a{i}"}], "category": c}
        for i, c in enumerate(["general", "coding", "general", "trivia"])
    ]
    (folder / "openhermes.json").write_text(json.dumps(rows))
    out = load_openhermes(n=2, seed=0, cache_dir=tmp_path / "cache")
    assert len(out) == 2 and all(m[0]["role"] == "user" for m in out)


def test_every_download_rule_is_a_local_rule_and_no_other_rule_reads_the_hub():
    local = LocalRules(ROOT)
    assert set(downloads.DOWNLOAD_RULES) <= local
    # the cluster jobs that convert or read what hub_download fetched are not local (the heavy part)
    assert not {"base_model", "finetune_base_model", "eval_model", "sort_parametric_texts", "grounding_score"} & local


# ------------------------------------------------------------------------ config/paper.yaml's DAG


def _paper_hub_reads() -> dict[str, set[str]]:
    """What the paper's jobs read from the Hub, by rule (a base model's or an evaluated model's by its output
    folder's name), as folders under resources/hub: written here from config/paper.yaml's own text and the
    grounding evaluator's default, apart from knowlab.downloads; ``all``: every one."""
    text = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())

    def folder(spec: str, revision: str | None = None, kind: str = "models") -> str:
        hub_id, _, pinned = spec.partition("@")
        return f"resources/hub/{kind}/{hub_id}/{pinned or revision or 'unpinned'}"

    model = text["model"]["hub"]
    reads = {
        "base_model": {folder(model["id"], model["revision"])},
        "sort_retrieval": {folder(text["sort"]["rag"]["embedder"])},
        "grounding_distractors": {folder(text["grounding"]["retriever"])},
        "grounding_score": {folder("cross-encoder/ms-marco-MiniLM-L-12-v2")},  # the cross-encoder's default
        "grounding_checkpoint_score": {folder("cross-encoder/ms-marco-MiniLM-L-12-v2")},
        "sort_parametric_texts": {folder("teknium/OpenHermes-2.5", kind="datasets")},
    }
    for name, entry in text["finetune"]["models"].items():
        if entry != "base":
            reads[f"finetune_base_model resources/base_models/{name}"] = {
                folder(entry["hub"]["id"], entry["hub"]["revision"])
            }
    for name, spec in text["eval_models"].items():
        if spec != "base":
            reads[f"eval_model resources/models/{name}"] = {folder(spec)}
    reads["all"] = set().union(*reads.values())
    return reads


def _check_downloads(printout: str, local: LocalRules, prefix: str = "") -> None:
    """The checks of the two tests below on a dry run's printout; ``local``: the workflow's local rules (a dry
    run prints every job as ``rule``; ``localrule: True`` is read from the rules, as Snakemake defines them)."""
    jobs = [job for job in printed_jobs(printout) if job.rule.startswith(prefix)]
    assert len(jobs) > 1900
    rules = {job.rule.removeprefix(prefix) for job in jobs}
    # every job of a rule that downloads runs on the submit host
    downloading = [job for job in jobs if job.rule.removeprefix(prefix) in downloads.DOWNLOAD_RULES]
    assert {"hub_download", "fictionalqa_real_qa", "fictionalqa_corpus", "grounding_items"} <= rules
    assert downloading and not [f"{job.rule} {job.output}" for job in downloading if job.rule not in local]
    # one download per Hub repository the jobs read, and no other
    reads = _paper_hub_reads()
    fetched = {job.output for job in jobs if job.rule == f"{prefix}hub_download"}
    assert fetched == reads["all"]
    # each cluster job that reads a Hub repository has its download among its inputs; a cluster job's inputs
    # are files of the checkout or of the run, and every download it reads is a local job's
    missing, remote = [], []
    for job in jobs:
        if job.rule in local:
            continue
        rule = job.rule.removeprefix(prefix)
        want = reads.get(rule, set()) | reads.get(f"{rule} {job.output}", set())
        missing += [f"{job.rule} {job.output}: {need}" for need in sorted(want - set(job.inputs))]
        remote += [
            f"{job.rule}: {p}"
            for p in job.inputs
            if "://" in p or not p.startswith((str(ROOT), "results/", "resources/"))
        ]
        assert {p for p in job.inputs if p.startswith(hub.FOLDER)} <= fetched
    assert not missing, "\n".join(missing[:5])
    assert not remote, "\n".join(remote[:5])
    read = {rule.split(" ")[0] for rule, needs in reads.items() if needs and rule != "all"}
    assert read <= rules  # the table above names jobs the DAG has


def test_the_papers_downloads_run_on_the_submit_host_and_its_cluster_jobs_read_local_folders(paper_slurm_dry_run):
    """config/paper.yaml through workflow/profiles/slurm (tests/conftest.py): every job of a download rule
    (knowlab.downloads.DOWNLOAD_RULES) is a local rule's, one hub_download per Hub repository the jobs read,
    and every cluster job that reads a model (or the instruction data) from the Hub lists that download
    among its inputs (its loader reads it from there: the tests above), so none needs a network."""
    _check_downloads(paper_slurm_dry_run, LocalRules(ROOT))


@pytest.mark.slow
def test_a_module_downloads_on_the_submit_host_too(paper_module_slurm_dry_run, module_snakefile, tmp_path):
    """The same through the workflow used as a module (``use rule * from knowlab as knowlab_*``): the
    ``localrule`` mark travels with each rule, so the profile needs no entry per rule name."""
    (tmp_path / "Snakefile").write_text(module_snakefile)
    local = LocalRules(tmp_path)
    assert f"{PREFIX}hub_download" in local and "hub_download" not in local
    _check_downloads(paper_module_slurm_dry_run, local, PREFIX)
