"""Change one config key on the finished run of config/test.yaml: ``snakemake -n`` re-runs exactly the
rules whose step reads the key, and every rule downstream of them (and nothing for a key that cannot
change a result).

Each rule's params carry only what its step reads (knowlab.core.settings); a param that held a
whole config block would re-run every job of that block's study.  The readers are written out here
by hand from the rules; the descendants come from the workflow's own rule graph.
"""

import functools
import re
from pathlib import Path

import pytest
import yaml

from knowlab.config import load_config
from knowlab.tooling.envs import workflow_rules

pytestmark = pytest.mark.pipeline
TEST_CONFIG = Path(__file__).resolve().parents[2] / "config" / "test.yaml"


@functools.cache
def model_rules() -> frozenset[str]:
    """Every rule that runs a model: its param ``compute`` (read from the rules, knowlab.tooling.envs); the
    tests take those of config/test.yaml's rule graph.  Read when a test runs, not when the module is
    collected: it loads the workflow (a child process, about 1.7 s)."""
    return frozenset(name for name, rule in workflow_rules().items() if "compute" in rule.params)


# The fine-tuning rules serve FictionalQA's runs and SORT's parametric runs: a key of one recipe
# retrains only its runs (knowlab.finetune_job.FinetuneJobSettings), and the other study's evaluations
# stay.
SORT_PARAMETRIC = {"sort_parametric_evaluate", "sort_parametric_stats", "sort_parametric_figures"}
# SORT's and grounding's probes of the FictionalQA checkpoints of a base model (finetune.probe_models)
PROBE_RULES = {
    "sort_fiction_evaluate",
    "sort_fiction_stats",
    "sort_fiction_figures",
    "grounding_checkpoint_generate",
    "grounding_checkpoint_score",
    "grounding_finetune_stats",
    "grounding_finetune_figures",
}
FICTIONALQA_DOWNSTREAM = {
    "fictionalqa_evaluate",
    "fictionalqa_paired_tests",
    "fictionalqa_summary",
    *(
        f"fictionalqa_figure_{fig}"
        for fig in ("fig2", "fig3", "fig4", "fig5", "fig6", "fig7", "fig8", "fig10_11", "pvalues")
    ),
    *(f"fictionalqa_across_models_{fig}" for fig in ("fig4", "fig7", "fig9", "fig10", "fig10_11")),
    *PROBE_RULES,
}
# The readers of each stats.* key (knowlab.core.stats.StatsSettings): each rule's param stats holds only
# the fields its step reads (STATS.param(...) in the rules; the findings' slice in
# knowlab.findings.FindingsSettings), so a key re-runs only its readers and what reads their outputs.
SORT_STATS = {"sort_stats", "sort_fiction_stats", "sort_parametric_stats"}
# McNemar's exact threshold
MCNEMAR_READERS = {"fictionalqa_paired_tests", "grounding_finetune_stats", *SORT_STATS}
# the paired t-test's alternative
TTEST_READERS = {"fictionalqa_paired_tests", *SORT_STATS}
# the bootstrap intervals' resamples and level: the tables, the bands, the findings, and the SORT
# figures, whose footnotes name them
BOOTSTRAP_READERS = {
    "fictionalqa_summary",
    "grounding_tables",
    *SORT_STATS,
    "sort_figures",
    "sort_fiction_figures",
    "sort_parametric_figures",
    "findings",
}
# the permutations of a test that cannot list them all, and the draws of a randomisation test: the
# findings only
PERMUTATION_READERS = {"findings"}
# (key, new value, the rules that read it (or a function giving them, called when the test runs), the
# rules downstream of them in the rule graph that still re-run nothing, because none of their jobs
# reads a re-run job's output).  Values are valid for config/test.yaml.
KEYS = [
    ("splits.event_train_fraction", 0.5, {"fictionalqa_split"}, SORT_PARAMETRIC),
    ("evaluate.em_tokens", [10, 25], {"fictionalqa_evaluate"}, set()),
    ("mcq.ranker.evict", "released", {"fictionalqa_mcq"}, set()),
    ("stats.mcnemar_exact_below", 30, MCNEMAR_READERS, set()),
    ("stats.ttest_alternative", "two-sided", TTEST_READERS, set()),
    ("stats.bootstrap_resamples", 100, BOOTSTRAP_READERS, set()),
    # a findings-only key: the findings re-run, and the provenance, which reads every result
    ("stats.permutation_resamples", 199, PERMUTATION_READERS, set()),
    # the analysis plan records the intervals' level, alpha, power and the margin (knowlab.findings.plan)
    ("stats.confidence", 0.9, BOOTSTRAP_READERS | {"analysis_plan"}, set()),
    ("findings.alpha", 0.01, {"analysis_plan", "findings"}, set()),
    # SORT's runs set lr in sort.parametric.finetune; test.yaml's FictionalQA runs are one interval
    # long, so their jobs are all finetune_last
    ("finetune.lr", 2.0e-3, {"finetune_last"}, SORT_PARAMETRIC),
    ("compute.dtype", "bfloat16", model_rules, set()),
    # a probed run more: its probes' jobs are added, and the probes' tables, their figures and the dataset
    # card (which lists them) re-run; no FictionalQA job and no finding reads a probe
    ("finetune.probe_runs", ["doc", "event", "control"], PROBE_RULES | {"dataset_card"}, set()),
    (
        "sort.parametric.epochs",
        3,
        {"finetune", "finetune_last", "sort_parametric_evaluate", "findings"},
        FICTIONALQA_DOWNSTREAM,
    ),
    ("grounding.generation.max_new_tokens", 10, {"grounding_generate", "grounding_checkpoint_generate"}, set()),
    ("grounding.distractors.budget", 160, {"grounding_generate"}, set()),
    ("grounding.finetune.max_items", 2, {"grounding_checkpoint_generate"}, set()),
    (
        "grounding.evaluator.window",
        "truncate",
        {"grounding_score", "grounding_checkpoint_score", "grounding_tables"},
        set(),
    ),
    # only the RAG conditions read the passages; the parametric runs' figures read the others
    ("sort.rag.k", 3, {"sort_retrieval"}, {"sort_parametric_stats", "sort_parametric_figures"}),
]
# keys that cannot change a result (config/README.md, "What re-runs when a key changes")
NO_RESULT_KEYS = [
    ("threads", 2),
    ("compute.max_batch_tokens", 4096),
    ("evaluate.batch_size", 4),
    ("mcq.ranker.batch_size", 4),
    ("tracking.dir", "results/logs/elsewhere"),
    ("finetune.resources.mem_mb", 9000),
    ("cluster.resources.checkpoint_evaluation.mem_mb", 9000),
    ("cluster.resources.checkpoint_evaluation.threads", 2),
    ("cluster.partitions.gpu", "a100"),
    ("sort.batch_size", 4),
    ("grounding.kaist.timeout_s", 30),
    ("grounding.generation.openai.timeout_s", 30),
]


