"""The capacity plan (knowlab.tooling.capacity): its estimators, and the SLURM profile and README against it."""

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from knowlab.config import load_config
from knowlab.tooling import capacity
from knowlab.tooling.capacity import LLAMA_3_1_8B, LLAMA_3_2_1B, ParamCount

ROOT = Path(__file__).resolve().parents[2]
PROFILE = ROOT / "workflow" / "profiles" / "slurm"


@pytest.fixture(scope="module")
def paper():
    """config.yaml with paper.yaml merged over it and the schema's defaults, as ``--configfile config/paper.yaml``."""
    return load_config(ROOT / "config" / "paper.yaml")


@pytest.fixture(scope="module")
def profile():
    return yaml.safe_load((PROFILE / "config.yaml").read_text())


def test_parameter_counts_of_the_two_shapes():
    small, large = capacity.count_parameters(LLAMA_3_2_1B), capacity.count_parameters(LLAMA_3_1_8B)
    assert small.total == 1_235_814_400  # Llama-3.2-1B: 1.24B, tied embeddings counted once
    assert large.total == 8_030_261_248  # Llama-3.1-8B: 8.03B
    assert small.largest_layer == small.embedding == 128256 * 2048
    assert large.largest_layer == large.embedding == 128256 * 4096
    assert small.matmul == small.total  # the tied head multiplies every token
    assert large.matmul == large.total - large.embedding


