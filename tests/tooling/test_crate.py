"""The Workflow Run RO-Crate of a run: a CreateAction per job (instrument, object, result), files with
their recorded sha256, the Provenance Run Crate's steps and run actions; byte-identical when built
twice; valid for roc-validator's provenance-run-crate-0.5 profile at the REQUIRED level.

The run is synthetic, in ``tmp_path``: a ``Snakefile`` including ``rules/demo.smk`` (three rules
with a conda env), a raw file ``data/raw.txt``, job A writing ``results/a/a.txt``, job B the folder
``results/b``, job C ``results/c/target.csv`` and the findings job ``results/findings.json``, each
with a manifest holding the real sha256 of its files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from knowlab.core.io import sha256_file
from knowlab.tooling.crate import PROFILES, build_crate, rule_sources

COMMIT = "0123abcd" * 5
SMK = """\
rule make_a:
    input:
        "data/raw.txt",
    output:
        "results/a/a.txt",
    conda:
        "../envs/demo.yaml"
    script:
        "../scripts/a.py"


rule make_b:
    input:
        "results/a/a.txt",
    output:
        directory("results/b"),
    conda:
        "../envs/demo.yaml"
    script:
        "../scripts/b.py"


use rule make_b as make_c with:
    output:
        "results/c/target.csv",