def _overlay(*changes: tuple[str, object]) -> dict:
    """``{"a": {"b": value}}`` for the change (key ``a.b``, value), merged over every change."""
    overlay: dict = {}
    for key, value in changes:
        *parents, last = key.split(".")
        block = overlay
        for part in parents:
            block = block.setdefault(part, {})
        block[last] = value
    return overlay


def _job_counts(out: str) -> tuple[dict[str, int], dict[str, set[str]]]:
    """Jobs per rule of a ``snakemake -n --quiet rules`` output, and the rules per reason Snakemake gives."""
    jobs = {
        match[1]: int(match[2])
        for match in re.finditer(r"^(\w+)\s+(\d+)$", out, re.MULTILINE)
        if match[1] not in ("total", "all")
    }
    reasons = {
        match[1].strip(): {rule.strip() for rule in match[2].split(",")}
        for match in re.finditer(r"^    (\S[^:\n]*):\n        (.+)$", out, re.MULTILINE)
    }
    return jobs, reasons


def _job_list(out: str) -> list[tuple[str, str]]:
    """(rule, its wildcards line) of every job of a ``snakemake -n`` output."""
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:\n)", out):
        if rule := re.match(r"(?:local)?rule (\w+):\n", block):
            wildcards = re.search(r"^    wildcards: (.*)$", block, re.MULTILINE)
            jobs.append((rule[1], wildcards[1] if wildcards else ""))
    return jobs


# the changes whose every job the tests below read (``snakemake -n`` in full), by name
JOB_LISTS = {
    "wide": (("finetune.models.tiny-wide.finetune.lr", 2.0e-3),),
    "probe": (("finetune.probe_models", ["tiny", "tiny-wide"]),),
    "seeds": (("finetune.seeds", [load_config(TEST_CONFIG)["seed"], 99]),),
    "suites": (("stats.suites", ["mcq4", "mcq10"]),),
}


