"""The local SLURM cluster's configuration, the profile fitted to it, and the reading of sacct and
Snakemake logs by knowlab.tooling.slurm (make test-slurm); no cluster needed, seconds."""

import re

from pathlib import Path

import pytest
import yaml

from knowlab.config import load_config
from knowlab.tooling import slurm

ROOT = Path(__file__).resolve().parents[2]

SLURMD_C = (
    "NodeName=vm CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105\n"
    "UpTime=0-11:11:44\n"
)


def test_slurm_conf_has_the_settings_a_root_cluster_without_cgroups_needs():
    node = slurm.node_line(SLURMD_C)
    assert node.startswith("NodeName=vm CPUs=2 ") and "RealMemory=24105" in node and "Gres=gpu:2" in node
    conf = slurm.slurm_conf(node)
    settings = dict(
        line.split("=", 1) for line in conf.splitlines()[1:] if not line.startswith(("NodeName", "Partition"))
    )
    assert settings["ProctrackType"] == "proctrack/linuxproc" and settings["TaskPlugin"] == "task/none"
    assert settings["SlurmUser"] == settings["SlurmdUser"] == "root"
    assert settings["SelectType"] == "select/cons_tres" and settings["SelectTypeParameters"] == "CR_Core_Memory"
    assert settings["ReturnToService"] == "2" and int(settings["MinJobAge"]) >= 300
    assert settings["AccountingStorageType"] == "accounting_storage/slurmdbd"
    assert "job_comment" in settings["AccountingStoreFlags"]
    assert conf.startswith(slurm.MARKER)
    assert re.search(r"^PartitionName=local Nodes=ALL Default=YES", conf, re.M)
    gres = slurm.gres_conf(node)
    assert gres.count("Name=gpu File=") == 2
    with pytest.raises(ValueError, match="slurmd -C printed no NodeName= line"):
        slurm.node_line("no node here")


def test_write_conf_refuses_a_foreign_slurm_conf(tmp_path):
    (tmp_path / "slurm.conf").write_text("ClusterName=real\n")
    with pytest.raises(FileExistsError, match="slurm.conf exists and is not the local test cluster's"):
        slurm.write_conf(tmp_path, SLURMD_C)
    (tmp_path / "slurm.conf").unlink()
    written = slurm.write_conf(tmp_path, SLURMD_C)
    assert {p.name for p in written} == {"slurm.conf", "slurmdbd.conf", "gres.conf"}
    assert (tmp_path / "slurmdbd.conf").stat().st_mode & 0o777 == 0o600
    first = (tmp_path / "slurmdbd.conf").read_text()
    slurm.write_conf(tmp_path, SLURMD_C)  # its own files: rewritten
    assert (tmp_path / "slurmdbd.conf").read_text() != first  # with a new password


def test_slurmdbd_uses_a_database_and_user_of_its_own_with_a_drawn_password():
    settings = dict(line.split("=", 1) for line in slurm.slurmdbd_conf().splitlines()[1:])
    assert settings["StorageLoc"] == "knowlab_slurm_acct" != "slurm_acct_db"  # never SLURM's default database
    assert settings["StorageUser"] == "knowlab_slurmdbd"
    assert re.fullmatch(r"[0-9a-f]{32}", settings["StoragePass"])
    assert (
        settings["StoragePass"]
        != dict(line.split("=", 1) for line in slurm.slurmdbd_conf().splitlines()[1:])["StoragePass"]
    )
    assert "StoragePass=fixed\n" in slurm.slurmdbd_conf("fixed")