def _printed_gib(printer, **kwargs) -> dict[str, tuple[float, float]]:
    """DeepSpeed's ``*_all_cold`` table: ``{options: (per CPU GiB, per GPU GiB)}``."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        printer(**kwargs)
    rows = re.findall(r"^\s*([\d.]+)GB \|\s*([\d.]+)GB \| (.+)$", out.getvalue(), re.MULTILINE)
    return {options.replace("OffloadDeviceEnum.", ""): (float(cpu), float(gpu)) for cpu, gpu, options in rows}


def test_model_state_memory_is_deepspeeds_estimate():
    from deepspeed.runtime.zero.stage3 import estimate_zero3_model_states_mem_needs_all_cold
    from deepspeed.runtime.zero.stage_1_and_2 import estimate_zero2_model_states_mem_needs_all_cold

    params = ParamCount(total=10**9, largest_layer=10**8, embedding=10**8, matmul=10**9)
    # the known case: ZeRO-3, 8 GPUs, no offload: 4 x largest layer + 18 bytes/param / 8 on the GPU
    gpu, cpu = capacity.model_state_memory(params, 3, gpus_per_node=8)
    assert gpu == 4 * 10**8 + 18 * 10**9 // 8 and cpu == 10**8 * 4 * 8 * 1.5
    printed = _printed_gib(estimate_zero3_model_states_mem_needs_all_cold, total_params=10**9,
                           largest_layer_params=10**8, num_gpus_per_node=8, num_nodes=1)  # fmt: skip
    for optimizer, parameters in ((False, False), (True, False), (True, True)):
        where = {True: "cpu", False: "none"}
        options = f"offload_param={where[parameters]}, offload_optimizer={where[optimizer]}, zero_init=1"
        gpu, cpu = capacity.model_state_memory(
            params, 3, offload_optimizer=optimizer, offload_parameters=parameters, gpus_per_node=8
        )
        assert (round(cpu / 2**30, 2), round(gpu / 2**30, 2)) == printed[options]
    printed = _printed_gib(estimate_zero2_model_states_mem_needs_all_cold, total_params=10**9, num_gpus_per_node=8)
    for optimizer in (False, True):
        gpu, cpu = capacity.model_state_memory(params, 2, offload_optimizer=optimizer, gpus_per_node=8)
        options = f"offload_optimizer={'cpu' if optimizer else 'none'}"
        assert (round(cpu / 2**30, 2), round(gpu / 2**30, 2)) == printed[options]
    assert capacity.model_state_memory(params, 0) == (16 * 10**9, 0)  # ZeRO paper: 2 + 2 + 12 bytes a parameter
    assert capacity.model_state_memory(params, 1, gpus_per_node=8)[0] == 4 * 10**9 + 12 * 10**9 // 8


@pytest.mark.parametrize(
    "kwargs, message",
    [({"zero_stage": 4}, "zero_stage must be"), ({"zero_stage": 2, "offload_parameters": True}, "parameter offload"),
     ({"zero_stage": 1, "offload_optimizer": True}, "optimizer offload")],
)  # fmt: skip
def test_model_state_memory_rejects_impossible_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        capacity.model_state_memory(ParamCount(10, 1, 1, 10), **kwargs)


def test_activation_memory_formulas():
    s, b, h, i, a = 2048, 4, 4096, 14336, 32
    layer = capacity.layer_activation_bytes(LLAMA_3_1_8B, b, s)
    assert layer == 16 * s * b * h + 8 * s * b * i
    assert capacity.layer_activation_bytes(LLAMA_3_1_8B, b, s, attention="eager") == layer + 5 * a * s * s * b
    with pytest.raises(ValueError, match="attention"):
        capacity.layer_activation_bytes(LLAMA_3_1_8B, b, s, attention="flash")
    loss = 14 * s * b * 128256
    assert capacity.activation_memory(LLAMA_3_1_8B, b, s, checkpointing=True) == 32 * 2 * s * b * h + layer + loss
    assert capacity.activation_memory(LLAMA_3_1_8B, b, s, checkpointing=False) == 32 * layer + loss


def test_flops_and_time():
    n = capacity.count_parameters(LLAMA_3_2_1B).matmul
    assert capacity.forward_flops_per_token(LLAMA_3_2_1B, 0) == 2 * n
    per_token = capacity.forward_flops_per_token(LLAMA_3_2_1B, 2048)
    assert per_token == 2 * n + 4 * 16 * 2048 * 2048
    assert capacity.training_flops_per_token(LLAMA_3_2_1B, 2048, checkpointing=False) == 3 * per_token  # 6N
    assert capacity.training_flops_per_token(LLAMA_3_2_1B, 2048, checkpointing=True) == 4 * per_token  # 8N
    gpu = capacity.H100
    seconds = capacity.training_seconds(LLAMA_3_2_1B, 1e9, 2048, 8, checkpointing=True)
    assert seconds == pytest.approx(1e9 * 4 * per_token / (8 * gpu.peak_flops * gpu.mfu_training))
    # decoding an 8B model is bandwidth-bound: far slower than its FLOPs alone
    decode = capacity.generation_seconds(LLAMA_3_1_8B, 8, 8, 1, 1000)
    flops_only = 8 * 1000 * capacity.forward_flops_per_token(LLAMA_3_1_8B, 500) / (gpu.peak_flops * gpu.mfu_scoring)
    assert decode > 10 * flops_only


@pytest.mark.slow
def test_job_counts_match_the_paper_dag(paper, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--directory", str(tmp_path), "--profile", str(PROFILE), "-n",
         "--configfile", str(ROOT / "config" / "paper.yaml")],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    stats = proc.stdout.split("Job stats:")[1].split("total")[0]
    dag = {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", stats, re.MULTILINE)}
    planned = capacity.job_counts(paper)
    assert {rule: dag.get(rule) for rule in planned} == planned
    # every rule of the DAG that runs a model is in the plan
    assert not {r for r in dag if r.startswith(("sort_prompt", "grounding_generate", "finetune"))} - set(planned)


@pytest.mark.parametrize("shape", [LLAMA_3_2_1B, LLAMA_3_1_8B], ids=["1B", "8B"])
def test_paper_settings_fit_an_80gb_gpu(paper, shape):
    costs = capacity.plan(paper, shape)
    assert not capacity.over_memory(costs), capacity.over_memory(costs)
    finetune = next(c for c in costs if c.rule.startswith("finetune (FictionalQA"))
    assert finetune.jobs == 60 and finetune.gpus_per_job == 8


def test_profile_resources_follow_the_8b_plan(paper, profile):
    from knowlab.core.train import launch_resources

    costs = capacity.plan(paper, LLAMA_3_1_8B)
    need = capacity.required_resources(costs)
    default, rules = profile["default-resources"], profile["set-resources"]
    assert default["slurm_account"]  # the site-specific placeholder
    short = []
    for rule, n in need.items():
        got = {**default, **rules.get(rule, {})}
        if got["runtime"] < n["runtime"]:
            short.append(f"{rule}: runtime {got['runtime']} < {n['runtime']:.0f} min")
        if got["mem_mb"] < n["mem_mb"]:
            short.append(f"{rule}: mem_mb {got['mem_mb']} < {n['mem_mb']:.0f}")
        if n["gpu_mem_gib"] and got.get("slurm_partition") != "gpu":
            short.append(f"{rule}: runs a model on a GPU but asks for partition {got.get('slurm_partition')}")
    assert not short, "workflow/profiles/slurm/config.yaml against the 8B plan: " + "; ".join(short)
    finetune = next(c for c in costs if c.rule.startswith("finetune"))
    assert launch_resources(paper["finetune"]["distributed"])["gpu"] == finetune.gpus_per_job


def test_localrules_run_no_model(profile):
    text = (ROOT / "Snakefile").read_text()
    local = re.findall(r"^    (\w+),$", text.split("\nlocalrules:\n")[1].split("\n\n")[0], re.MULTILINE)
    assert "fictionalqa_summary" not in local and "fictionalqa_webtext" in local
    assert "fictionalqa_figure_fig2" in local
    model_rules = set(capacity.job_counts(capacity_config())) | {
        "fictionalqa_real_qa",
        "sort_parametric_texts",
        "generate_annotate",
    }
    assert not set(local) & model_rules
    assert not set(local) & set(profile["set-resources"])  # nothing local is given cluster resources


def capacity_config():
    """The default config (its rules are the paper's, at CPU sizes)."""
    from snakemake.utils import validate

    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    validate(cfg, str(ROOT / "config" / "schema.yaml"), set_default=True)
    return cfg


def test_readme_tables_are_the_plan(paper):
    readme = (ROOT / "docs" / "cluster.md").read_text()
    section = readme.split("## Paper scale: what it costs")[1]
    for shape in (LLAMA_3_2_1B, LLAMA_3_1_8B):
        table = capacity.markdown_table(capacity.plan(paper, shape))
        assert table in section, (
            f"docs/cluster.md's {shape.name} table differs from the plan: paste `.venv/bin/python benchmarks/capacity.py` "
            "output into the section"
        )
