"""DeepSpeed fine-tuning on CPU (gloo): full weights and LoRA adapters, checkpoints that transformers loads."""

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
import torch

from knowlab.config import load_config
from knowlab.core.io import read_json
from knowlab.core.models import CheckpointError, load_model
from knowlab.core.train import (
    CHECKPOINT_META,
    DistributedSettings,
    OptimizationSettings,
    TrainingDiverged,
    TrainSettings,
    accumulation_steps,
    deepspeed_config,
    finetune,
    launch_command,
    train_segment,
)

pytestmark = pytest.mark.usefixtures("restore_environment")

CONFIG = Path(__file__).resolve().parents[2] / "config"


def _texts(corpus):
    return [r["fiction"] for r in corpus["fictions"][:6]], [r["fiction"][:200] for r in corpus["fictions"][30:50]]


def _finetune(corpus, base_model, out_dir, cfg, seed=0):
    """Train run ``doc`` on the texts of :func:`_texts` with the ``finetune`` block ``cfg``; its log."""
    fiction, webtext = _texts(corpus)
    return finetune(
        base_model=base_model,
        out_dir=out_dir,
        run="doc",
        fiction_texts=fiction,
        webtext_texts=webtext,
        settings=TrainSettings.from_block(cfg),
        seed=seed,
    )


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_finetune_writes_loadable_checkpoints_and_log(tiny_model_dir, corpus, tmp_path, lora, finetune_cfg):
    from transformers import AutoModelForCausalLM

    cfg = finetune_cfg
    cfg["lora"]["enabled"] = lora
    log = _finetune(corpus, tiny_model_dir, tmp_path, cfg)
    assert list(log["step"]) == [1, 2, 3, 4]
    assert (log.loc[0, "fiction_samples_seen"] == 0) and log["fiction_samples_seen"].iloc[-1] > 0
    assert {"loss", "lr", "tokens", "fiction_epochs", "webtext_epochs"} <= set(log.columns)
    assert log["lr"].iloc[-1] == pytest.approx(1e-3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step-2", "step-4"]  # step 0 is the base model
    meta = read_json(tmp_path / "step-4" / CHECKPOINT_META)
    assert meta["run"] == "doc" and meta["step"] == 4 and meta["seed"] == 0
    assert not (tmp_path / "step-4" / "trainer_state.json").exists()  # Trainer's file name, not its format
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    with torch.no_grad():
        last = AutoModelForCausalLM.from_pretrained(tmp_path / "step-4")(ids).logits
        base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)(ids).logits
    assert not torch.allclose(last, base)


def test_lora_adapter_loads_after_its_run_folder_moves(
    tiny_model_dir, tiny_model, corpus, tmp_path, monkeypatch, finetune_cfg
):
    """The adapter names its base as the workflow does, relative to the working directory (here
    through a symlinked resources/, which stays a relative name), so moving the run folder breaks
    nothing; from another directory, a clear error."""
    workflow = tmp_path / "workflow"
    (workflow / "resources").mkdir(parents=True)
    (workflow / "resources" / "base_model").symlink_to(tiny_model_dir)
    monkeypatch.chdir(workflow)
    cfg = finetune_cfg | {"max_steps": 2, "checkpoint_every": 2}
    cfg["lora"] = cfg["lora"] | {"enabled": True}
    run = workflow / "results" / "doc"
    _finetune(corpus, "resources/base_model", run, cfg)
    reference = read_json(run / "step-2" / "adapter_config.json")["base_model_name_or_path"]
    assert reference == "./resources/base_model" == read_json(run / "step-2" / CHECKPOINT_META)["base_model"]
    texts = [f.read_text() for f in (run / "step-2").iterdir() if f.suffix in (".json", ".md", ".jinja")]
    assert texts and not any(str(tmp_path) in text or str(tiny_model_dir) in text for text in texts)
    moved = workflow / "shared" / "doc"
    moved.parent.mkdir()
    shutil.move(run, moved)
    model, _ = load_model(moved / "step-2")
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    with torch.no_grad():
        assert not torch.allclose(model(ids).logits, tiny_model[0](ids).logits)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CheckpointError, match="its base model './resources/base_model'.*load the adapter from there"):
        load_model(moved / "step-2")


