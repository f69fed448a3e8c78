"""The search space of group placements: tie classes, their allowed devices, random placements and moves.

Every search over group placements (the baselines' random search and
annealing, and the learners of placer/rl) places *tie classes*: a group and
the groups tied to it by colocation constraints (`Grouping.tie`) share one
device. A tie class may use the devices where every one of its ops has a
kernel (all devices when none has: the measurer then reports the failure).
A random placement draws each class's device uniformly among its allowed
ones; a move sends one class to another allowed device, and annealing's
neighbourhood is the set of single moves.

No TensorFlow and no learner: the baselines and the learners import it alike.
"""

from __future__ import annotations

import numpy as np

from baselines import common
from placer.core import grouping as grouping_lib
from placer.core import measurement
from placer.core.cluster import Cluster
from placer.core.colocation import colocation_sets
from placer.core.measurement import Measurer
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement


def allowed_devices(op_class: np.ndarray, num_classes: int, op_ok: np.ndarray) -> np.ndarray:
    """Devices each class may go to: every op of the class has a kernel there.

    Args:
      op_class: [n_ops] class per op.
      num_classes: C.
      op_ok: [n_ops, D] bool, op can run on device (`baselines.common.supported`).

    Returns:
      [C, D] bool; a class with no allowed device (or no op) allows all (it will fail and be reported).
    """
    bad = np.zeros((num_classes, op_ok.shape[1]), dtype=bool)
    np.logical_or.at(bad, np.asarray(op_class), ~op_ok)
    bad[bad.all(axis=1)] = False
    return ~bad


def class_devices(
    op_devices: np.ndarray,
    op_class: np.ndarray,
    allowed: np.ndarray,
    weight: np.ndarray | None = None,
) -> np.ndarray:
    """The device of each class by vote of its ops (an op-level placement made a class-level one).

    Args:
      op_devices: [n_ops] device per op.
      op_class: [n_ops] class per op.
      allowed: [C, D] bool devices each class may use; the others get no vote.
      weight: [n_ops] vote of each op (default 1 each).

    Returns:
      [C] int64 device per class: its allowed device with the most votes (the lowest on ties).
    """
    votes = np.zeros(allowed.shape)
    np.add.at(votes, (np.asarray(op_class), np.asarray(op_devices)), 1.0 if weight is None else weight)
    return np.where(allowed, votes, -1.0).argmax(axis=1)


def draw(allowed: np.ndarray, rng: np.random.Generator, k: int) -> np.ndarray:
    """[k, C] for each row of `allowed` [C, D] a device drawn uniformly among its True entries."""
    return (rng.random((k, *allowed.shape)) * allowed).argmax(axis=2)


class Space:
    """The groups to place and the devices each tie class may use.

    Args:
      graph: the op graph.
      cluster: the target cluster.
      groups: the grouping to place; None: placer.core.grouping with
        `target_groups` and the floor for this cluster.
      target_groups: the grouping target when `groups` is None.

    Attributes:
      allowed: [L, D] bool, the devices of each tie class (leaders in `Grouping.leaders()` order).
    """

    def __init__(self, graph: OpGraph, cluster: Cluster, groups: grouping_lib.Grouping | None, target_groups: int):
        if groups is None:
            floor = grouping_lib.group_floor(target_groups, cluster.num_devices)
            groups = grouping_lib.group(graph, target_groups=target_groups, min_groups=floor)
        self.graph, self.cluster, self.groups = graph, cluster, groups
        self._ok = common.supported(graph, cluster)  # [n, D]
        self._op_class = groups.leader_index()[groups.op_group]
        self.allowed = allowed_devices(self._op_class, groups.num_leaders, self._ok)
        sets = colocation_sets(graph)
        self._coloc = np.concatenate(sets) if sets else np.zeros(0, np.int64)
        self._coloc_first = np.concatenate([np.full(len(m), m[0]) for m in sets]) if sets else self._coloc

    def devices(self, leader_devices: np.ndarray) -> np.ndarray:
        """[K, n_ops] legal op devices (`common.legalize`) of [K, L] devices per tie class."""
        dev = self.groups.expand(leader_devices)[..., self.groups.op_group].astype(np.int64)
        # Rows already legal (every op has its kernel, every colocation set on one device) are
        # what legalize returns unchanged; only the others go through it.
        legal = self._ok[np.arange(dev.shape[1]), dev].all(axis=1)
        legal &= (dev[:, self._coloc] == dev[:, self._coloc_first]).all(axis=1)
        for i in np.flatnonzero(~legal):
            dev[i] = common.legalize(self.graph, self.cluster, dev[i])
        return dev

    def placement(self, leader_devices: np.ndarray, method: str, **metadata) -> Placement:
        """The op-level placement of a device per tie class."""
        (dev,) = self.devices(np.asarray(leader_devices)[None])
        return common.finish(self.graph, self.cluster, dev, method, **metadata)

    def times(self, measurer: Measurer, leader_devices: np.ndarray) -> np.ndarray:
        """[K] measured step times (s; inf when failed) of [K, L] devices per tie class."""
        ms = measurement.measure_devices(
            measurer, self.graph, self.cluster.device_names, self.devices(np.asarray(leader_devices))
        )
        return np.array([m.step_time if m.ok else np.inf for m in ms], dtype=np.float64)

    def random(self, rng: np.random.Generator, k: int) -> np.ndarray:
        """[k, L] uniformly drawn allowed devices."""
        return draw(self.allowed, rng, k)

    def from_ops(self, op_devices: np.ndarray) -> np.ndarray:
        """[L] the device of each tie class by majority of its ops."""
        return class_devices(op_devices, self._op_class, self.allowed)

    def movable(self) -> np.ndarray:
        """[L] bool, the tie classes with more than one allowed device (the ones a move can take)."""
        return self.allowed.sum(axis=1) > 1


def uniform_moves(space: Space, rng: np.random.Generator, cur: np.ndarray, k: int) -> np.ndarray:
    """[k, L] neighbours of `cur`, each moving one tie class drawn uniformly to another allowed device."""
    movable = np.flatnonzero(space.movable())
    cand = np.repeat(cur[None], k, axis=0)
    which = rng.choice(movable, size=k)
    for i, g in enumerate(which):
        choices = np.flatnonzero(space.allowed[g] & (np.arange(space.allowed.shape[1]) != cur[g]))
        cand[i, g] = rng.choice(choices)
    return cand


def random_group_devices(
    graph: OpGraph,
    cluster: Cluster,
    groups: grouping_lib.Grouping,
    k: int,
    rng: np.random.Generator,
    devices=None,
) -> np.ndarray:
    """[k, G] device per group of `k` random placements, as random_search draws them.

    Each tie class goes to a device drawn uniformly among those with kernels
    for all of its ops (any device where none has), its groups with it.

    Args:
      graph: the op graph.
      cluster: the target cluster.
      groups: the grouping of `graph` to place.
      k: number of placements.
      rng: the random generator.
      devices: indices of the devices to draw from (default: all).

    Returns:
      [k, G] int device indices.
    """
    allowed = Space(graph, cluster, groups, 0).allowed
    if devices is not None:
        keep = np.zeros(cluster.num_devices, dtype=bool)
        keep[np.asarray(devices, dtype=np.int64)] = True
        allowed = allowed & keep
        allowed[~allowed.any(axis=1)] = keep  # none of them has kernels: any of them (the measurer reports it)
    return groups.expand(draw(allowed, rng, k))
