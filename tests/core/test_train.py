"""DeepSpeed fine-tuning on CPU (gloo): full weights and LoRA adapters, checkpoints that transformers loads."""

import pytest
import torch

from knowlab.core.train import finetune

pytestmark = pytest.mark.usefixtures("restore_environment")


def _texts(corpus):
    return [r["fiction"] for r in corpus["fictions"][:6]], [r["fiction"][:200] for r in corpus["fictions"][30:50]]


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_finetune_writes_loadable_checkpoints_and_log(tiny_model_dir, corpus, tmp_path, lora, finetune_cfg):
    from transformers import AutoModelForCausalLM

    fiction, webtext = _texts(corpus)
    cfg = finetune_cfg
    cfg["lora"]["enabled"] = lora
    log = finetune(
        base_model=tiny_model_dir,
        out_dir=tmp_path,
        run="doc",
        fiction_texts=fiction,
        webtext_texts=webtext,
        cfg=cfg,
        seed=0,
    )
    assert list(log["step"]) == [1, 2, 3, 4]
    assert (log.loc[0, "fiction_samples_seen"] == 0) and log["fiction_samples_seen"].iloc[-1] > 0
    assert {"loss", "lr", "tokens", "fiction_epochs", "webtext_epochs"} <= set(log.columns)
    assert log["lr"].iloc[-1] == pytest.approx(1e-3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step-0", "step-2", "step-4"]
    if lora:
        assert (tmp_path / "step-4" / "adapter_config.json").is_file()
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    with torch.no_grad():
        first = AutoModelForCausalLM.from_pretrained(tmp_path / "step-0")(ids).logits
        last = AutoModelForCausalLM.from_pretrained(tmp_path / "step-4")(ids).logits
        base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)(ids).logits
    torch.testing.assert_close(first, base)
    assert not torch.allclose(last, base)


def test_control_run_sees_no_fiction(tiny_model_dir, corpus, tmp_path, finetune_cfg):
    _, webtext = _texts(corpus)
    log = finetune(
        base_model=tiny_model_dir,
        out_dir=tmp_path,
        run="control",
        fiction_texts=[],
        webtext_texts=webtext,
        cfg=finetune_cfg,
        seed=0,
    )
    assert (log["fiction_samples_seen"] == 0).all() and (log["fiction_in_step"] == 0).all()


def test_same_seed_same_run(tiny_model_dir, corpus, tmp_path, finetune_cfg):
    """DESIGN: two runs of the same config give identical tables."""
    fiction, webtext = _texts(corpus)
    logs = [
        finetune(
            base_model=tiny_model_dir,
            out_dir=tmp_path / str(i),
            run="doc",
            fiction_texts=fiction,
            webtext_texts=webtext,
            cfg=finetune_cfg,
            seed=4,
        )
        for i in range(2)
    ]
    cols = ["step", "loss", "lr", "tokens", "fiction_samples_seen", "webtext_samples_seen"]
    assert logs[0][cols].equals(logs[1][cols])
    a = (tmp_path / "0" / "step-4" / "model.safetensors").read_bytes()
    assert a == (tmp_path / "1" / "step-4" / "model.safetensors").read_bytes()