def test_control_run_sees_no_fiction(tiny_model_dir, corpus, tmp_path, finetune_cfg):
    _, webtext = _texts(corpus)
    log = finetune(
        base_model=tiny_model_dir,
        out_dir=tmp_path,
        run="control",
        fiction_texts=[],
        webtext_texts=webtext,
        settings=TrainSettings.from_block(finetune_cfg),
        seed=0,
    )
    assert (log["fiction_samples_seen"] == 0).all() and (log["fiction_in_step"] == 0).all()


def test_same_seed_same_run(tiny_model_dir, corpus, tmp_path, finetune_cfg):
    """DESIGN: two runs of the same config give identical tables."""
    logs = [_finetune(corpus, tiny_model_dir, tmp_path / str(i), finetune_cfg, seed=4) for i in range(2)]
    cols = ["step", "loss", "lr", "tokens", "fiction_samples_seen", "webtext_samples_seen"]
    assert logs[0][cols].equals(logs[1][cols])
    a = (tmp_path / "0" / "step-4" / "model.safetensors").read_bytes()
    assert a == (tmp_path / "1" / "step-4" / "model.safetensors").read_bytes()


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_a_chain_of_segments_is_the_run_in_one_go(tiny_model_dir, corpus, tmp_path, lora, finetune_cfg):
    """Resuming from a saved state (weights, optimizer, scheduler, sampler, RNG: LoRA dropout draws
    from it) gives the weights and log of an uninterrupted run, byte for byte."""
    cfg = finetune_cfg
    cfg["lora"] |= {"enabled": lora, "dropout": 0.1}
    runs = {}
    for every in (1, 4):  # four segments of one step, one of four steps
        log = _finetune(corpus, tiny_model_dir, tmp_path / str(every), cfg | {"checkpoint_every": every}, seed=3)
        weights = "adapter_model.safetensors" if lora else "model.safetensors"
        runs[every] = (log, (tmp_path / str(every) / "step-4" / weights).read_bytes())
    assert runs[1][0].equals(runs[4][0])
    assert runs[1][1] == runs[4][1]
    assert not (tmp_path / "1" / ".state").exists()


def test_a_diverged_run_stops_and_saves_nothing(tiny_model_dir, corpus, tmp_path, finetune_cfg):
    fiction, webtext = _texts(corpus)
    cfg = finetune_cfg | {"lr": 1e30, "min_lr": 1e30, "lr_warmup_steps": 0, "gradient_clipping": 0.0}
    with pytest.raises(TrainingDiverged, match=r"run doc: the loss is nan at step \d+; training stopped"):
        train_segment(
            base_model=tiny_model_dir,
            run="doc",
            fiction_texts=fiction,
            webtext_texts=webtext,
            settings=TrainSettings.from_block(cfg),
            seed=0,
            end_step=4,
            checkpoint_out=tmp_path / "step-4",
            state_out=tmp_path / "state",
        )
    assert list(tmp_path.iterdir()) == []


def test_a_state_resumes_only_its_own_run(tiny_model_dir, corpus, tmp_path, finetune_cfg):
    fiction, webtext = _texts(corpus)
    settings = TrainSettings.from_block(finetune_cfg)
    common = dict(base_model=tiny_model_dir, fiction_texts=fiction, webtext_texts=webtext, settings=settings, seed=0)
    train_segment(run="doc", end_step=2, checkpoint_out=tmp_path / "step-2", state_out=tmp_path / "state", **common)
    with pytest.raises(ValueError, match="state of run 'doc' at world size 1 cannot resume run 'event'"):
        train_segment(run="event", end_step=4, checkpoint_out=tmp_path / "x", resume_state=tmp_path / "state", **common)
    with pytest.raises(ValueError, match="from step 2 cannot end at step 2"):
        train_segment(run="doc", end_step=2, checkpoint_out=tmp_path / "x", resume_state=tmp_path / "state", **common)


