"""knowlab.tooling.source: the list of the package's files is current, and a copy of the checkout made
from a git source or a URL holds the source's bytes, rewrites only what changed and says where it came
from (the workflow read over HTTP as a module, end to end: tests/workflow/test_remote_module.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from snakemake.sourcecache import GenericSourceFile, GithubFile, LocalGitFile, LocalSourceFile

from knowlab.core import provenance
from knowlab.tooling import source

ROOT = Path(__file__).resolve().parents[2]


def test_the_package_files_list_is_current():
    """workflow/package-files.txt lists the checkout's files under PACKAGE_PATHS, every one the package
    imports or its jobs read from the checkout (a remote module copies only these)."""
    listed = (ROOT / source.PACKAGE_FILES).read_text()
    stale = f"{source.PACKAGE_FILES} is stale: run `PYTHONPATH=src python -m knowlab.tooling.source`"
    assert listed == source.render(source.package_files(ROOT)), stale
    files = set(source.read_listing(listed))
    package = {p.relative_to(ROOT).as_posix() for p in (ROOT / "src" / "knowlab").rglob("*.py")}
    assert package <= files, sorted(package - files)
    assert {"pyproject.toml", "README.md", "config/config.yaml", "config/schema.yaml"} <= files
    assert {f"data/fiction/{table}.jsonl" for table in ("seeds", "fictsheets", "fictions", "fict_qa")} <= files
    assert not any("__pycache__" in name or name.endswith(".pyc") for name in files)
    assert source.main(["--root", str(ROOT), "--check"]) == 0


def test_a_listing_names_only_paths_inside_the_checkout():
    assert source.read_listing("# header\n\nsrc/a.py\ndata/b.jsonl\n") == ["src/a.py", "data/b.jsonl"]
    for bad in ("../outside", "/etc/passwd", "src/../../x", "src//a.py"):
        with pytest.raises(source.SourceError, match="inside the checkout"):
            source.read_listing(f"{bad}\n")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", *args],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


@pytest.fixture
def repo(tmp_path) -> Path:
    """A git repository on branch main: a listing of three files, one without a final newline (git as
    Snakemake reads it drops a file's last newline; the copy must not)."""
    repo = tmp_path / "repo"
    (repo / "workflow").mkdir(parents=True)
    (repo / "src" / "pkg").mkdir(parents=True)
    (repo / source.PACKAGE_FILES).write_text(source.render(["data.jsonl", "no-newline.txt", "src/pkg/__init__.py"]))
    (repo / "data.jsonl").write_text('{"a": 1}\n')
    (repo / "no-newline.txt").write_bytes(b"last line")
    (repo / "src" / "pkg" / "__init__.py").write_text("X = 1\n")
    (repo / "unlisted.txt").write_text("not copied\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "one")
    return repo


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file() and p.name != source.SOURCE_RECORD
    }


def test_a_local_folder_is_the_checkout_itself(tmp_path):
    assert source.checkout(LocalSourceFile(str(ROOT)), fetch=None, folder=tmp_path / "copy") == ROOT
    assert not (tmp_path / "copy").exists()


def test_a_git_source_is_copied_at_its_commit_and_later_commits_rewrite_only_what_changed(repo, tmp_path):
    """The listed files at the branch's commit, byte for byte; the same commit again reads nothing; a
    new commit rewrites the changed file only and removes the file it no longer lists."""
    copy = tmp_path / "copy"
    basedir = LocalGitFile(str(repo), "", ref="main")
    assert source.checkout(basedir, fetch=None, folder=copy) == copy
    expected = {name: (repo / name).read_bytes() for name in ("data.jsonl", "no-newline.txt", "src/pkg/__init__.py")}
    assert _files(copy) == expected
    record = json.loads((copy / source.SOURCE_RECORD).read_text())
    assert record["commit"] == _git(repo, "rev-parse", "HEAD") and record["files"] == sorted(expected)
    unchanged = (copy / "data.jsonl").stat().st_mtime_ns
    written = (copy / source.SOURCE_RECORD).stat().st_mtime_ns
    assert source.checkout(basedir, fetch=None, folder=copy) == copy  # the same commit: nothing written
    assert (copy / source.SOURCE_RECORD).stat().st_mtime_ns == written

    (repo / "src" / "pkg" / "__init__.py").write_text("X = 2\n")
    (repo / source.PACKAGE_FILES).write_text(source.render(["data.jsonl", "src/pkg/__init__.py"]))
    _git(repo, "commit", "-qam", "two")
    source.checkout(basedir, fetch=None, folder=copy)
    assert _files(copy) == {"data.jsonl": b'{"a": 1}\n', "src/pkg/__init__.py": b"X = 2\n"}
    assert (copy / "data.jsonl").stat().st_mtime_ns == unchanged
    assert json.loads((copy / source.SOURCE_RECORD).read_text())["commit"] == _git(repo, "rev-parse", "HEAD")


def test_a_github_source_is_read_from_snakemakes_clone_of_it(repo, tmp_path):
    """github(...): the files come from Snakemake's bare clone of the repository (here one of a local
    repository, found under the cache path as Snakemake keeps it: no network), at the tag's commit."""
    _git(repo, "tag", "v1")
    cache = tmp_path / "cache"
    name = f"owner/{tmp_path.name}"  # a name of its own: Snakemake keeps one clone per repository name
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(cache / "github.com" / name)], check=True)
    basedir = GithubFile(repo=name, path="", tag="v1", cache_path=cache)
    copy = source.checkout(basedir, fetch=None, folder=tmp_path / "copy")
    assert _files(copy)["no-newline.txt"] == b"last line" and len(_files(copy)) == 3
    record = json.loads((copy / source.SOURCE_RECORD).read_text())
    assert record["commit"] == _git(repo, "rev-parse", "v1")
    assert record["source"] == f"https://raw.githubusercontent.com/{name}/v1/"