def test_local_profile_fits_the_node_and_keeps_the_rest_of_the_users_profile():
    user = slurm.load_user_profile()
    local = slurm.local_profile(user)
    assert local["executor"] == "slurm" and local["retries"] == user["retries"] >= 1
    assert local["default-resources"]["slurm_partition"] == "local"
    assert local["default-resources"]["slurm_account"] == "knowlab"
    assert local["default-resources"]["cpus_per_task"] == slurm.LOCAL_CPUS
    assert local["default-resources"]["mem_mb"] <= slurm.LOCAL_MEM_MB
    assert local["default-resources"]["runtime"] == user["default-resources"]["runtime"]
    # the config's partition of every class (cluster.partitions, the user profile's `config:` entry)
    assert local["config"] == ["cluster={partitions: {cpu: local, gpu: local}}"]
    assert slurm.local_profile({**user, "config": ["seed=3"]})["config"][0] == "seed=3"
    # the user's profile asks for nothing per rule, and is not touched
    assert not {"set-resources", "set-threads"} & set(user) and user["config"] == ["cluster={partitions: {gpu: gpu}}"]
    fitted = slurm.local_profile(
        {**user, "set-resources": {"a": {"mem_mb": 9000, "runtime": 5}}, "set-threads": {"a": 4}}
    )
    assert fitted["set-resources"] == {"a": {"mem_mb": slurm.LOCAL_MEM_MB, "runtime": 5}}
    assert fitted["set-threads"] == {"a": slurm.LOCAL_CPUS}


def test_local_config_fits_what_the_rules_ask_for_to_the_node():
    paper = load_config(ROOT / "config" / "paper.yaml")
    overlay = slurm.local_config(paper)
    fitted = load_config(ROOT / "config" / "paper.yaml", overlay)
    for kind, spec in fitted["cluster"]["resources"].items():
        original = paper["cluster"]["resources"][kind]
        assert spec["cpus_per_task"] == spec["threads"] == slurm.LOCAL_CPUS, kind
        assert spec.get("mem_mb", 0) <= slurm.LOCAL_MEM_MB, kind
        # runtimes, partition classes and GPUs stay
        assert {k: spec.get(k) for k in ("runtime", "partition", "gpu")} == {
            k: original.get(k) for k in ("runtime", "partition", "gpu")
        }
    assert fitted["finetune"]["resources"] == {
        "mem_mb": slurm.LOCAL_MEM_MB,
        "runtime": paper["finetune"]["resources"]["runtime"],
    }
    for name, entry in fitted["finetune"]["models"].items():  # each base model's own
        if isinstance(entry, dict):
            assert entry["resources"]["mem_mb"] == slurm.LOCAL_MEM_MB, name
    assert "models" not in slurm.local_config(load_config())["finetune"]  # the default has no per-model resources


PRINTOUT = """\
[Sun Nov 29 15:47:19 2026]
rule finetune:
    input: resources/base_model
    output: results/a/checkpoints/step-2, results/a/state/step-2
    jobid: 5
    wildcards: training=a, checkpoint=step-2
    threads: 8
    resources: tmpdir=/tmp, mem_mb=4000, mem=4 GB, slurm_partition=local, runtime=120, cpus_per_task=1, gpu=1
Shell command: python -m knowlab.finetune_job

[Sun Nov 29 15:47:19 2026]
localrule train_log:
    output: results/a/train_log.parquet
    resources: tmpdir=/tmp, mem_mb=4000, runtime=60, cpus_per_task=1

rule finetune:
    output: results/b/checkpoints/step-2
    resources: tmpdir=/tmp, mem_mb=8000, runtime=120, cpus_per_task=1
"""


def test_printed_jobs_and_their_requests():
    jobs = slurm.printed_jobs(PRINTOUT)
    assert [(j.rule, j.local, j.output, j.threads) for j in jobs] == [
        ("finetune", False, "results/a/checkpoints/step-2", 8),
        ("train_log", True, "results/a/train_log.parquet", 1),
        ("finetune", False, "results/b/checkpoints/step-2", 1),
    ]
    assert jobs[0].resources["slurm_partition"] == "local" and jobs[0].resources["mem"] == "4 GB"
    requested = slurm.requested_resources(PRINTOUT)
    assert requested == {
        "finetune": [
            {"mem_mb": 4000, "runtime": 120, "cpus_per_task": 1},
            {"mem_mb": 8000, "runtime": 120, "cpus_per_task": 1},
        ]
    }
    assert slurm.oversized_requests(requested) == [
        f"rule finetune asks for {requested['finetune'][1]}, over 1 CPU(s) and {slurm.LOCAL_MEM_MB} MB"
    ]


def test_write_profile_round_trips(tmp_path):
    local = slurm.local_profile(slurm.load_user_profile())
    folder = slurm.write_profile(tmp_path / "p", local)
    assert yaml.safe_load((folder / "config.yaml").read_text()) == local


