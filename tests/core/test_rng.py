"""keyed_rng: the same (seed, keys) give the same stream, in this process and in any other, whatever
Python's hash salt; other keys give other streams; literal first draws pin the derivation."""

import os
import subprocess
import sys
import textwrap

from knowlab.core.rng import keyed_rng

# the draws a script prints for two keys: floats, a 63-bit seed (as findings draws), an index, a choice
_DRAWS = textwrap.dedent("""
    from knowlab.core.rng import keyed_rng

    for seed, keys in ((0, ("findings", "claim")), (42, ("q0001", "gold position"))):
        rng = keyed_rng(seed, *keys)
        print(repr((rng.random(), rng.random(), rng.getrandbits(63), rng.randrange(1000), rng.choice("abcdef"))))
    print(hash("findings"))
    """)


def _draws(seed, *keys):
    rng = keyed_rng(seed, *keys)
    return (rng.random(), rng.random(), rng.getrandbits(63), rng.randrange(1000), rng.choice("abcdef"))


def test_same_key_gives_the_same_stream():
    assert _draws(7, "sort-pairs", "book", 40, 10) == _draws(7, "sort-pairs", "book", 40, 10)
    a, b = keyed_rng(3, "x"), keyed_rng(3, "x")
    assert [a.random() for _ in range(100)] == [b.random() for _ in range(100)]


def test_different_seed_or_keys_give_different_streams():
    streams = {
        _draws(*inputs)
        for inputs in [(0, "a"), (1, "a"), (0, "b"), (0, "a", "b"), (0, "b", "a"), (0, "ab"), (0,), (0, "a", 1)]
    }
    assert len(streams) == 8


def test_literal_first_draws_pin_the_derivation():
    """Values printed by this revision (sha256 of ``"seed\\x1fkey..."``, first 8 bytes big-endian, as the
    seed of ``random.Random``): a change of the derivation, or of Python's Mersenne Twister seeding,
    changes every keyed draw of the pipeline (SORT excerpts, gold positions, bootstrap seeds)."""
    assert _draws(0, "findings", "claim") == (0.12352263261132834, 0.14982542883623184, 9076257077824151409, 73, "a")
    assert _draws(42, "q0001", "gold position") == (
        0.4453242923721511,
        0.2779489532930375,
        8307946629684221671,
        223,
        "e",
    )


def test_streams_are_the_same_in_other_processes_whatever_the_hash_seed():
    """Two fresh interpreters with different PYTHONHASHSEED print the draws this process makes, while
    their ``hash()`` of a key string differs (the salt took effect): the derivation does not use ``hash()``."""
    keyed = [(0, ("findings", "claim")), (42, ("q0001", "gold position"))]
    expected = [repr(_draws(seed, *keys)) for seed, keys in keyed]
    hashes = set()
    for hash_seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run([sys.executable, "-c", _DRAWS], env=env, capture_output=True, text=True, check=True)
        *draws, hashed = done.stdout.splitlines()
        assert draws == expected
        hashes.add(hashed)
    assert len(hashes) == 2