def test_a_url_is_copied_through_the_fetch_function(repo, tmp_path):
    """Any other source: every listed file through ``fetch`` (the Snakefile's workflow.source_path); a
    file that fails to arrive fails the copy."""
    fetched = []

    def fetch(path: str) -> str:
        fetched.append(path)
        return str(repo / path)

    copy = source.checkout(GenericSourceFile("https://example.org/knowlab"), fetch, folder=tmp_path / "copy")
    assert fetched == [source.PACKAGE_FILES, "data.jsonl", "no-newline.txt", "src/pkg/__init__.py"]
    assert _files(copy)["no-newline.txt"] == b"last line"
    record = json.loads((copy / source.SOURCE_RECORD).read_text())
    assert record["source"] == "https://example.org/knowlab" and record["commit"] is None
    (repo / "data.jsonl").unlink()
    with pytest.raises(FileNotFoundError):
        source.checkout(GenericSourceFile("https://example.org/knowlab"), fetch, folder=tmp_path / "copy")


def test_a_job_records_the_copy_it_ran_from(tmp_path, monkeypatch):
    """knowlab.core.provenance reads the record by the name this module writes it under: a manifest's
    ``git`` names the source (and its commit when it has one) instead of a git checkout's commit."""
    assert provenance.SOURCE_RECORD == source.SOURCE_RECORD
    copy = tmp_path / "copy"
    (copy / "src" / "knowlab" / "core").mkdir(parents=True)
    facts = {"source": "https://example.org/knowlab", "commit": None, "sha256": "ab", "files": []}
    (copy / source.SOURCE_RECORD).write_text(json.dumps(facts))
    monkeypatch.setattr(provenance, "__file__", str(copy / "src" / "knowlab" / "core" / "provenance.py"))
    assert provenance.package_source() == {
        "commit": None, "dirty": None, "source": "https://example.org/knowlab", "sha256": "ab",
    }  # fmt: skip


def test_rule_files_are_named_relative_to_the_workflows_source(tmp_path):
    """A local checkout: as os.path.relpath names them; a URL: the address less the workflow's."""
    local = LocalSourceFile(str(tmp_path))
    assert source.relative_source(local, str(tmp_path / "rules" / "a.smk")) == "rules/a.smk"
    assert source.relative_source(local, LocalSourceFile(str(tmp_path / "rules")), "../envs/x.yaml") == "envs/x.yaml"
    remote = GenericSourceFile("http://127.0.0.1:8000")
    rules = GenericSourceFile("http://127.0.0.1:8000/rules")
    assert source.relative_source(remote, "http://127.0.0.1:8000/rules/a.smk") == "rules/a.smk"
    assert source.relative_source(remote, rules, "../envs/x.yaml") == "envs/x.yaml"
    assert source.relative_source(remote, "https://elsewhere.org/x.smk") == "https://elsewhere.org/x.smk"


def test_the_copy_goes_first_on_the_jobs_pythonpath_once():
    environ = {"PYTHONPATH": "/elsewhere"}
    assert source.first_on_pythonpath("/copy/src", environ) == "/copy/src:/elsewhere"
    assert source.first_on_pythonpath("/copy/src", environ) == "/copy/src:/elsewhere"
    assert source.first_on_pythonpath("/copy/src", {}) == "/copy/src"