"""


def _entry(base: Path, path: str) -> dict:
    full = base / path
    if full.is_dir():
        return {"path": path, "files": {p.name: sha256_file(p) for p in sorted(full.iterdir())}}
    return {"path": path, "sha256": sha256_file(full)}


def _manifest(base: Path, name: str, rule: str, inputs: list[str], outputs: list[str], config: dict) -> None:
    record = {
        "rule": rule,
        "wildcards": {"n": "2"} if rule == "make_b" else {},
        "inputs": [_entry(base, p) for p in inputs],
        "outputs": [_entry(base, p) for p in outputs],
        "config": config,
        "seed": config.get("seed"),
        "git": {"commit": COMMIT, "dirty": False},
        "packages": {"pandas": "3.1.1", "snakemake": "9.27.1", "torch": "2.13.0+cpu", "deepspeed": None},
        "python": "3.11.7",
        "platform": "Linux-test",
        "notes": {"hub_id": "org/model"} if rule == "make_a" else {},
    }
    (base / name).parent.mkdir(parents=True, exist_ok=True)
    (base / name).write_text(json.dumps(record, indent=2))


@pytest.fixture
def run(tmp_path) -> Path:
    base = tmp_path / "run"
    for folder in ("data", "rules", "envs", "config", "results/a", "results/b", "results/c"):
        (base / folder).mkdir(parents=True)
    (base / "Snakefile").write_text('configfile: "config/config.yaml"\n\n\ninclude: "rules/demo.smk"\n')
    (base / "rules/demo.smk").write_text(SMK)
    (base / "envs/demo.yaml").write_text("name: demo\ndependencies:\n  - python=3.11\n")
    (base / "config/config.yaml").write_text("seed: 7\n")
    (base / "LICENSE").write_text("MIT License\n\nCopyright (c) 2026 the demo authors\n")
    (base / "data/raw.txt").write_text("raw input\n")
    (base / "results/a/a.txt").write_text("a from raw\n")
    a_config = {"settings": {"model": {"spec": "pkg==1.0", "sha256": "ab" * 32}, "rate": 0.5, "flag": True}, "seed": 7}
    _manifest(base, "results/a/a.manifest.json", "make_a", ["data/raw.txt"], ["results/a/a.txt"], a_config)
    (base / "results/b/x.txt").write_text("b x\n")
    _manifest(base, "results/b.manifest.json", "make_b", ["results/a/a.txt"], ["results/b"], {"k": 3})
    (base / "results/c/target.csv").write_text("x,y\n1,2\n")
    _manifest(base, "results/c/manifest.json", "make_c", ["results/b", "data/raw.txt"], ["results/c/target.csv"], {})
    record = {"claim_id": "demo.higher", "study": "Demo", "claim": "C above chance", "status": "supported"}
    record.update({"effect": 1.5, "ci_low": 1.0, "ci_high": 2.0, "p": 0.01, "n": 10, "figure": "c/target.csv"})
    (base / "results/findings.json").write_text(json.dumps([record]))
    _manifest(
        base, "results/findings.manifest.json", "findings", ["results/c/target.csv"], ["results/findings.json"], {}
    )
    return base


def _graph(path: Path) -> dict[str, dict]:
    return {e["@id"]: e for e in json.loads(path.read_text())["@graph"]}


def _ids(value) -> set[str]:
    return {v["@id"] for v in (value if isinstance(value, list) else [value])}


def test_rule_sources_reads_rule_files_and_conda_envs(run):
    assert rule_sources(run) == {
        "make_a": {"file": "rules/demo.smk", "conda": "envs/demo.yaml"},
        "make_b": {"file": "rules/demo.smk", "conda": "envs/demo.yaml"},
        "make_c": {"file": "rules/demo.smk", "conda": "envs/demo.yaml"},  # from the rule it reuses
    }


def test_the_crate_has_a_create_action_per_job_with_hashed_inputs_and_outputs(run):
    path = build_crate(run, date_published="2026-01-02")
    assert path == run / "results/ro-crate/ro-crate-metadata.json"
    document = json.loads(path.read_text())
    assert document["@context"][0] == "https://w3id.org/ro/crate/1.1/context"
    g = _graph(path)
    root = g["./"]
    assert _ids(root["conformsTo"]) == set(PROFILES) and root["datePublished"] == "2026-01-02"
    assert root["mainEntity"] == {"@id": "../../Snakefile"} and root["license"] == {
        "@id": "https://spdx.org/licenses/MIT"
    }
    workflow = g["../../Snakefile"]
    assert {"File", "SoftwareSourceCode", "ComputationalWorkflow", "HowTo"} <= set(workflow["@type"])
    assert workflow["version"] == COMMIT
    assert _ids(workflow["hasPart"]) == {"#rule/make_a", "#rule/make_b", "#rule/make_c", "#rule/findings"}

    jobs = {k: e for k, e in g.items() if e["@type"] == "CreateAction" and k.startswith("#job/")}
    assert set(jobs) == {
        "#job/results/a/a.manifest.json",
        "#job/results/b.manifest.json",
        "#job/results/c/manifest.json",
        "#job/results/findings.manifest.json",
    }
    a, b, c = (
        jobs["#job/results/a/a.manifest.json"],
        jobs["#job/results/b.manifest.json"],
        jobs["#job/results/c/manifest.json"],
    )
    assert a["instrument"] == {"@id": "#rule/make_a"} and c["instrument"] == {"@id": "#rule/make_c"}
    assert _ids(a["result"]) == {"../a/a.txt", "../a/a.manifest.json"}
    assert {"../../data/raw.txt", "#job/results/a/a.manifest.json/param/seed"} <= _ids(a["object"])
    assert _ids(b["result"]) == {"../b/", "../b.manifest.json"}
    assert {"../b/", "../../data/raw.txt"} <= _ids(c["object"])
    # files and folders with the sha256 their jobs recorded
    assert g["../../data/raw.txt"]["sha256"] == sha256_file(run / "data/raw.txt")
    assert g["../a/a.txt"]["sha256"] == sha256_file(run / "results/a/a.txt")
    assert g["../b/"]["@type"] == "Dataset" and _ids(g["../b/"]["hasPart"]) == {"../b/x.txt"}
    assert g["../b/x.txt"]["sha256"] == sha256_file(run / "results/b/x.txt")
    # parameters, pins and facts of a job
    settings = g["#job/results/a/a.manifest.json/param/settings"]
    assert settings["exampleOfWork"] == {"@id": "#rule/make_a/param/settings"}
    assert json.loads(settings["value"])["rate"] == 0.5
    assert g["#rule/make_a/param/settings"]["@type"] == "FormalParameter"
    pin = g["#pin/pkg%3D%3D1.0/" + "ab" * 32]
    assert pin["identifier"] == "pkg==1.0" and pin["sha256"] == "ab" * 32 and pin["@id"] in _ids(a["object"])
    facts = {g[i]["name"]: g[i]["value"] for i in _ids(a["additionalProperty"])}
    assert facts["git-commit"] == COMMIT and facts["note/hub_id"] == "org/model" and facts["python"] == "3.11.7"
    # tools, steps, the run
    tool = g["#rule/make_a"]
    assert tool["@type"] == "SoftwareApplication" and tool["isPartOf"] == {"@id": "../../rules/demo.smk"}
    assert "https://pypi.org/project/torch/2.13.0%2Bcpu/" in _ids(tool["softwareRequirements"])
    assert g["https://pypi.org/project/torch/2.13.0%2Bcpu/"]["softwareVersion"] == "2.13.0+cpu"
    assert g["#step/make_a"]["workExample"] == {"@id": "#rule/make_a"}
    assert g["#step/make_a"]["buildInstructions"] == {"@id": "../../envs/demo.yaml"}
    controls = [e for e in g.values() if e["@type"] == "ControlAction"]
    assert {e["object"]["@id"] for e in controls} == set(jobs)
    organize = g["#organize"]
    assert organize["result"] == {"@id": "#run"} and organize["instrument"] == {
        "@id": "https://pypi.org/project/snakemake/9.27.1/"
    }
    assert g["#run"]["instrument"] == {"@id": "../../Snakefile"} and _ids(g["#run"]["object"]) == {"../../data/raw.txt"}
    # the finding as a Claim
    claim = g["#finding/0"]
    assert (
        claim["@type"] == "Claim"
        and claim["identifier"] == "demo.higher"
        and claim["creativeWorkStatus"] == "supported"
    )
    assert claim["isBasedOn"] == {"@id": "../c/target.csv"} and claim["isPartOf"] == {"@id": "../findings.json"}
    assert (run / "results/ro-crate/README.md").read_text().startswith("# Provenance of a knowlab workflow run")


def test_the_same_run_gives_the_same_bytes(run, tmp_path):
    first = build_crate(run).read_bytes()  # datePublished: no git here, so the code's newest mtime
    assert build_crate(run).read_bytes() == first
    other = build_crate(run, tmp_path / "elsewhere" / "crate")
    assert '"../../run/data/raw.txt"' in other.read_text()  # ids relative to the crate folder


@pytest.mark.slow
def test_roc_validator_finds_the_crate_a_valid_provenance_run_crate(run, validate_crate):
    crate = build_crate(run, date_published="2026-01-02").parent
    done = validate_crate(crate)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "is a valid provenance-run-crate-0.5" in done.stdout
    # and the check is real: a job without its tool is not a Process Run Crate
    metadata = crate / "ro-crate-metadata.json"
    document = json.loads(metadata.read_text())
    for entity in document["@graph"]:
        if entity["@id"] == "#job/results/b.manifest.json":
            del entity["instrument"]
    metadata.write_text(json.dumps(document))
    done = validate_crate(crate)
    report = " ".join(done.stdout.split())  # the report wraps its lines
    assert done.returncode == 1 and "[ process-run-crate-0.5_1.1 ] Action instrument" in report
    assert "Violation on <./#job/results/b.manifest.json>" in report
