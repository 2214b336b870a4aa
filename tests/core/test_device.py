"""The device and precision policy (config ``compute``): resolution, batches in tokens, the rule's failure."""

import re
from types import SimpleNamespace

import numpy as np
import pytest

from knowlab.core import device
from knowlab.core.device import Compute, DeviceUnavailable, batch_limit, resolve_compute, use_compute
from knowlab.core.models import load_model
from knowlab.core.provenance import rule_step
from knowlab.core.scoring import score_token_ids


@pytest.fixture
def without_gpu():
    """Skips on a machine with a GPU: the test checks the behaviour of a machine without one."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("checks the behaviour of a machine without a GPU, and torch sees one")


no_gpu = pytest.mark.usefixtures("without_gpu")


@pytest.fixture(autouse=True)
def default_policy():
    yield
    use_compute(Compute())


@no_gpu
def test_auto_is_float32_on_the_cpu_without_a_gpu():
    assert resolve_compute({"device": "auto", "dtype": "auto"}) == Compute("cpu", "float32", None)
    assert resolve_compute(None) == Compute("cpu", "float32", None)
    assert resolve_compute({"max_batch_tokens": 512}).max_batch_tokens == 512


@no_gpu
@pytest.mark.parametrize("requested", ["cuda", "cuda:1"])
def test_a_gpu_that_is_not_there_fails_naming_the_key(requested):
    with pytest.raises(DeviceUnavailable, match=r"compute\.device is 'cuda.*no CUDA GPU.*compute\.device: auto"):
        resolve_compute({"device": requested})


@pytest.mark.parametrize(
    "cfg, message",
    [
        ({"device": "tpu"}, "compute.device must be auto, cpu, cuda or cuda:N, got 'tpu'"),
        ({"device": "cpu:0"}, "compute.device must be auto, cpu, cuda or cuda:N, got 'cpu:0'"),
        ({"dtype": "int8"}, "compute.dtype must be one of auto, float32, bfloat16, float16, got 'int8'"),
    ],
)
def test_unknown_values_are_refused(cfg, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        resolve_compute(cfg)


def test_batches_in_tokens():
    assert batch_limit([100, 90, 80, 10, 5], 2, None) == [2, 2, 1]
    # 250 tokens: 2 rows of 100, then 3 of 80 would be 240 (and at most batch_size 3)
    assert batch_limit([100, 100, 80, 80, 80, 10], 3, 250) == [2, 3, 1]
    assert batch_limit([400, 10], 4, 250) == [1, 1]  # wider than the budget: alone


def test_a_token_budget_changes_batches_not_scores(tiny_model_dir):
    model, tokenizer = load_model(tiny_model_dir)
    texts = ["a b c d e f g h i j k l " * k for k in range(1, 9)]
    pairs = [([tokenizer.bos_token_id], tokenizer(t)["input_ids"]) for t in texts]
    free = score_token_ids(model, pairs, batch_size=8)
    use_compute({"max_batch_tokens": 64})
    tight = score_token_ids(model, pairs, batch_size=8)
    for a, b in zip(free, tight, strict=True):
        np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-4)


def test_the_model_loads_in_the_policy_dtype(tiny_model_dir):
    import torch

    use_compute(Compute("cpu", "bfloat16"))
    model, _ = load_model(tiny_model_dir)
    assert model.dtype == torch.bfloat16
    assert device.place(torch.zeros(2), model).device.type == "cpu"


class _Outputs(list):
    """A job's outputs as Snakemake gives them to a script: every file when iterated, the named ones
    as attributes and from ``items()``."""

    def __init__(self, **named):
        super().__init__(named.values())
        self.__dict__.update(named)

    def items(self):
        return self.__dict__.items()


@no_gpu
def test_a_rule_asking_for_a_missing_gpu_fails_in_its_log(tmp_path):
    log = tmp_path / "job.log"
    smk = SimpleNamespace(
        log=[str(log)],
        params=SimpleNamespace(items=lambda: [("compute", {"device": "cuda"})]),
        rule="fictionalqa_evaluate",
        wildcards=SimpleNamespace(items=lambda: []),
        input=[],
        output=_Outputs(manifest=str(tmp_path / "m.json")),
    )
    with pytest.raises(DeviceUnavailable, match=r"compute\.device is 'cuda' but torch sees no CUDA GPU"):
        with rule_step(smk):
            pytest.fail("the body must not run")
    assert "compute.device is 'cuda'" in log.read_text()
    assert not (tmp_path / "m.json").exists()
