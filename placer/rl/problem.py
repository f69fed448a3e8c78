"""The placement problem the learner solves: a graph's groups, their features and edges.

`make_problem` groups a cost-annotated graph with the paper's co-location
heuristics (placer.core.grouping) and builds what every policy reads.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from baselines import common, space
from placer.core import features, grouping, measurement
from placer.core.cluster import Cluster
from placer.core.measurement import Measurement
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement


@dataclasses.dataclass(frozen=True)
class Problem:
    """What the trainer places: a graph, its groups and their features.

    Attributes:
      graph: the OpGraph.
      op_group: [n_ops] group of each op.
      type_ids: [G] op-type id per group.
      features: [G, F] numeric features per group.
      vocab_size: op-type vocabulary size.
      device_names: the cluster's device names, in index order.
      allowed: [G, D] bool, devices every op of the group has a kernel for.
      leader: [G] tie leader of each group (itself, or an earlier group whose
        device it must share because of a colocation constraint).
      edge_src, edge_dst, edge_bytes: [E] the group graph's edges (producer
        group, consumer group, bytes per step), for encoders that read the
        graph; None when unknown.
      seconds: [G, D] compute seconds per step of each group's tie class on
        each device (its ops' costs over the device's speed; NaN = no kernel),
        or None when unknown.
      op_level: measure placements op by op (the placement carries no group
        map); otherwise a measurer may run each group's ops back to back,
        which is faster but overestimates step times (by up to 40% on NMT).
      base: [n_ops] device per op of the baseline a search starts from, where
        the groups mix its devices (`with_base`), else None.
      base_target: [G] each group's majority device in `base`: a group placed
        there keeps `base`'s own devices op by op, so the group placement
        `base_target` is `base` itself, which a search can always return to.
    """

    graph: object
    op_group: np.ndarray
    type_ids: np.ndarray
    features: np.ndarray
    vocab_size: int
    device_names: tuple[str, ...]
    allowed: np.ndarray
    leader: np.ndarray | None = None
    op_level: bool = True
    edge_src: np.ndarray | None = None
    edge_dst: np.ndarray | None = None
    edge_bytes: np.ndarray | None = None
    seconds: np.ndarray | None = None
    base: np.ndarray | None = None
    base_target: np.ndarray | None = None

    def __post_init__(self):
        if self.leader is None:
            object.__setattr__(self, "leader", np.arange(len(self.type_ids), dtype=np.int32))

    @property
    def num_groups(self) -> int:
        return len(self.type_ids)

    def target(self, op_devices: np.ndarray) -> np.ndarray:
        """[G] the device of each group by majority of its ops in `op_devices` [n_ops], tied groups alike."""
        classes = space.class_devices(op_devices, self.leader[self.op_group], self.allowed)
        return classes[self.leader].astype(np.int32)

    def with_base(self, op_devices: np.ndarray) -> Problem:
        """This problem decoding group placements relative to the op placement `op_devices` [n_ops] (a
        baseline's), when its groups mix that placement's devices; else itself.

        A group on its majority device (`target`) keeps the baseline's devices op by op, any other device
        takes the whole group: the baseline stays reachable, as the group placement `target(op_devices)`,
        and every group placement means what it meant before where the groups do not mix it. Measured op
        by op (a group may then be split).
        """
        op_devices = np.asarray(op_devices, np.int64)
        target = self.target(op_devices)
        if np.array_equal(target[self.op_group], op_devices):
            return self
        return dataclasses.replace(self, base=op_devices, base_target=target, op_level=True)

    def op_devices(self, group_devices: np.ndarray) -> np.ndarray:
        """[..., n_ops] device per op of [..., G] devices per group (relative to `base` when there is one)."""
        group_devices = np.asarray(group_devices)
        devices = group_devices[..., self.op_group]
        if self.base is None:
            return devices
        keep = devices == self.base_target[self.op_group]
        return np.where(keep, self.base, devices)

    def placement(self, group_devices: np.ndarray, **metadata) -> Placement:
        """The op-level placement of a device per group."""
        if self.op_level:
            return Placement.from_ops(self.graph, self.op_devices(group_devices), self.device_names, **metadata)
        return Placement.from_groups(self.graph, self.op_group, group_devices, self.device_names, **metadata)

    def measure(self, measurer, actions: np.ndarray) -> list[Measurement]:
        """Measures [K, G] devices per group as `placement` would place them, without
        building a Placement per row when the measurer takes device arrays
        (placer.core.measurement.measure_devices)."""
        actions = np.asarray(actions)
        if self.op_level:
            return measurement.measure_devices(measurer, self.graph, self.device_names, self.op_devices(actions))
        return measurement.measure_devices(measurer, self.graph, self.device_names, actions, op_group=self.op_group)


# Our choice: the warm start's colours may cost up to 4x the target's groups (the tiny NMT
# with a 3-device colouring: 538 groups for a target of 256); a 20k-op layered graph reached
# 5,999 and made the policy's first step take minutes.
COLOUR_SLACK = 4


def tie_class_seconds(graph: OpGraph, cluster: Cluster, op_leader: np.ndarray, num_groups: int) -> np.ndarray:
    """[G, D] compute seconds of each tie class on each device, indexed by its leader group.

    Args:
      graph: cost-annotated OpGraph.
      cluster: the devices (their types give the costs, their speeds divide them).
      op_leader: [n_ops] tie leader group of each op.
      num_groups: G.

    Returns:
      Row g sums the ops whose leader is g (0 for groups that lead nothing);
      NaN where an op of the class has no kernel on the device.
    """
    out = np.zeros((num_groups, cluster.num_devices))
    np.add.at(out, np.asarray(op_leader), cluster.op_seconds(graph, dispatch=False))
    return out


def make_problem(graph: OpGraph, cluster: Cluster, placer_config, op_colors: np.ndarray | None = None):
    """Groups the graph and builds the policy's inputs.

    Args:
      graph: cost-annotated OpGraph.
      cluster: the target cluster.
      placer_config: `config.placer` (its grouping section is used).
      op_colors: [n_ops] device per op of a placement that should stay
        expressible group by group (the warm start's), or None. Dropped
        when keeping it would leave more than COLOUR_SLACK times the
        grouping's target: the graph is then grouped as placer-extract
        groups it.

    Returns:
      (Problem, placer.core.grouping.Grouping)
    """
    groups = group_graph(graph, cluster, placer_config, op_colors)
    feats = features.features(graph, groups)
    leader = np.asarray(groups.tie, np.int32)
    # A tie class can only go where all of its groups can run.
    allowed = space.allowed_devices(leader[groups.op_group], groups.num_groups, common.supported(graph, cluster))
    problem = Problem(
        graph=graph,
        op_group=np.asarray(groups.op_group),
        type_ids=np.asarray(feats.type_ids),
        features=np.asarray(feats.matrix(), dtype=np.float32),
        vocab_size=len(feats.vocab),
        device_names=cluster.device_names,
        allowed=allowed[leader],
        leader=leader,
        op_level=placer_config.train.get("measure_op_level", True),
        edge_src=np.asarray(groups.edge_src),
        edge_dst=np.asarray(groups.edge_dst),
        edge_bytes=np.asarray(groups.edge_bytes),
        seconds=tie_class_seconds(graph, cluster, leader[groups.op_group], groups.num_groups)[leader],
    )
    return problem, groups


def group_graph(graph: OpGraph, cluster: Cluster, placer_config, op_colors: np.ndarray | None = None):
    """The grouping `make_problem` places (its arguments as there): the config's grouping, kept apart by
    `op_colors` unless that leaves more than COLOUR_SLACK times the target's groups.

    Returns:
      placer.core.grouping.Grouping.
    """
    gc = placer_config.grouping
    options = {
        "merge_single_consumer": gc.merge_single_consumer,
        "max_group_ops": gc.max_group_ops,
        "target_groups": gc.get("target_groups", 0),
        "scope_depth": gc.get("scope_depth", 0),
        "colocate_gradients": gc.get("colocate_gradients", False),
    }
    min_groups = gc.get("min_groups", -1)
    options["min_groups"] = (
        grouping.group_floor(options["target_groups"], cluster.num_devices) if min_groups < 0 else min_groups
    )
    limit = COLOUR_SLACK * options["target_groups"]
    groups = grouping.group(graph, **options, op_colors=op_colors, give_up_above=limit)
    if groups is None or (op_colors is not None and limit and groups.num_groups > limit):
        # The warm start's colours kept groups apart far past the target (thousands of groups on a
        # large graph, each a step of the policy): group as placer-extract does; the warm start then
        # imitates each group's device.
        groups = grouping.group(graph, **options)
    return groups
