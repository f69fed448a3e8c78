"""A pretrained graph policy on disk, and the placement tasks it reads.

A policy folder holds `policy.json` (the policy kind, its sizes, the feature
layout with its op-type hashing, and the graphs it was and was not trained
on) and `checkpoints/` (tf.train.Checkpoint of the weights). Loading checks
the layout against the one this code builds and refuses, in one line, what
it cannot read.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import tensorflow as tf

from placer.core import checks, configs_util, generated
from placer.core import io as graph_io
from placer.core.cluster import Cluster
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph
from placer.rl import graph_features, graph_policy
from placer.rl import problem as problem_lib

MASKED = -1e9  # logit bias of a device a group cannot run on
POLICY_FILE = "policy.json"


@dataclasses.dataclass
class Task:
    """One graph on one cluster, ready for the graph policy.

    Attributes:
      name: "graph@cluster".
      problem: the grouped problem (placer.rl.problem.Problem).
      inputs: its GraphInputs.
      ctx: the inputs as tensors (GraphPolicy.logits arguments).
      mask_bias: [G, D] float32, MASKED where a group cannot run.
      measurer: measures the problem's placements.
    """

    name: str
    problem: problem_lib.Problem
    inputs: graph_features.GraphInputs
    ctx: tuple
    mask_bias: np.ndarray
    measurer: object

    def placements(self, actions: np.ndarray, **metadata):
        return [self.problem.placement(a, **metadata) for a in actions]


def make_task(graph: OpGraph, cluster: Cluster, placer_config, measurer, source: str) -> Task:
    """Groups `graph` for `cluster` and builds the graph policy's inputs.

    Raises:
      InputError: the graph lacks a cost column the policy reads (names `source`).
    """
    graph_features.check_graph(graph, source)
    problem, _ = problem_lib.make_problem(graph, cluster, placer_config)
    inputs = graph_features.inputs(
        graph, problem.op_group, problem.edge_src, problem.edge_dst, problem.edge_bytes, cluster, source
    )
    mask = np.where(problem.allowed, 0.0, MASKED).astype(np.float32)
    return Task(f"{graph.name}@{cluster.name}", problem, inputs, graph_policy.to_tensors(inputs), mask, measurer)


def load_spec(spec: str, cluster: Cluster) -> OpGraph:
    """The graph a spec names: "gen:FAMILY:OPS:SEED", a config "configs/M.py[:VARIANT]", or a graph JSON file.

    Raises:
      InputError: a malformed spec or a bad file.
    """
    if spec.startswith("gen:"):
        return generated.parse_spec(spec)
    path = spec.partition(":")[0]
    if path.endswith(".py"):
        from graphs import pipeline  # noqa: PLC0415 (TensorFlow model building, only for model specs)

        return pipeline.load_graph(cluster, config=configs_util.load_config(spec)).graph
    return graph_io.load(spec)


def describe(policy: graph_policy.GraphPolicy, **extra) -> dict:
    """What policy.json records."""
    return {
        "policy": graph_policy.NAME,
        "encoder": "gnn",
        "hidden_size": policy.hidden_size,
        "layers": policy.num_layers,
        "tanh_constant": policy.tanh_constant,
        "temperature": float(policy.temperature.numpy()),
        "features": graph_features.layout(),
        **extra,
    }


def trained_on(info: dict) -> str:
    """What a policy.json says the policy was trained on, in words.

    >>> trained_on({"steps": 300, "train": ["gen:chain:16:0", "nmt"], "clusters": ["k80x2"], "held_out": []})
    'pretrained 300 steps on 2 graphs (gen:chain:16:0, nmt) x 1 cluster (k80x2); held out: none'
    """
    train, clusters = list(info.get("train") or []), list(info.get("clusters") or [])
    held = list(info.get("held_out") or [])

    def some(items: list, limit: int = 4) -> str:
        return ", ".join(items[:limit]) + (f", ... ({len(items) - limit} more)" if len(items) > limit else "")

    return (
        f"pretrained {info.get('steps', '?')} steps on {len(train)} graph{'s' * (len(train) != 1)} ({some(train)}) "
        f"x {len(clusters)} cluster{'s' * (len(clusters) != 1)} ({some(clusters)}); held out: {some(held) or 'none'}"
    )


def read_description(policy_dir: str) -> dict:
    """policy.json of a policy folder, its layout checked.

    Raises:
      InputError: no folder, no or corrupt policy.json, another policy kind or feature layout.
    """
    path = os.path.join(policy_dir, POLICY_FILE)
    if not os.path.isdir(policy_dir):
        raise InputError(f"--policy={policy_dir}: no such folder")
    if not os.path.exists(path):
        raise InputError(f"{path}: missing; not a policy folder written by placer-pretrain")
    info = checks.read_json(path, "policy")  # size, depth and duplicate keys checked as for every input
    if not isinstance(info, dict) or info.get("policy") != graph_policy.NAME:
        kind = info.get("policy") if isinstance(info, dict) else None
        raise InputError(f"{path}: policy kind {kind!r}, this toolkit loads {graph_policy.NAME!r}")
    graph_features.check_layout(info.get("features") or {}, path)
    return info


def load_policy(policy_dir: str) -> tuple[graph_policy.GraphPolicy, dict]:
    """Loads a pretrained policy folder; returns (policy, its description).

    Raises:
      InputError: as `read_description`, or weights that do not restore.
    """
    info = read_description(policy_dir)
    policy = graph_policy.GraphPolicy(
        hidden_size=int(info["hidden_size"]),
        layers=int(info["layers"]),
        temperature=float(info.get("temperature", 1.0)),
        tanh_constant=float(info.get("tanh_constant", 5.0)),
        seed=0,  # overwritten by the checkpoint; a fixed seed keeps Keras from warning
    )
    f = graph_features.group_width()
    policy.logits(
        tf.zeros([2, f]),
        tf.constant([0]),
        tf.constant([1]),
        tf.zeros([1, 1]),
        tf.zeros([2, len(info["features"]["device_columns"])]),
    )
    latest = tf.train.latest_checkpoint(os.path.join(policy_dir, "checkpoints"))
    if latest is None:
        raise InputError(f"{policy_dir}/checkpoints: no checkpoint")
    try:
        tf.train.Checkpoint(policy=policy).restore(latest).expect_partial().assert_existing_objects_matched()
    except (tf.errors.OpError, AssertionError, ValueError) as e:
        raise InputError(f"{latest}: cannot restore the policy ({str(e).splitlines()[0]})") from None
    return policy, info


def policy_for_trainer(problem, cluster: Cluster, placer_config, *, seed: int, init_from: str | None, source: str):
    """The graph policy `placer-train` trains when `--config.placer.policy.encoder=gnn` or `--init_from` is given.

    Returns None for the seq2seq policy (the encoder is not "gnn" and no
    `init_from`), else a GraphPolicy bound to the problem, with `init_from`'s
    weights when given. The graph policy's temperature (`gnn_temperature`,
    or the pretrained one) replaces `placer_config.policy.temperature` and
    `temperature_end`, which are tuned for the seq2seq policy's logits. A
    pretrained policy's temperature is first raised until its logits on
    this graph leave the bound's flat ends (`GraphPolicy.unsaturate`), so
    that fine-tuning has gradients; `gnn_group_bias_scale` > 0 adds a table of
    per-group device logits learned on this graph alone (`GraphPolicy.bind`).

    Raises:
      InputError: the graph's features cannot be read, or a bad policy folder.
    """
    pc = placer_config.policy
    if init_from is None and pc.get("encoder", "bilstm") != "gnn":
        return None
    graph_features.check_graph(problem.graph, source)
    if init_from is not None:
        policy, _ = load_policy(init_from)
    else:
        policy = graph_policy.build(pc, seed=seed)
    policy.bind(
        graph_features.inputs(
            problem.graph, problem.op_group, problem.edge_src, problem.edge_dst, problem.edge_bytes, cluster, source
        ),
        group_bias_scale=float(pc.get("gnn_group_bias_scale", 0.0)),
    )
    if init_from is not None:
        policy.unsaturate()
    pc.temperature = pc.temperature_end = float(policy.temperature.numpy())
    return policy
