"""The whole generation chain with the local transformers backend and the packaged SmolLM2.

A tiny setting (1 seed, 2 styles, 1 document each, short outputs): every table written
must validate against the release schema. SmolLM2-135M follows the formats poorly, so
what it gets wrong must be dropped with a count, never written malformed.
"""

from pathlib import Path

from knowlab.config import load_config
from knowlab.core.io import read_jsonl
from knowlab.fiction.schema import validate_corpus, validate_record
from knowlab.fiction_generation import stages
from knowlab.fiction_generation.steps.data import make_generator, run_annotation, run_chain
from knowlab.fiction_generation.settings import stage_settings

ROOT = Path(__file__).resolve().parents[2]


def test_tiny_chain_with_smollm2_writes_only_schema_valid_tables(smollm2_dir, tmp_path, monkeypatch, one_thread):
    monkeypatch.chdir(tmp_path)  # torch on one thread: the suite runs on both cores already (make test)
    generate = dict(
        n_seeds=1, max_parse_retries=0,  # retries: tests/test_generation.py
        # one fiction: SmolLM2 reads long prompts on one thread (the replay tests cover the styles' mix)
        styles={"news": 1, "social": 0, "encyclopedia": 0, "corporate": 0, "blog": 0},
        max_tokens={"seeds": 64, "fictsheets": 128, "fictions": 80, "fict_qa": 160, "attempts": 24, "grades": 48},
    )
    settings = stage_settings(load_config({"fiction": {"generate": generate}}))
    generator = make_generator(settings["seeds"], 1234, ROOT, model_path=str(smollm2_dir), cache_dir="cache")
    run_chain(generator, settings, ".")
    run_annotation("fict_qa_raw.jsonl", ["grades_blind.jsonl", "grades_informed.jsonl"],
                   "packaged:all-MiniLM-L6-v2", 0.15, "annotated.jsonl", "fict_qa.jsonl")

    tables = {name: read_jsonl(f"{name}.jsonl") for name in ("seeds", "fictsheets", "fictions", "fict_qa")}
    assert len(tables["seeds"]) == 1 and len(tables["fictsheets"]) == 1
    assert [f["style"] for f in tables["fictions"]] == ["news"]
    for name, records in tables.items():
        for record in records:
            validate_record(name, record, f"{name}.jsonl")
    validate_corpus(tables)
    raw = read_jsonl("fict_qa_raw.jsonl")
    for record in raw:
        validate_record("fict_qa", record, "fict_qa_raw.jsonl")
    for kind in stages.ATTEMPT_KINDS:
        attempts = read_jsonl(f"attempts_{kind}.jsonl")
        assert {a["question_id"] for a in attempts} <= {q["question_id"] for q in raw}
        assert all(a["attempt"].strip() and isinstance(a["unknown"], bool) for a in attempts)
        for grade in read_jsonl(f"grades_{kind}.jsonl"):
            assert isinstance(grade["correct"], bool) and grade["graded_by"] in ("model", "unknown_answer")
    cached = list(Path("cache").glob("*/*.json"))
    assert len(cached) >= 1 + 1 + 2  # every request is on record
