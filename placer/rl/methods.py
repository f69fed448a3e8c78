"""The registry of learned placement methods: name -> the learner class and its config class.

`placer-train --config.placer.train.method=NAME` picks one; each is built
from a placer.rl.learner.Setup and an instance of its config class (a frozen
dataclass). `--config.placer.train.learning=False` runs a method's
learning-off ablation. A new method is one module and one line here.
"""

from __future__ import annotations

import dataclasses

from placer.core.errors import InputError
from placer.rl import learn_adaptive, learn_anneal, learn_ce, learn_exact, learn_seq2seq
from placer.rl.learner import Setup


@dataclasses.dataclass(frozen=True)
class Method:
    """A registered method: its learner class (placer.rl.learner.Learner) and its config class."""

    learner: type
    config: type


METHODS = {
    "seq2seq": Method(learn_seq2seq.Seq2Seq, learn_seq2seq.Config),
    "annealing": Method(learn_anneal.Annealing, learn_anneal.Config),
    "annealing_warm": Method(learn_anneal.FromWarmStart, learn_anneal.Config),
    "random_search": Method(learn_anneal.RandomSearch, learn_anneal.Config),
    "cross_entropy": Method(learn_ce.CrossEntropy, learn_ce.Config),
    "ce_or_annealing": Method(learn_adaptive.CrossEntropyOrAnnealing, learn_adaptive.Config),
    # Annealing for a hint, then a CP-SAT solve that proves a bound (placer.measure.exact, docs/exact.md).
    "exact": Method(learn_exact.Exact, learn_anneal.Config),
}

# The method placer-train runs unless told otherwise (configs/common.py sets the same).
DEFAULT = "annealing_warm"


def names() -> list[str]:
    """The registered method names, in registry order."""
    return list(METHODS)


def get(name: str) -> Method:
    """The method registered as `name`.

    Raises:
      InputError: unknown name (the message lists the valid ones).
    """
    try:
        return METHODS[name]
    except KeyError:
        raise InputError(
            f"--config.placer.train.method: unknown method {name!r} (valid: {', '.join(METHODS)})"
        ) from None


def config_for(name: str, placer) -> object:
    """The config of method `name` from `config.placer`: its class's defaults, `learning` from `placer.train`.

    Raises:
      InputError: unknown name, or learning turned off for a method with nothing to turn off.
    """
    cls = get(name).config
    learning = bool(placer.train.get("learning", True))
    if has_learning(name):
        return cls(learning=learning)
    if not learning:
        learners = ", ".join(m for m in METHODS if has_learning(m))
        raise InputError(f"--config.placer.train.learning=False: {name} learns nothing (these do: {learners})")
    return cls()


def has_learning(name: str) -> bool:
    """Whether method `name` has a learning-off ablation (a `learning` field in its config)."""
    return "learning" in {f.name for f in dataclasses.fields(get(name).config)}


def build(name: str, setup: Setup):
    """The learner of method `name` built from `setup`, configured by `config_for(name, setup.placer)`."""
    return get(name).learner(setup, config_for(name, setup.placer))


def uses_warm_start(name: str) -> bool:
    """Whether the method `name` starts from the warm start's baseline."""
    return bool(getattr(get(name).learner, "uses_warm_start", False))


def uses_start(name: str) -> bool:
    """Whether the method `name` starts from single_gpu (on a cluster without a GPU, the fastest baseline)."""
    cls = get(name)
    return bool(getattr(getattr(cls, "func", cls), "uses_start", False))


def init_from(name: str) -> str | None:
    """What `--init_from` names for the method `name`: "policy" (a placer-pretrain folder) or None (the method
    starts from nothing learned)."""
    return getattr(get(name).learner, "init_from", None)


def policy_methods() -> list[str]:
    """The methods that start from a placer-pretrain policy."""
    return [m for m in METHODS if init_from(m) == "policy"]
