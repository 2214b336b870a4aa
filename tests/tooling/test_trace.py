"""Trace: a result followed through the jobs' manifests down to its raw inputs, each job once;
broken links (a changed byte, a missing manifest, a stale read) exit 1 naming the file.

The run is synthetic, in ``tmp_path``: a raw file ``data/raw.txt``; job A (``make_a``) reads it and
writes ``results/a/a.txt``; job B (``make_b``) reads A's file and the raw file and writes the folder
``results/b``; job C (``make_c``) reads B's folder and A's file and writes the target
``results/c/target.csv``; the findings job reads the target and writes ``results/findings.json``.
Manifests carry the real sha256 of the files, as :mod:`knowlab.core.provenance` writes them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from knowlab.core.io import sha256_file
from knowlab.tooling.trace import main, render_text, to_dot, to_json, trace

PACKAGES = {"pandas": "3.1.1", "torch": None}
CLAIM = {
    "claim_id": "demo.higher",
    "study": "Demo",
    "claim": "C above chance",
    "status": "supported",
    "effect": 1.5,
    "ci_low": 1.0,
    "ci_high": 2.0,
    "p": 0.01,
    "n": 10,
    "test": "sign-flip permutation",
    "source": "Someone et al. (2026)",
    "figure": "c/target.csv",
}


def _entry(base: Path, path: str) -> dict:
    full = base / path
    if full.is_dir():
        return {"path": path, "files": {p.name: sha256_file(p) for p in sorted(full.iterdir())}}
    return {"path": path, "sha256": sha256_file(full)}


def write_manifest(base: Path, manifest: str, rule: str, inputs: list[str], outputs: list[str], **extra) -> None:
    """A manifest as knowlab.core.provenance.build_manifest writes it, hashing the files now."""
    record = {
        "rule": rule,
        "wildcards": extra.pop("wildcards", {}),
        "inputs": [_entry(base, p) for p in inputs],
        "outputs": [_entry(base, p) for p in outputs],
        "config": extra.pop("config", {"settings": {"k": 1}}),
        "seed": extra.pop("seed", None),
        "git": {"commit": "0123abcd" * 5, "dirty": False},
        "packages": PACKAGES,
        "python": "3.11.7",
        "platform": "Linux-test",
        "notes": extra.pop("notes", {}),
    }
    (base / manifest).parent.mkdir(parents=True, exist_ok=True)
    (base / manifest).write_text(json.dumps(record, indent=2))


def make_run(base: Path) -> Path:
    """The synthetic run of the module docstring, under ``base``."""
    for folder in ("data", "results/a", "results/b", "results/c"):
        (base / folder).mkdir(parents=True, exist_ok=True)
    (base / "data/raw.txt").write_text("raw input\n")
    (base / "results/a/a.txt").write_text("a from raw\n")
    write_manifest(
        base,
        "results/a/a.manifest.json",
        "make_a",
        ["data/raw.txt"],
        ["results/a/a.txt"],
        seed=7,
        config={"settings": {"model": {"file": "m.gguf", "sha256": "ab" * 32}}, "seed": 7},
    )
    (base / "results/b/x.txt").write_text("b x\n")
    (base / "results/b/y.txt").write_text("b y\n")
    write_manifest(
        base,
        "results/b.manifest.json",
        "make_b",
        ["results/a/a.txt", "data/raw.txt"],
        ["results/b"],
        wildcards={"n": "2"},
    )
    (base / "results/c/target.csv").write_text("x,y\n1,2\n")
    write_manifest(
        base, "results/c/manifest.json", "make_c", ["results/b", "results/a/a.txt"], ["results/c/target.csv"]
    )
    (base / "results/findings.json").write_text(json.dumps([CLAIM, dict(CLAIM, claim_id="demo.other")]))
    write_manifest(
        base, "results/findings.manifest.json", "findings", ["results/c/target.csv"], ["results/findings.json"]
    )
    return base


@pytest.fixture
def run(tmp_path) -> Path:
    return make_run(tmp_path)


def test_the_chain_shows_every_step_once_down_to_the_raw_input(run):
    result = trace("results/c/target.csv", run)
    assert result.whole and result.broken == []
    steps = {n["rule"]: n for n in result.nodes.values() if n["kind"] == "step"}
    assert sorted(steps) == ["make_a", "make_b", "make_c"]  # A reached from B and from C: one node
    assert result.depth == 3  # C <- B <- A <- raw: three steps on the longest chain
    assert result.roots == ["file:results/c/target.csv"]
    raw = result.nodes["raw:data/raw.txt"]
    digest = sha256_file(run / "data/raw.txt")
    assert raw["recorded"]["data/raw.txt"] == {"results/a/a.manifest.json": digest, "results/b.manifest.json": digest}
    assert raw["status"] == {"data/raw.txt": "ok"} and raw["current"] == {"data/raw.txt": digest}
    # the facts of a step: rule, wildcards, params, seed, code, packages, pins
    a = steps["make_a"]
    assert a["seed"] == 7 and a["git"]["commit"] == "0123abcd" * 5 and a["packages"]["pandas"] == "3.1.1"
    assert a["pins"] == [{"where": "config.settings.model.sha256", "sha256": "ab" * 32, "identifier": "m.gguf"}]
    assert steps["make_b"]["wildcards"] == {"n": "2"}
    assert {(s, t) for s, t, _ in result.edges} == {
        ("raw:data/raw.txt", "step:results/a/a.manifest.json"),
        ("raw:data/raw.txt", "step:results/b.manifest.json"),
        ("step:results/a/a.manifest.json", "step:results/b.manifest.json"),
        ("step:results/a/a.manifest.json", "step:results/c/manifest.json"),
        ("step:results/b.manifest.json", "step:results/c/manifest.json"),
        ("step:results/c/manifest.json", "file:results/c/target.csv"),
    }

    text = render_text(result)
    titles = [line.strip() for line in text.splitlines() if line.strip().startswith("step make_a")]
    assert len(titles) == 2 and titles[1].endswith("(see above)") and not titles[0].endswith("(see above)")
    assert sum(line.strip().startswith("step make_c") for line in text.splitlines()) == 1
    assert f"raw data/raw.txt  {digest}  ok" in text
    assert "pin config.settings.model.sha256 " + "ab" * 32 + " (m.gguf)" in text
    assert "code " + "0123abcd" * 5 + " (clean)  seed 7" in text
    assert "depth 3 (steps on the longest chain); 3 steps, 1 raw inputs" in text
    assert text.rstrip().endswith("trace: the chain is whole")

    doc = json.loads(json.dumps(to_json(result)))  # JSON-able as it is
    assert doc["depth"] == 3 and doc["whole"] and doc["broken"] == []
    by_id = {n["id"]: n for n in doc["nodes"]}
    c_inputs = {e["path"]: e for e in by_id["step:results/c/manifest.json"]["inputs"]}
    assert c_inputs["results/b"]["status"] == "ok" and set(c_inputs["results/b"]["file_status"]) == {"x.txt", "y.txt"}


def test_the_command_line_prints_text_json_and_exits_0(run, capsys):
    assert main(["results/c/target.csv", "--base", str(run), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["depth"] == 3 and len([n for n in doc["nodes"] if n["kind"] == "step"]) == 3
    assert main(["results/b/x.txt", "--base", str(run)]) == 0  # a file inside a folder output: job B
    out = capsys.readouterr().out
    assert "step make_b n=2" in out and "depth 2" in out
    folder = trace("results/b", run)  # a folder output: each of its recorded files checked
    assert (
        folder.whole
        and folder.depth == 2
        and folder.nodes["file:results/b"]["status"]
        == {
            "results/b/x.txt": "ok",
            "results/b/y.txt": "ok",
        }
    )


def test_one_changed_byte_in_the_raw_input_breaks_the_chain(run, capsys):
    data = bytearray((run / "data/raw.txt").read_bytes())
    data[0] ^= 1
    (run / "data/raw.txt").write_bytes(bytes(data))
    assert main(["results/c/target.csv", "--base", str(run)]) == 1
    out = capsys.readouterr().out
    broken = [line for line in out.splitlines() if line.startswith("broken:")]
    assert len(broken) == 1 and broken[0].startswith("broken: data/raw.txt: changed since")
    assert sha256_file(run / "data/raw.txt") in broken[0]
    assert "trace: 1 broken link(s)" in out


def test_a_results_file_without_a_manifest_breaks_the_chain(run, capsys):
    (run / "results/a/a.manifest.json").unlink()
    result = trace("results/c/target.csv", run)
    assert [(b.kind, b.path) for b in result.broken] == [("no-manifest", "results/a/a.txt")]
    assert set(result.broken[0].manifests) == {"results/b.manifest.json", "results/c/manifest.json"}
    assert "unrecorded:results/a/a.txt" in result.nodes
    assert main(["results/c/target.csv", "--base", str(run)]) == 1
    assert "broken: results/a/a.txt: no manifest under results/ or resources/" in capsys.readouterr().out


def test_a_changed_target_a_gone_file_and_a_stale_read_are_broken(run):
    (run / "results/c/target.csv").write_text("x,y\n1,3\n")
    (run / "results/b/y.txt").unlink()
    manifest = json.loads((run / "results/c/manifest.json").read_text())
    manifest["inputs"][1]["sha256"] = "0" * 64  # C read another a.txt than the one A wrote
    (run / "results/c/manifest.json").write_text(json.dumps(manifest))
    result = trace("results/c/target.csv", run)
    kinds = {(b.kind, b.path) for b in result.broken}
    assert ("changed", "results/c/target.csv") in kinds
    assert ("missing", "results/b/y.txt") in kinds
    assert ("stale", "results/a/a.txt") in kinds and ("changed", "results/a/a.txt") in kinds


def test_a_claim_id_traces_its_records_through_the_findings_job_and_its_figure(run, capsys):
    result = trace("demo.higher", run)
    assert result.roots == ["finding:demo.higher#0"]
    finding = result.nodes["finding:demo.higher#0"]
    assert (finding["status"], finding["effect"], finding["p"], finding["n"]) == ("supported", 1.5, 0.01, 10)
    assert result.children["finding:demo.higher#0"] == [
        "step:results/findings.manifest.json",
        "step:results/c/manifest.json",
    ]
    assert result.depth == 4 and result.whole  # findings <- C <- B <- A
    assert main(["demo.higher", "--base", str(run)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].startswith("finding demo.higher [supported] Demo: C above chance")
    assert "step findings  [results/findings.manifest.json]" in out


def test_an_unknown_target_exits_2(run, capsys):
    assert main(["no.such.claim", "--base", str(run)]) == 2
    assert "neither a file" in capsys.readouterr().err


def test_dot_is_a_digraph_with_the_data_flow_edges(run, capsys):
    assert main(["results/c/target.csv", "--base", str(run), "--dot"]) == 0
    dot = capsys.readouterr().out
    assert dot.startswith("digraph trace {") and dot.rstrip().endswith("}")
    edges = set(re.findall(r'^\s*"([^"]+)" -> "([^"]+)"', dot, re.M))
    assert edges == {(s, t) for s, t, _ in trace("results/c/target.csv", run).edges}
    nodes = dict(re.findall(r'^\s*"([^"]+)" \[shape=(\w+)', dot, re.M))
    assert nodes["raw:data/raw.txt"] == "note" and nodes["step:results/b.manifest.json"] == "box"
    # a broken link is red
    (run / "data/raw.txt").write_text("changed\n")
    assert 'label="data/raw.txt", color=red' in to_dot(trace("results/c/target.csv", run))
