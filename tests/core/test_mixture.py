"""The fiction/webtext mixture sampler (FictionalQA Sec. 4, Fig. 2)."""

import pytest

from knowlab.core.mixture import MixtureSampler


def test_warmup_is_fiction_free_then_rate_holds():
    sampler = MixtureSampler(
        n_fiction=10, n_webtext=1000, fiction_rate=0.25, warmup_steps=5, sequences_per_step=8, seed=1
    )
    batches = [sampler.step(t) for t in range(400)]
    assert all(src == "webtext" for batch in batches[:5] for src, _ in batch)
    after = [src for batch in batches[5:] for src, _ in batch]
    rate = after.count("fiction") / len(after)
    assert abs(rate - 0.25) < 0.02


def test_fiction_tranche_repeats_and_counters_match():
    sampler = MixtureSampler(n_fiction=7, n_webtext=50, fiction_rate=0.5, warmup_steps=0, sequences_per_step=4, seed=2)
    fiction = [i for t in range(60) for src, i in sampler.step(t) if src == "fiction"]
    counters = sampler.counters()
    assert counters["fiction_samples_seen"] == len(fiction)
    assert counters["fiction_epochs"] == pytest.approx(len(fiction) / 7)
    assert counters["fiction_samples_seen"] + counters["webtext_samples_seen"] == 240
    full = len(fiction) // 7
    for epoch in range(full):  # each tranche is a permutation of all items
        assert sorted(fiction[epoch * 7 : (epoch + 1) * 7]) == list(range(7))


def test_control_and_determinism():
    control = MixtureSampler(0, 30, 0.0, 0, 4, seed=3)
    assert all(src == "webtext" for t in range(20) for src, _ in control.step(t))
    a = MixtureSampler(5, 30, 0.5, 1, 4, seed=9)
    b = MixtureSampler(5, 30, 0.5, 1, 4, seed=9)
    assert [a.step(t) for t in range(30)] == [b.step(t) for t in range(30)]


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"fiction_rate must be in \[0, 1\], got 1\.5"):
        MixtureSampler(5, 5, 1.5, 0, 1, 0)
    with pytest.raises(ValueError, match="fiction training split is empty"):
        MixtureSampler(0, 5, 0.1, 0, 1, 0)
    with pytest.raises(ValueError, match="webtext pool is empty"):
        MixtureSampler(5, 0, 0.1, 0, 1, 0)


def test_a_resumed_sampler_draws_what_an_uninterrupted_one_draws():
    whole = MixtureSampler(5, 7, 0.4, 1, 6, seed=2)
    draws = [whole.step(t) for t in range(6)]
    first = MixtureSampler(5, 7, 0.4, 1, 6, seed=2)
    for t in range(3):
        first.step(t)
    resumed = MixtureSampler(5, 7, 0.4, 1, 6, seed=2)
    resumed.load_state_dict(first.state_dict())
    assert [resumed.step(t) for t in range(3, 6)] == draws[3:]
    assert resumed.counters() == whole.counters()
    with pytest.raises(ValueError, match="the webtext pool has 8 sequences, the saved state 7"):
        MixtureSampler(5, 8, 0.4, 1, 6, seed=2).load_state_dict(first.state_dict())
