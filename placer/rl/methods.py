"""The registry of learned placement methods: name -> a class implementing placer.rl.learner.Learner.

`placer-train --config.placer.train.method=NAME` picks one; each is built
from a placer.rl.learner.Setup. A new method is one module and one line here.
"""

from __future__ import annotations

import functools

from placer.core.errors import InputError
from placer.rl import learn_adaptive, learn_anneal, learn_ce, learn_seq2seq

METHODS = {
    # The paper's seq2seq policy trained by REINFORCE (or PPO, per config.placer.train.algorithm);
    # with --init_from, the pretrained graph policy instead.
    "seq2seq": learn_seq2seq.Seq2Seq,
    # baselines.search's simulated annealing itself, driven by the same loop (the reference).
    "annealing": learn_anneal.Plain,
    # The same annealing started from the warm start's fastest baseline (the reference for warm-started methods).
    "annealing_warm": learn_anneal.FromWarmStart,
    "random_search": learn_anneal.RandomSearch,  # baselines.search's random search, the same way
    # Annealing whose moves come from a learned distribution (cross-entropy on improving moves).
    "learned_moves": learn_anneal.LearnedMoves,
    "learned_moves_off": functools.partial(learn_anneal.LearnedMoves, learning=False),
    # Annealing whose neighbours are screened by a cost model fitted to the measurements so far.
    "cost_model": learn_anneal.CostModel,
    "cost_model_off": functools.partial(learn_anneal.CostModel, learning=False),
    # A table of device probabilities per tie class trained on its elite samples (cross-entropy method).
    "cross_entropy": learn_ce.CrossEntropy,
    "cross_entropy_off": functools.partial(learn_ce.CrossEntropy, learning=False),
    # Cross-entropy, or annealing with a learned proposal table where single_gpu beats its start's samples.
    "ce_or_annealing": learn_adaptive.CrossEntropyOrAnnealing,
    "ce_or_annealing_off": functools.partial(learn_adaptive.CrossEntropyOrAnnealing, learning=False),
}

# The method placer-train runs unless told otherwise.
DEFAULT = "seq2seq"


def names() -> list[str]:
    """The registered method names, in registry order."""
    return list(METHODS)


def get(name: str):
    """The class registered as `name`.

    Raises:
      InputError: unknown name (the message lists the valid ones).
    """
    try:
        return METHODS[name]
    except KeyError:
        raise InputError(
            f"--config.placer.train.method: unknown method {name!r} (valid: {', '.join(METHODS)})"
        ) from None


def uses_warm_start(name: str) -> bool:
    """Whether the method `name` starts from the warm start's baseline."""
    cls = get(name)
    return bool(getattr(getattr(cls, "func", cls), "uses_warm_start", False))


def uses_start(name: str) -> bool:
    """Whether the method `name` starts from single_gpu (on a cluster without a GPU, the fastest baseline)."""
    cls = get(name)
    return bool(getattr(getattr(cls, "func", cls), "uses_start", False))


def init_from(name: str) -> str | None:
    """What `--init_from` names for the method `name`: "policy" (a placer-pretrain folder), the method whose
    workdir it reads, or None (the method starts from nothing learned)."""
    cls = get(name)
    return getattr(getattr(cls, "func", cls), "init_from", None)


def policy_methods() -> list[str]:
    """The methods that start from a placer-pretrain policy."""
    return [m for m in METHODS if init_from(m) == "policy"]
