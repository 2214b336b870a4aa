"""Every verdict names the protocol it was reached under (issue 60): the papers' settings that bear on each
claim (knowlab.findings.protocol), a run's departures from them on each line and record, and a note beside
the status where the claim rests on the departed setting."""

from pathlib import Path

import pytest

from knowlab.config import load_config
from knowlab.findings import CLAIMS, render
from knowlab.findings.base import Finding
from knowlab.findings.planner import plan_design
from knowlab.findings.protocol import (
    PAPER_SETTINGS,
    TRAINING,
    deviations,
    deviations_page,
    page_configs,
    run_protocol,
)

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "config" / "paper.yaml"
QWEN = "Qwen/Qwen2.5-0.5B"  # a base model outside the paper's suites


def _departed(config) -> dict[str, set[str]]:
    values = run_protocol(config)
    return {c.id: {d["setting"] for d in deviations(values, c.protocol, c.depends)} for c in CLAIMS}


@pytest.mark.parametrize(
    "overlay, label",
    [
        ({"finetune": {"lr": 3e-4}}, "lr"),
        ({"finetune": {"fiction_rate": 0.6}}, "fiction rate"),
        ({"finetune": {"models": {"llama-3.2-1b": "base", "qwen": {"source": "hub", "hub": {"id": QWEN}}}}}, "model"),
    ],
)  # fmt: skip
def test_a_change_of_lr_rate_or_models_departs_in_exactly_the_claims_it_bears_on(overlay, label):
    """config/paper.yaml with one setting changed: that setting, and nothing else, is added to the deviations
    of every FictionalQA claim (each names the training protocol), and to no SORT or grounding claim."""
    before, after = _departed(load_config(PAPER)), _departed(load_config(PAPER, overlay))
    for claim in CLAIMS:
        added = after[claim.id] - before[claim.id]
        assert added == ({label} if claim.study == "FictionalQA" else set()), (claim.id, added)
        assert before[claim.id] <= after[claim.id]


def test_every_line_and_record_of_a_run_carries_its_departures_and_only_the_relevant_ones():
    """The default's plan (decided by the same code as a run): its FictionalQA lines name the training
    protocol's departures (fiction rate 0.6 against 0.05 ...), its SORT and grounding lines none of them;
    the U shape's lines, which rest on the low fiction rate, say so beside their status, and a change of
    the lr adds the lr to exactly the FictionalQA lines that a test decided."""
    default = plan_design(load_config(), ROOT).findings
    tested = [f for f in default if f.effect is not None]
    for f in tested:
        settings = {d["setting"] for d in f.deviations}
        if f.study == "FictionalQA":
            assert {"fiction rate", "lr", "steps", "batch"} <= settings and "books" not in settings, f.claim
            assert f.protocol.startswith(", ".join(f"{d['setting']} {d['run']}" for d in f.deviations[:1]))
        else:
            assert not settings & {"fiction rate", "lr"}, f.claim
    lines = dict(zip([f.claim for f in default], render(default, "report.html").splitlines()[1:]))
    u_shape = next(f for f in tested if f.claim_id == "fqa.val_loss_rises_after")
    assert lines[u_shape.claim].startswith(
        f"[{u_shape.status}] (not the paper's protocol: fiction rate 0.6 (paper 0.05)) FictionalQA: "
    )
    assert "; under fiction rate 0.6 (paper 0.05), " in lines[u_shape.claim]
    mcq = next(f for f in tested if f.claim_id == "fqa.mcq_above_control")
    assert lines[mcq.claim].startswith(f"[{mcq.status}] FictionalQA: ")  # it rests on no departed setting
    assert "MCQ distractors ranked by base_model (paper ranked by Llama-3.2-3B-Instruct)" in mcq.protocol
    changed = plan_design(load_config({"finetune": {"lr": 5e-5, "min_lr": 5e-6}}), ROOT).findings
    for one, two in zip(default, changed):
        gone = {d["setting"] for d in one.deviations} - {d["setting"] for d in two.deviations}
        assert gone == ({"lr"} if one.study == "FictionalQA" and one.effect is not None else set()), one.claim


def test_a_record_holds_both_values_and_the_source():
    """findings.json's deviations: setting, the run's value, the paper's, the paper's section, and whether
    the claim rests on it."""
    record = deviations(run_protocol(load_config()), TRAINING, ("fiction_rate",))[0]
    assert record == {
        "setting": "fiction rate",
        "run": "0.6",
        "paper": "0.05",
        "source": "Kirchenbauer et al. (2026) Sec. 5",
        "depends": True,
    }


def test_the_catalogue_names_known_settings_and_rests_only_on_named_ones():
    keys = {s.key for s in PAPER_SETTINGS}
    for claim in CLAIMS:
        assert set(claim.protocol) <= keys and set(claim.depends) <= set(claim.protocol), claim.id
        if claim.study == "FictionalQA":
            assert set(TRAINING) <= set(claim.protocol), claim.id
    sizes = [c for c in CLAIMS if c.id.startswith("fqa.larger_models")]
    assert len(sizes) == 2 and all(c.depends == ("models",) for c in sizes)


def test_a_line_without_a_test_names_no_protocol():
    """A claim the config cannot test has no verdict to qualify."""
    line = Finding("FictionalQA", "c", "not tested", "one base model").claim
    assert render([Finding("FictionalQA", "c", "not tested", "one base model")], "r").splitlines()[1] == (
        f"[not tested] FictionalQA: {line} — one base model"
    )


def test_docs_deviations_holds_the_generated_table():
    page = ROOT / "docs" / "deviations.md"
    text = page.read_text(encoding="utf-8")
    assert text == deviations_page(
        text, page_configs()
    ), "docs/deviations.md is stale: python -m knowlab.findings --deviations docs/deviations.md"