def test_the_global_batch_is_shared_among_ranks(finetune_cfg):
    assert accumulation_steps(128, 4, 8) == 4 and accumulation_steps(4, 2, 1) == 2
    with pytest.raises(
        ValueError, match=r"global_batch_size \(6\) is not a multiple of micro_batch_size x world size \(2 x 2\)"
    ):
        accumulation_steps(6, 2, 2)
    cfg = finetune_cfg | {"zero_stage": 3, "offload": {"optimizer": True, "parameters": True}}
    zero = deepspeed_config(TrainSettings.from_block(cfg), world_size=2, bf16=True)["zero_optimization"]
    assert zero["stage"] == 3 and zero["stage3_gather_16bit_weights_on_model_save"]
    assert zero["offload_optimizer"]["device"] == zero["offload_param"]["device"] == "cpu"
    plain = deepspeed_config(TrainSettings.from_block(finetune_cfg), 1, False)
    assert "offload_param" not in plain["zero_optimization"]


def test_launch_commands():
    one = {"launcher": "torchrun", "nodes": 1, "processes_per_node": 1}
    assert launch_command(one, "py") == "py"
    torchrun = launch_command(one | {"processes_per_node": 4}, "py")
    assert torchrun == "py -m torch.distributed.run --standalone --nnodes 1 --nproc-per-node 4"
    srun = launch_command({"launcher": "srun", "nodes": 2, "processes_per_node": 4}, "py")
    assert srun.endswith("srun --nodes 2 --ntasks 8 --ntasks-per-node 4 py") and "MASTER_ADDR=$(scontrol" in srun
    with pytest.raises(ValueError, match="use srun for nodes > 1"):
        launch_command({"launcher": "torchrun", "nodes": 2, "processes_per_node": 1}, "py")


@pytest.mark.parametrize("name", ["config", "test", "paper", "cpu-full"])
def test_train_settings_build_from_every_config_and_round_trip(name):
    config = load_config(*([CONFIG / f"{name}.yaml"] if name != "config" else []))
    settings = TrainSettings.from_config(config)
    param = settings.param()
    assert TrainSettings.from_param(param) == settings
    assert TrainSettings.from_param(json.loads(json.dumps(param))) == settings  # lists back as tuples
    scalars = (bool, int, float, str)
    nested = [*param["offload"].values(), *param["lora"].values(), *param["lora"]["target_modules"]]
    assert all(isinstance(v, (*scalars, tuple, dict)) for v in param.values())  # what Snakemake records
    assert all(isinstance(v, (*scalars, tuple)) for v in nested)
    # every field is a key of the block (its config entry); the block's other keys are not read
    assert {f.name for f in dataclasses.fields(TrainSettings)} <= set(config["finetune"])
    assert settings.max_steps == config["finetune"]["max_steps"] and settings.lr == config["finetune"]["lr"]
    assert settings.lora.target_modules == tuple(config["finetune"]["lora"]["target_modules"])
    assert settings.offload.optimizer is config["finetune"]["offload"]["optimizer"]
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'lr'"):
        settings.lr = 1.0


def test_train_settings_are_the_block_less_what_training_does_not_read(finetune_cfg):
    settings = TrainSettings.from_block(finetune_cfg)
    lora = finetune_cfg["lora"] | {"target_modules": tuple(finetune_cfg["lora"]["target_modules"])}
    assert settings.param() == finetune_cfg | {"lora": lora}
    distributed = {"launcher": "srun", "nodes": 2, "processes_per_node": 4}
    launch = {"runs": ["doc"], "control": True, "distributed": distributed}
    assert TrainSettings.from_block(finetune_cfg | launch) == settings
    assert TrainSettings.from_block(finetune_cfg | {"lora": {"enabled": False}}).lora.r == 16  # the schema's default
    # a param (a job's spec) has the fields and nothing else
    with pytest.raises(TypeError, match=r"TrainSettings has no field\(s\) \['learning_rate'\]"):
        TrainSettings.from_param(settings.param() | {"learning_rate": 1e-3})
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'lr'"):
        TrainSettings.from_block({key: value for key, value in finetune_cfg.items() if key != "lr"})


