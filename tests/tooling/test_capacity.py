"""The capacity plan (knowlab.tooling.capacity): its estimators, and config/paper.yaml's fine-tuning requests, the SLURM
profile, the dry run and docs/cluster.md against it."""

import contextlib
import io
import re
from pathlib import Path

import pytest
import yaml

from knowlab.cluster import job_resources
from knowlab.config import load_config, model_config
from knowlab.layout import finetune_models
from knowlab.tooling import capacity, slurm
from knowlab.tooling.capacity import GEMMA_2_2B, GEMMA_2B, LLAMA_3_1_8B, LLAMA_3_2_1B, LLAMA_3_2_3B, ParamCount

ROOT = Path(__file__).resolve().parents[2]
PROFILE = ROOT / "workflow" / "profiles" / "slurm"


@pytest.fixture(scope="module")
def paper():
    """config.yaml with paper.yaml merged over it and the schema's defaults, as ``--configfile config/paper.yaml``."""
    return load_config(ROOT / "config" / "paper.yaml")


@pytest.fixture(scope="module")
def profile():
    return yaml.safe_load((PROFILE / "config.yaml").read_text())


@pytest.fixture(scope="module")
def paper_plans(paper):
    """The plan of every base model of paper.yaml and of the rules run once (``capacity.plans``)."""
    return capacity.plans(paper)


def test_parameter_counts_of_the_two_shapes():
    small, large = capacity.count_parameters(LLAMA_3_2_1B), capacity.count_parameters(LLAMA_3_1_8B)
    assert small.total == 1_235_814_400  # Llama-3.2-1B: 1.24B, tied embeddings counted once
    assert large.total == 8_030_261_248  # Llama-3.1-8B: 8.03B
    assert small.largest_layer == small.embedding == 128256 * 2048
    assert large.largest_layer == large.embedding == 128256 * 4096
    assert small.matmul == small.total  # the tied head multiplies every token
    assert large.matmul == large.total - large.embedding


def test_parameter_counts_of_the_other_base_models():
    assert capacity.count_parameters(LLAMA_3_2_3B).total == 3_212_749_824  # Llama-3.2-3B: 3.21B
    # Gemma 1 2B as a Llama decoder of its widths: the published count (1,981,884,416 non-embedding
    # parameters + 256,000 x 2,048 embeddings)
    gemma = capacity.count_parameters(GEMMA_2B)
    assert gemma.total == 1_981_884_416 + 256000 * 2048 == 2_506_172_416
    # Gemma 2 2B: the published 2,024,517,888 + 256,000 x 2,304, less its second pair of norms a layer
    gemma2 = capacity.count_parameters(GEMMA_2_2B)
    assert gemma2.total == 2_024_517_888 + 256000 * 2304 - 26 * 2 * 2304
    assert GEMMA_2_2B.attention_width == 8 * 256 != GEMMA_2_2B.hidden_size
    assert GEMMA_2_2B.kv_bytes_per_token() == 2 * 26 * 4 * 256 * 2


def test_every_paper_base_model_has_its_shape(paper):
    shapes = {name: capacity.shape_of(model_config(paper, name)) for name in finetune_models(paper)}
    assert shapes == {"llama-3.2-1b": LLAMA_3_2_1B, "llama-3.2-3b": LLAMA_3_2_3B, "llama-3.1-8b": LLAMA_3_1_8B,
                      "gemma-2b": GEMMA_2B, "gemma-2-2b": GEMMA_2_2B}  # fmt: skip
    with pytest.raises(
        ValueError,
        match=r"not model source 'hub' someone/unknown: add its shape to knowlab\.tooling\.capacity\.MODEL_SHAPES",
    ):
        capacity.shape_of({"model": {"source": "hub", "hub": {"id": "someone/unknown"}}})


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
    [({"zero_stage": 4}, "zero_stage must be 0, 1, 2 or 3, got 4"),
     ({"zero_stage": 2, "offload_parameters": True}, "parameter offload needs ZeRO stage 3, got stage 2"),
     ({"zero_stage": 1, "offload_optimizer": True}, "optimizer offload for ZeRO stages 2 and 3, got stage 1")],
)  # fmt: skip
def test_model_state_memory_rejects_impossible_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        capacity.model_state_memory(ParamCount(10, 1, 1, 10), **kwargs)


def test_gemma_2_memory_terms():
    s, b, h, i, a = 2048, 4, 2304, 9216, 8
    # eager attention keeps its scores: Korthikanti's 5 bytes, + 6 for the softcap's tanh and the float32 softmax
    assert capacity.layer_activation_bytes(GEMMA_2_2B, b, s) == 16 * s * b * h + 8 * s * b * i + 11 * a * s * s * b
    assert capacity.loss_bytes(GEMMA_2_2B, s) == 16 * s * 256000  # + the bf16 tanh of the capped logits
    assert capacity.loss_bytes(GEMMA_2B, s) == 14 * s * 256000