@pytest.mark.parametrize("text, mb", [("4000M", 4000), ("4G", 4096), ("4000Mn", 4000), ("512K", 0), ("1T", 1048576)])
def test_mem_mb(text, mb):
    assert slurm.mem_mb(text) == mb


@pytest.mark.parametrize(
    "text, mins", [("01:00:00", 60), ("4-12:00:00", 6480), ("00:01:00", 1), ("30", 30), ("1-00:00:00", 1440)]
)
def test_minutes(text, mins):
    assert slurm.minutes(text) == mins


def test_times_and_comments():
    assert slurm.seconds("0:05") == 5 and slurm.seconds("1:00:00") == 3600 and slurm.seconds("1-00:00:01") == 86401
    assert slurm.comment_rule("rule_finetune_last_wildcards_fictionalqa_finetune_doc_step-6") == (
        "finetune_last",
        "fictionalqa_finetune_doc_step-6",
    )
    assert slurm.comment_rule("rule_base_model") == ("base_model", "")
    for bad in ("UNLIMITED", "x"):
        with pytest.raises(ValueError, match=f"not a SLURM time: '{bad}'"):
            slurm.minutes(bad)
    with pytest.raises(ValueError, match="not a Snakemake job comment: 'wrap'"):
        slurm.comment_rule("wrap")


def test_parse_sacct_and_resource_mismatches():
    requested = {
        "finetune": [{"mem_mb": 4000, "runtime": 60, "cpus_per_task": 1}],
        "base_model": [{"mem_mb": 4000, "runtime": 30, "cpus_per_task": 1}],
    }
    good = "12|run|rule_finetune_wildcards_x|COMPLETED|4000M|01:00:00|1|cpu=1,gres/gpu=1|local|knowlab|1|00:00:30|0:0"
    bad = "13|run|rule_base_model|CANCELLED by 0|8000M|00:30:00|2||local|other||00:00:03|0:15"
    unknown = "14|run|rule_eval_model|COMPLETED|4000M|01:00:00|1||local|knowlab|1|00:00:30|0:0"
    rows = slurm.parse_sacct(good + "\n" + bad + "\n" + unknown + "\n")
    assert rows[0]["State"] == "COMPLETED" and rows[1]["Account"] == "other"
    problems = slurm.resource_mismatches(rows, requested)
    assert not [p for p in problems if p.startswith("job 12 ")]
    assert any("mem_mb 8000 != requested 4000" in p for p in problems) and any("cpus_per_task 2" in p for p in problems)
    assert any("Account other" in p for p in problems)
    assert any(p.startswith("job 14 ") and "no request of rule eval_model" in p for p in problems)
    # two tasks: the allocation's CPUs are both tasks'
    assert not slurm.resource_mismatches([{**rows[0], "ReqCPUS": "2"}], requested, tasks=2)
    with pytest.raises(ValueError, match="sacct line with 3 fields, not 13"):
        slurm.parse_sacct("1|2|3\n")
    assert "--name" in slurm.sacct_command(name="abc") and "-X" not in slurm.sacct_command(job_ids=["1"], steps=True)


LOG = """\
Building DAG of jobs...
SLURM run ID: 1234-abcd
Job stats:
job                count
---------------  -------
all                    1
base_model             1
fictionalqa_split      2
total                  4

Select jobs to execute...
localrule fictionalqa_split:
    output: x
rule base_model:
    output: y
Job 3 has been submitted with SLURM jobid 7 (log: z).
localrule fictionalqa_split:
localrule all:
"""


def test_reading_a_snakemake_log():
    assert slurm.job_stats(LOG) == {"base_model": 1, "fictionalqa_split": 2}
    assert slurm.started_rules(LOG) == ({"fictionalqa_split": 2, "all": 1}, {"base_model": 1})
    assert slurm.run_id(LOG) == "1234-abcd"
    with pytest.raises(ValueError, match="no 'Job stats:' table in the Snakemake log"):
        slurm.job_stats("nothing")
    with pytest.raises(ValueError, match="no 'SLURM run ID:' in the Snakemake log"):
        slurm.run_id("nothing")