def test_train_settings_checks_name_the_key(finetune_cfg):
    with pytest.raises(ValueError, match=r"finetune.lr must be above 0, got 0"):
        TrainSettings.from_block(finetune_cfg | {"lr": 0})
    with pytest.raises(ValueError, match=r"finetune.max_steps must be at least 1, got 0"):
        TrainSettings.from_block(finetune_cfg | {"max_steps": 0})
    with pytest.raises(ValueError, match=r"finetune.fiction_rate must be in \[0, 1\], got 1.5"):
        TrainSettings.from_block(finetune_cfg | {"fiction_rate": 1.5})
    with pytest.raises(
        ValueError, match=r"finetune.global_batch_size \(5\) must be a multiple of finetune.micro_batch_size \(2\)"
    ):
        TrainSettings.from_block(finetune_cfg | {"global_batch_size": 5})
    with pytest.raises(ValueError, match="finetune.offload.parameters needs finetune.zero_stage: 3"):
        TrainSettings.from_block(finetune_cfg | {"zero_stage": 2, "offload": {"optimizer": True, "parameters": True}})
    with pytest.raises(ValueError, match="finetune.lora.dropout must be in"):
        TrainSettings.from_block(finetune_cfg | {"lora": finetune_cfg["lora"] | {"dropout": 2.0}})


def test_optimization_settings_are_the_train_settings_less_the_schedule(finetune_cfg):
    """The SORT recipe's settings: the block less the schedule (the fields TrainSettings adds, which it does
    not read and its param refuses), to which ``schedule`` adds a run's schedule, giving the TrainSettings of
    the whole block."""
    names = {f.name for f in dataclasses.fields(TrainSettings)} - {
        f.name for f in dataclasses.fields(OptimizationSettings)
    }
    assert names == {"max_steps", "checkpoint_every", "fiction_rate", "fiction_warmup_steps"}
    schedule = {key: finetune_cfg[key] for key in names}
    rest = {key: value for key, value in finetune_cfg.items() if key not in names}
    settings = OptimizationSettings.from_block(rest)
    assert type(settings) is OptimizationSettings and settings.lora.target_modules == ("q_proj", "v_proj")
    assert OptimizationSettings.from_block(finetune_cfg) == settings
    assert settings.schedule(**schedule) == TrainSettings.from_block(finetune_cfg)
    assert isinstance(TrainSettings.from_block(finetune_cfg), OptimizationSettings)
    with pytest.raises(TypeError, match=r"OptimizationSettings has no field\(s\) \['max_steps'\]"):
        OptimizationSettings.from_param(settings.param() | {"max_steps": 4})
    with pytest.raises(ValueError, match=r"finetune.fiction_rate must be in \[0, 1\], got 2"):
        settings.schedule(**schedule | {"fiction_rate": 2})
    with pytest.raises(ValueError, match=r"finetune.lr must be above 0, got 0"):
        OptimizationSettings.from_block(rest | {"lr": 0})


def test_distributed_settings_check_the_launch():
    """config ``finetune.distributed``: the schema's defaults, and the checks launch_command makes."""
    assert DistributedSettings() == DistributedSettings.from_param({}) == DistributedSettings("torchrun", 1, 1)
    srun = DistributedSettings.from_param({"launcher": "srun", "nodes": 2, "processes_per_node": 4})
    assert srun.processes == 8 and srun.param() == {"launcher": "srun", "nodes": 2, "processes_per_node": 4}
    assert DistributedSettings.from_config(load_config()) == DistributedSettings()
    with pytest.raises(ValueError, match="finetune.distributed: torchrun starts the processes of one node"):
        DistributedSettings("torchrun", 2, 1)
    with pytest.raises(ValueError, match="finetune.distributed.launcher must be one of torchrun, srun, got 'mpirun'"):
        DistributedSettings("mpirun")
    with pytest.raises(ValueError, match="finetune.distributed.processes_per_node must be at least 1, got 0"):
        DistributedSettings("srun", 1, 0)
    with pytest.raises(TypeError, match=r"DistributedSettings has no field\(s\) \['gpus'\]"):
        DistributedSettings.from_param({"gpus": 2})
