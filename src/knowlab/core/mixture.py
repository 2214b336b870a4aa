"""The fiction/webtext mixture sampler (Kirchenbauer et al. 2026, Sec. 4 and Fig. 2).

Each training sequence of optimizer step ``t`` is drawn from the fiction source
with probability ``p`` (paper: 0.05) once ``t >= W`` (paper: a fiction-free
warmup of W=50 optimizer steps), else from webtext.  So batch composition is
fixed in expectation whatever the size of the fiction split, and a small split
is repeated (epoched) faster.  Each source is consumed as a sequence of
tranches: a seeded permutation of its items; when a tranche is exhausted the
next permutation starts (the paper repeats the fiction tranche).

The sampler counts, per source, samples seen and epochs completed
(``samples_seen / len(source)``, fractional), the quantities of Fig. 2.  Its
position (:meth:`MixtureSampler.state_dict`) is part of a training run's resumable
state: a run resumed from it draws exactly the sequences an uninterrupted run draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from knowlab.core.rng import keyed_rng

SOURCES = ("fiction", "webtext")


@dataclass
class _Tranche:
    name: str
    size: int
    seed: int
    epoch: int = 0
    position: int = 0
    seen: int = 0
    order: list[int] = field(default_factory=list)

    def _permutation(self, epoch: int) -> list[int]:
        order = list(range(self.size))
        keyed_rng(self.seed, "tranche", self.name, epoch).shuffle(order)
        return order

    def next(self) -> int:
        if self.position == len(self.order):
            self.order = self._permutation(self.epoch)
            self.epoch += 1
            self.position = 0
        index = self.order[self.position]
        self.position += 1
        self.seen += 1
        return index


class MixtureSampler:
    """Draw ``(source, index)`` pairs for each optimizer step.

    Args:
        n_fiction: items in the fiction training split (0 for the webtext-only control).
        n_webtext: items in the webtext training pool (> 0).
        fiction_rate: probability ``p`` that a sequence is fiction after the warmup.
        warmup_steps: fiction-free optimizer steps ``W`` at the start.
        sequences_per_step: sequences per optimizer step, all ranks together (the global batch;
            each rank trains on its share of the same list, so the draws do not depend on the world size).
        seed: drives the Bernoulli draws and the tranche permutations.

    Raises:
        ValueError: ``fiction_rate`` outside [0, 1], an empty webtext pool, or a positive
            fiction rate with an empty fiction split.
    """

    def __init__(
        self,
        n_fiction: int,
        n_webtext: int,
        fiction_rate: float,
        warmup_steps: int,
        sequences_per_step: int,
        seed: int,
    ) -> None:
        if not 0.0 <= fiction_rate <= 1.0:
            raise ValueError(f"fiction_rate must be in [0, 1], got {fiction_rate}")
        if n_webtext <= 0:
            raise ValueError("the webtext pool is empty")
        if fiction_rate > 0 and n_fiction <= 0:
            raise ValueError("fiction_rate > 0 but the fiction training split is empty")
        self.fiction_rate = fiction_rate
        self.warmup_steps = warmup_steps
        self.sequences_per_step = sequences_per_step
        self.seed = seed
        self.tranches = {
            "fiction": _Tranche("fiction", n_fiction, seed),
            "webtext": _Tranche("webtext", n_webtext, seed),
        }

    def step(self, step: int) -> list[tuple[str, int]]:
        """The ``(source, index)`` of each sequence of optimizer step ``step`` (call in order)."""
        coin = keyed_rng(self.seed, "mixture", step)
        batch = []
        for _ in range(self.sequences_per_step):
            fiction = step >= self.warmup_steps and self.fiction_rate > 0 and coin.random() < self.fiction_rate
            source = "fiction" if fiction else "webtext"
            batch.append((source, self.tranches[source].next()))
        return batch

    def state_dict(self) -> dict[str, dict[str, int]]:
        """The sampler's position: per source its size, tranches started, position in the current
        tranche and samples seen (the permutations are recomputed from the seed on load)."""
        return {
            name: {"size": t.size, "epoch": t.epoch, "position": t.position, "seen": t.seen}
            for name, t in self.tranches.items()
        }

    def load_state_dict(self, state: dict[str, dict[str, int]]) -> None:
        """Continue from a position saved by :meth:`state_dict`.

        Raises:
            ValueError: a source's size differs from the saved one (the training data changed).
        """
        for name, saved in state.items():
            tranche = self.tranches[name]
            if saved["size"] != tranche.size:
                raise ValueError(
                    f"cannot resume the sampler: the {name} pool has {tranche.size} sequences, "
                    f"the saved state {saved['size']}"
                )
            tranche.epoch, tranche.position, tranche.seen = saved["epoch"], saved["position"], saved["seen"]
            tranche.order = tranche._permutation(tranche.epoch - 1) if tranche.epoch else []

    def counters(self) -> dict[str, float]:
        """Samples seen and epochs completed per source so far."""
        out: dict[str, float] = {}
        for name, tranche in self.tranches.items():
            out[f"{name}_samples_seen"] = tranche.seen
            out[f"{name}_epochs"] = tranche.seen / tranche.size if tranche.size else 0.0
        return out


def fiction_exposure(
    n_fiction: int,
    fiction_rate: float,
    warmup_steps: int,
    sequences_per_step: int,
    seed: int,
    steps: Sequence[int],
) -> dict[int, tuple[float, set[int]]]:
    """What a fiction run has trained on by each of ``steps`` (optimizer steps done), from the draws of its
    own :class:`MixtureSampler` (the same arguments as a training run's; no model, no data): per step,
    the fiction epochs completed (``samples_seen / n_fiction``, Fig. 2's quantity) and the indices of the
    fiction training items drawn at least once (an index into the split's ``train_documents``, the order
    :func:`knowlab.fiction.splits.training_texts` hands to the trainer).  The webtext pool's size does
    not change the fiction draws.

    Raises:
        ValueError: as :class:`MixtureSampler` (``n_fiction`` 0 with a positive rate, a rate outside [0, 1]).
    """
    sampler = MixtureSampler(n_fiction, 1, fiction_rate, warmup_steps, sequences_per_step, seed)
    seen: set[int] = set()
    out: dict[int, tuple[float, set[int]]] = {}
    wanted = sorted(set(steps))
    for step in range(max(wanted, default=0)):
        seen.update(index for source, index in sampler.step(step) if source == "fiction")
        if step + 1 in wanted:
            out[step + 1] = (sampler.counters()["fiction_epochs"], set(seen))
    return out