def test_local_rules_are_read_from_the_rules(tmp_path):
    local = slurm.LocalRules()
    for name in ("all", "findings", "train_log", "fictionalqa_figure_fig2", "fictionalqa_across_models_fig9"):
        assert name in local, name
    assert "finetune" not in local and "fictionalqa_summary" not in local and "fictionalqa_evaluate" not in local
    (tmp_path / "rules").mkdir()
    (tmp_path / "Snakefile").write_text(
        'rule a:\n    localrule: True\n    output: "a"\n\n\nrule b:\n    output: "b"\n    shell: "touch b"\n\n\n'
        'for x in "12":\n\n    rule:\n        name:\n            f"c_{x}"\n        localrule: True\n        output: f"c{x}"\n'
    )
    local = slurm.LocalRules(tmp_path)
    assert "a" in local and "c_1" in local and "c_2" in local and "b" not in local and "c_x" not in local


def test_summary_line_format():
    line = slurm.summary_line(70, 5, 5, 2, 2, True)
    assert line == "slurm: jobs=70 identical=5/5 srun_ranks=2 cancelled=2 recovered_identical=True"


def test_tolerance_is_the_distributed_benchmarks():
    text = (slurm.ROOT / "benchmarks/distributed.py").read_text()
    default = re.search(r'"--tolerance", type=float, default=([0-9.e-]+)', text).group(1)
    assert float(default) == slurm.DISTRIBUTED_TOLERANCE


#: sacct's row of the recorded run's SLURM job 2 (fictionalqa_real_qa; the fields of slurm.SACCT_FIELDS, its
#: request as the log prints it), and of a model job beside it
SACCT_OF_EXCERPT = (
    "2|4f10b919-78ff-4582-a368-8fe71ee7163b|rule_fictionalqa_real_qa|COMPLETED|4000M|01:00:00|1|"
    "billing=1,cpu=1,mem=4000M,node=1|local|knowlab|1|00:00:03|0:0\n"
    "9|4f10b919-78ff-4582-a368-8fe71ee7163b|rule_base_model|COMPLETED|4000M|00:30:00|1|"
    "billing=1,cpu=1,mem=4000M,node=1|local|knowlab|1|00:00:09|0:0\n"
)


def test_where_the_download_jobs_ran_is_read_from_the_log_and_sacct():
    """A recorded run (tests/tooling/slurm_run_excerpt.log, before the downloads became local rules): its
    TriviaQA job ran as a SLURM job, which make test-slurm reports; the same run with that job on the submit
    host passes; a run with no download job checks nothing, which is a problem too."""
    log = (Path(__file__).parent / "slurm_run_excerpt.log").read_text()
    rows = slurm.parse_sacct(SACCT_OF_EXCERPT)
    sites, problems = slurm.download_sites(log, rows)
    assert sites == {
        "fictionalqa_real_qa": {"submit_host": 0, "slurm": 1},
        "fictionalqa_corpus": {"submit_host": 1, "slurm": 0},
        "sort_sources": {"submit_host": 1, "slurm": 0},
        "grounding_items": {"submit_host": 1, "slurm": 0},
    }
    assert problems == [
        "download rule fictionalqa_real_qa: 1 job(s) ran as SLURM jobs (sacct job ids ['2']), where a compute "
        "node may have no network: it must be a local rule"
    ]
    # seen in sacct alone (a log that lost the job's lines) or in the log alone: either is a SLURM job
    assert slurm.download_sites(log.replace("rule fictionalqa_real_qa:", "localrule fictionalqa_real_qa:"), rows)[1]
    assert slurm.download_sites(log, rows[1:])[0]["fictionalqa_real_qa"] == {"submit_host": 0, "slurm": 1}
    local = log.replace("\nrule fictionalqa_real_qa:", "\nlocalrule fictionalqa_real_qa:")
    sites, problems = slurm.download_sites(local, rows[1:])
    assert not problems and sites["fictionalqa_real_qa"] == {"submit_host": 1, "slurm": 0}
    assert slurm.download_sites("SLURM run ID: x\n", []) == (
        {},
        [f"no job of a download rule ({', '.join(slurm.DOWNLOAD_RULES)}) ran: where downloads run was not checked"],
    )