def test_activation_memory_formulas():
    s, b, h, i, a = 2048, 4, 4096, 14336, 32
    layer = capacity.layer_activation_bytes(LLAMA_3_1_8B, b, s)
    assert layer == 16 * s * b * h + 8 * s * b * i
    assert capacity.layer_activation_bytes(LLAMA_3_1_8B, b, s, attention="eager") == layer + 5 * a * s * s * b
    with pytest.raises(ValueError, match="attention must be 'sdpa' or 'eager', got 'flash'"):
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
def test_job_counts_match_the_paper_dag(paper, paper_slurm_dry_run, paper_plans):
    stats = paper_slurm_dry_run.split("Job stats:")[1].split("total")[0]
    dag = {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", stats, re.MULTILINE)}
    planned = capacity.job_counts(paper)
    assert {rule: dag.get(rule) for rule in planned} == planned
    # every rule of the DAG that runs a model is in the plan
    assert not {r for r in dag if r.startswith(("sort_prompt", "grounding_generate", "finetune"))} - set(planned)
    # the plan's rows account for every planned job, once: the base models' and the shared ones
    rows = [c for costs in paper_plans.values() for c in costs]
    by_rule = {rule: sum(c.jobs for c in rows if c.rule.split(" ")[0] == rule) for rule in planned}
    assert by_rule == {**planned, "finetune": planned["finetune"] + planned["finetune_last"], "finetune_last": 0}


def _job_model(output: str) -> str | None:
    """The base model of a fine-tuning job's output (results/fictionalqa/{ft_model}/...), None for SORT's."""
    return output.split("/")[2] if output.startswith("results/fictionalqa/") else None


@pytest.mark.slow
def test_finetune_jobs_ask_for_their_base_models_gpus(paper, paper_slurm_dry_run):
    from knowlab.core.train import launch_resources

    for rule in ("finetune", "finetune_last"):
        jobs = _dag_jobs(paper_slurm_dry_run, rule)
        assert len(jobs) == capacity.job_counts(paper)[rule]
        for output, got in jobs:
            name = _job_model(output)
            view = model_config(paper, name) if name else paper
            assert int(got["gpu"]) == launch_resources(view["finetune"]["distributed"])["gpu"], output


def _dag_jobs(stdout: str, rule: str) -> list[tuple[str, dict[str, str]]]:
    """(output, resources) of every job of ``rule`` in a dry run's printout (:func:`slurm.printed_jobs`)."""
    return [(job.output, job.resources) for job in slurm.printed_jobs(stdout) if job.rule == rule]


@pytest.mark.slow
def test_finetune_jobs_ask_for_their_base_models_resources(paper, paper_slurm_dry_run):
    """Each fine-tuning job's mem_mb and runtime are its base model's (capacity.finetune_resources)."""
    wrong = []
    for rule in ("finetune", "finetune_last"):
        for output, got in _dag_jobs(paper_slurm_dry_run, rule):
            want = capacity.finetune_resources(paper, _job_model(output))
            if {k: int(got[k]) for k in want} != want:
                wrong.append(f"{output}: {got} != {want}")
    assert not wrong, "\n".join(wrong[:5])


def test_paper_settings_fit_an_80gb_gpu(paper_plans):
    for name, costs in paper_plans.items():
        assert not capacity.over_memory(costs), (name, capacity.over_memory(costs))
        if name != capacity.SHARED:
            finetune = next(c for c in costs if c.rule.startswith("finetune (FictionalQA"))
            assert finetune.jobs == 60, name
    # the 8B needs activation checkpointing (config/paper.yaml says why it is on)
    state, _ = capacity.model_state_memory(capacity.count_parameters(LLAMA_3_1_8B), 3, gpus_per_node=8)
    full = state + capacity.activation_memory(LLAMA_3_1_8B, 4, 2048, checkpointing=False)
    assert full / 2**30 > capacity.H100.usable_memory_gib


def test_the_summed_plan_adds_up_the_parts(paper, paper_plans):
    summed = capacity.plan(paper)
    rows = [c for costs in paper_plans.values() for c in costs]
    assert sum(c.gpu_hours for c in summed) == pytest.approx(sum(c.gpu_hours for c in rows))
    assert sum(c.jobs for c in summed) == sum(c.jobs for c in rows)
    assert len({c.rule for c in summed}) == len(summed)
    fictionalqa = next(c for c in summed if c.rule.startswith("finetune (FictionalQA"))
    assert fictionalqa.jobs == 60 * len(finetune_models(paper)) and fictionalqa.gpus_per_job == 8  # the 8B's node


def test_paper_finetune_resources_cover_each_models_plan(paper, paper_plans):
    """Each base model's fine-tuning request (finetune.resources, or its own `resources`) covers its plan:
    runtime >= 1.5 x its longest job, mem_mb >= its host memory, GPUs = its processes; SORT's parametric
    runs (the project's base model, the top-level settings) ask for finetune.resources."""
    from knowlab.core.train import launch_resources

    short = []
    for name, costs in paper_plans.items():
        model = None if name == capacity.SHARED else name
        view = paper if model is None else model_config(paper, model)
        need = capacity.required_resources(costs)["finetune"]
        got = capacity.finetune_resources(paper, model)
        if got["runtime"] < need["runtime"]:
            short.append(f"{name}: runtime {got['runtime']} < {need['runtime']:.0f} min")
        if got["mem_mb"] < need["mem_mb"]:
            short.append(f"{name}: mem_mb {got['mem_mb']} < {need['mem_mb']:.0f}")
        finetune = next(c for c in costs if c.rule.startswith("finetune ("))
        if launch_resources(view["finetune"]["distributed"])["gpu"] != finetune.gpus_per_job:
            short.append(f"{name}: the plan's {finetune.gpus_per_job} GPUs are not its distributed processes")
    assert not short, "config/paper.yaml's fine-tuning resources against the plan: " + "; ".join(short)
    # an 8B run asks for more GPUs and memory than a 1B run
    small, large = (capacity.finetune_resources(paper, name) for name in ("llama-3.2-1b", "llama-3.1-8b"))
    assert large["mem_mb"] > small["mem_mb"]
    gpus = {c.gpus_per_job for name in ("llama-3.2-1b", "llama-3.1-8b") for c in paper_plans[name][:1]}
    assert gpus == {4, 8}


def _kind_shortfalls(need, kinds) -> list[str]:
    short = []
    for kind, n in need.items():
        got = kinds[kind]
        if got["runtime"] < n["runtime"]:
            short.append(f"{kind}: runtime {got['runtime']} < {n['runtime']:.0f} min")
        if got["mem_mb"] < n["mem_mb"]:
            short.append(f"{kind}: mem_mb {got['mem_mb']} < {n['mem_mb']:.0f}")
        if n["gpu_mem_gib"] and (got["partition"] != "gpu" or got.get("gpu", 0) < 1):
            short.append(f"{kind}: runs a model on a GPU but asks for partition class {got['partition']}, no GPU")
    return short


def test_cluster_resources_follow_the_summed_plan(paper, profile):
    """Every kind of job but fine-tuning gets from the config (``cluster.resources``) at least the summed plan's
    runtime (1.5 x the longest job of its rules over every base model) and host memory, and a GPU where it runs
    a model on a GPU; the profile keeps only what is site-specific."""
    need = capacity.kind_resources(capacity.plan(paper))
    kinds = paper["cluster"]["resources"]
    # fine-tuning: the config's per-model request (test above); the kind gives partition and CPUs only
    assert not {"mem_mb", "runtime"} & set(kinds["finetune"]) and kinds["finetune"]["partition"] == "gpu"
    need.pop("finetune")
    short = _kind_shortfalls(need, kinds)
    assert not short, "cluster.resources of config/paper.yaml against the plan: " + "; ".join(short)
    # the profile: no request per rule name (a module's rules have other names), the site's names
    assert not {"set-resources", "set-threads"} & set(profile)
    assert profile["default-resources"]["slurm_account"]  # the site-specific placeholder
    assert profile["default-resources"]["slurm_partition"] and profile["config"]


@pytest.mark.slow
def test_every_planned_rule_asks_for_its_kind(paper, paper_slurm_dry_run):
    """In the paper dry run through the profile, every job of a planned rule asks for what its kind
    (capacity.RULE_KINDS) gives: the kinds the plan checks are the rules' own."""
    wrong = []
    for rule, kind in capacity.RULE_KINDS.items():
        want = {key: str(value) for key, value in job_resources(paper, kind).items()}
        if kind == "finetune":  # memory and time per base model: the tests above
            want = {key: want[key] for key in ("slurm_partition", "cpus_per_task")}
        jobs = _dag_jobs(paper_slurm_dry_run, rule)
        assert jobs, rule
        wrong += [f"{rule} {output}: {got} lacks {want}" for output, got in jobs if want.items() - got.items()]
    assert not wrong, "\n".join(wrong[:5])


def test_localrules_run_no_model():
    from knowlab.tooling.slurm import LocalRules

    local = LocalRules()
    assert "fictionalqa_summary" not in local and "fictionalqa_webtext" in local
    assert "fictionalqa_figure_fig2" in local
    # (fictionalqa_real_qa downloads: a local rule since issue 58, tests/test_downloads.py)
    model_rules = set(capacity.job_counts(capacity_config())) | {"sort_parametric_texts", "generate_annotate"}
    assert not [rule for rule in model_rules if rule in local]
    assert not [rule for rule in capacity.RULE_KINDS if rule in local]  # no local rule names a kind of cluster job


def capacity_config():
    """The default config (its rules are the paper's, at CPU sizes)."""
    from snakemake.utils import validate

    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    validate(cfg, str(ROOT / "config" / "schema.yaml"), set_default=True)
    return cfg


def test_readme_tables_are_the_plan(paper, paper_plans):
    readme = (ROOT / "docs" / "cluster.md").read_text()
    section = readme.split("## Paper scale: what it costs")[1].split("\n## ")[0]
    tables = {**paper_plans, "summed": capacity.plan(paper)}
    for name, costs in tables.items():
        assert capacity.markdown_table(costs) in section, (
            f"docs/cluster.md's {name} table differs from the plan: paste `.venv/bin/python benchmarks/capacity.py "
            "--no-measure` output into the section"
        )