def _configs(folder: Path, name: str, *changes: tuple[str, object]) -> list[str]:
    """config/test.yaml and an overlay of ``changes`` written in ``folder``, as ``--configfile`` takes them."""
    overlay = folder / f"{name.replace(' ', '_')}.yaml"
    overlay.write_text(yaml.safe_dump(_overlay(*changes)))
    return [str(TEST_CONFIG), str(overlay)]


@pytest.fixture(scope="module")
def outputs(workdir, many_dry_runs, tmp_path_factory) -> dict[str, str]:
    """What Snakemake prints for every change of this module laid over config/test.yaml on the finished
    run: ``-n --quiet rules`` for each key of :data:`KEYS` and for every :data:`NO_RESULT_KEYS` change
    at once (``no result``), ``-n`` for each of :data:`JOB_LISTS`, and ``--rulegraph`` of the run's
    own config (``rule graph``); all in one child process (conftest.run_many_dry_runs)."""
    folder = tmp_path_factory.mktemp("overlays")
    runs = {key: {"configs": _configs(folder, key, (key, value)), "quiet_rules": True} for key, value, *_ in KEYS}
    runs["no result"] = {"configs": _configs(folder, "no result", *NO_RESULT_KEYS), "quiet_rules": True}
    runs |= {name: {"configs": _configs(folder, name, *changes)} for name, changes in JOB_LISTS.items()}
    runs["rule graph"] = {"configs": [str(TEST_CONFIG)], "rulegraph": True}
    return many_dry_runs(workdir, runs)


@pytest.fixture(scope="module")
def rule_graph(outputs) -> dict[str, set[str]]:
    """Each rule of the run -> the rules that consume its outputs (``snakemake --rulegraph``)."""
    dot = outputs["rule graph"]
    names = {m[1]: m[2] for m in re.finditer(r'^\s*(\d+)\[label = "(\w+)"', dot, re.MULTILINE)}
    graph: dict[str, set[str]] = {name: set() for name in names.values()}
    for m in re.finditer(r"^\s*(\d+) -> (\d+)", dot, re.MULTILINE):
        graph[names[m[1]]].add(names[m[2]])  # "a -> b": b reads what a writes
    return graph


def _downstream(graph: dict[str, set[str]], rules: set[str]) -> set[str]:
    seen, todo = set(rules), list(rules)
    while todo:
        for after in graph.get(todo.pop(), ()):
            if after not in seen:
                seen.add(after)
                todo.append(after)
    return seen - {"all"}


def test_the_keys_exist_and_their_values_are_valid():
    config = load_config(TEST_CONFIG)
    for key, value, *_ in KEYS:
        block = config
        for part in key.split(".")[:-1]:
            block = block[part]
        assert key.split(".")[-1] in block and block[key.split(".")[-1]] != value, key
        load_config(TEST_CONFIG, _overlay((key, value)))  # passes the schema
    load_config(TEST_CONFIG, _overlay(*NO_RESULT_KEYS))


@pytest.mark.parametrize("key,value,readers,untouched", KEYS, ids=[k for k, *_ in KEYS])
def test_a_key_reruns_its_readers_and_their_descendants(outputs, rule_graph, key, value, readers, untouched):
    jobs, reasons = _job_counts(outputs[key])
    readers = (readers() if callable(readers) else readers) & rule_graph.keys()  # those config/test.yaml runs
    downstream = _downstream(rule_graph, readers)
    assert untouched <= downstream  # a rule named here is a descendant in the rule graph
    expected = downstream - untouched
    assert set(jobs) == expected, f"{key}: re-runs {sorted(jobs)}, expected {sorted(expected)}"
    # Snakemake names the params as the reason of a job that nothing upstream re-runs anyway
    changed = reasons.get("params have changed since last execution", set())
    assert changed <= readers, f"{key}: params changed in {sorted(changed - readers)}, which do not read it"
    assert not reasons.keys() - {
        "params have changed since last execution",
        "input files updated by another job",
        "output files have to be generated",
        "set of input files has changed since last execution",
    }, f"{key}: {reasons}"


def test_every_stats_key_is_checked():
    """Every key of the block ``stats`` has its readers in :data:`KEYS`, but ``stats.suites``, which
    names the paired tests to make rather than a setting of one
    (:func:`test_another_suite_adds_its_paired_tests_and_reruns_only_the_provenance`)."""
    stats_keys = {f"stats.{name}" for name in load_config(TEST_CONFIG)["stats"]}
    assert stats_keys - {key for key, *_ in KEYS} == {"stats.suites"}


def test_keys_that_cannot_change_a_result_rerun_nothing(outputs):
    jobs, reasons = _job_counts(outputs["no result"])
    assert not jobs, f"{[key for key, _ in NO_RESULT_KEYS]}: re-run {jobs} ({reasons})"


def test_a_base_models_key_reruns_only_that_models_jobs(outputs):
    """``finetune.models.tiny-wide.finetune.lr``: the second base model's runs retrain and everything
    of that model downstream re-runs, with the figures across models, the findings and the dataset
    card; no job of the first model, and no SORT parametric run (each job's params hold its own
    model's settings, knowlab.config.model_config)."""
    jobs = _job_list(outputs["wide"])
    per_model = [(rule, wildcards) for rule, wildcards in jobs if "ft_model=" in wildcards or "training=" in wildcards]
    assert per_model and all("tiny-wide" in wildcards for _, wildcards in per_model), per_model
    # tiny-wide's Doc run (config/test.yaml trains the other runs and the control on tiny only)
    assert sum(rule == "finetune_last" for rule, _ in jobs) == 1
    rules = {rule for rule, _ in jobs}
    assert {"fictionalqa_across_models_fig4", "findings", "dataset_card"} <= rules
    assert not {rule for rule in rules if rule.startswith("sort_parametric") or rule == "sort_evaluate_base"}


def test_probing_another_model_adds_its_probes_and_reruns_only_the_dataset_card(outputs):
    """``finetune.probe_models: [tiny, tiny-wide]``: SORT's and grounding's jobs of tiny-wide's checkpoints
    are added; of what exists, only the dataset card (which lists the probes' tables) and the provenance
    re-run."""
    jobs = _job_list(outputs["probe"])
    added = {rule for rule, wildcards in jobs if "ft_model=tiny-wide" in wildcards}
    assert added == PROBE_RULES
    # and the run's provenance (trace pages and RO-Crate), which reads every result
    assert {rule for rule, wildcards in jobs if "ft_model=tiny-wide" not in wildcards} == {
        "dataset_card",
        "provenance",
        "all",
    }


def test_a_second_training_seed_adds_its_replicates_and_reruns_only_the_findings(outputs):
    """``finetune.seeds: [<seed>, 99]``: every run of both base models is trained and evaluated again as
    ``<run>.seed-99``; of what exists, only the findings (they read the replicates) and the provenance
    re-run.  The first
    seed's runs keep their names and params: nothing of them retrains."""
    jobs = _job_list(outputs["seeds"])
    replicates = [(rule, wildcards) for rule, wildcards in jobs if ".seed-99" in wildcards]
    assert {rule for rule, _ in replicates} == {"finetune_last", "fictionalqa_evaluate"}
    assert sum(rule == "finetune_last" for rule, _ in replicates) == 4 + 1  # tiny's 4 runs, tiny-wide's Doc
    assert {rule for rule, wildcards in jobs if ".seed-99" not in wildcards} == {"findings", "provenance", "all"}


def test_another_suite_adds_its_paired_tests_and_reruns_only_the_provenance(outputs):
    """``stats.suites: [mcq4, mcq10]``: the paired tests of MCQ-10 (scored already) and their figures are
    added for every run; of what exists, only the provenance (which reads every result) re-runs."""
    jobs = _job_list(outputs["suites"])
    added = {rule for rule, wildcards in jobs if "suite=mcq10" in wildcards}
    assert added == {"fictionalqa_paired_tests", "fictionalqa_figure_pvalues"}
    assert {rule for rule, wildcards in jobs if "suite=mcq10" not in wildcards} == {"provenance", "all"}


def test_the_dry_runs_in_one_process_list_what_snakemakes_own_lists(outputs, workdir, snakemake, tmp_path):
    """The child process makes its dry runs one after another (conftest.run_many_dry_runs): its last change
    lists the jobs, with their wildcards, that ``snakemake -n`` lists in a process of its own, so nothing
    an earlier run left in the process moves a later one."""
    own = snakemake(workdir, "-n", configs=_configs(tmp_path, "suites", *JOB_LISTS["suites"])).stdout
    assert sorted(_job_list(outputs["suites"])) == sorted(_job_list(own)) != []
