"""The suite's graphs and clusters, and two adapters: the costed graph of a suite graph, and its lower bound.

Graphs (every one a training step, costs for the cluster's device types):
  - the paper's three (configs/rnnlm.py, nmt.py, inception_v3.py), through placer's own pipeline;
  - 22 tf_keras.applications classifiers and three Keras sequence models (bench/suite_models.py),
    batch BATCH, built by `costed_graph` and cached by content hash;
  - seeded layered DAGs of three sizes (placer.core.generated, costs drawn, no TensorFlow).

`costed_graph` and `lower_bound` are the only places that know how a graph is
built and bounded; the rest of the suite sees an OpGraph and a number.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import os

import numpy as np

from placer.core import generated
from placer.core import io as graph_io
from placer.core.cluster import Cluster
from placer.measure import bounds

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH = 32  # examples per training step of the Keras models
DATA_SEED = 1  # seed of the synthetic inputs made in the graph
CLUSTERS = ("k80x4", "k80x4_slow4")
DAG_SIZES = {"dag300": 300, "dag1000": 1000, "dag3000": 3000}
DAG_SEED = 48
CACHE_DIR = os.path.join(os.environ.get("PLACER_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "placer")), "suite")  # fmt: skip
MODELS_FILE = os.path.join(ROOT, "bench", "suite_models.py")
# Suite name -> family of the tf_keras.applications architectures (bench/suite_models.py has a function of each name).
APPLICATIONS = {
    "resnet50": "resnet",
    "resnet101": "resnet",
    "resnet50v2": "resnetv2",
    "resnet101v2": "resnetv2",
    "vgg16": "vgg",
    "vgg19": "vgg",
    "densenet121": "densenet",
    "densenet169": "densenet",
    "mobilenet": "mobilenet",
    "mobilenetv2": "mobilenet",
    "mobilenetv3small": "mobilenet",
    "mobilenetv3large": "mobilenet",
    "efficientnetb0": "efficientnet",
    "efficientnetb1": "efficientnet",
    "efficientnetv2b0": "efficientnetv2",
    "efficientnetv2b1": "efficientnetv2",
    "nasnetmobile": "nasnet",
    "xception": "xception",
    "inceptionresnetv2": "inceptionresnet",
    "convnexttiny": "convnext",
    "regnetx002": "regnet",
    "regnety002": "regnet",
}


@dataclasses.dataclass(frozen=True)
class SuiteGraph:
    """One graph of the suite.

    Attributes:
      name: its name in result files and tables.
      kind: "paper" (a placer model config), "keras" (a function of bench/suite_models.py) or "dag".
      source: the config path, the function name, or the DAG's op count as text.
      family: what the split groups by ("paper", an application family, "sequence", "dag").
    """

    name: str
    kind: str
    source: str
    family: str


def all_graphs() -> list[SuiteGraph]:
    """Every graph of the full suite, in table order."""
    out = [SuiteGraph(n, "paper", f"configs/{n}.py", "paper") for n in ("rnnlm", "nmt", "inception_v3")]
    out += [SuiteGraph(n, "keras", n, fam) for n, fam in APPLICATIONS.items()]
    out += [SuiteGraph(n, "keras", n, "sequence") for n in ("transformer_encoder", "lstm_lm", "seq2seq_attention")]
    out += [SuiteGraph(n, "dag", str(ops), "dag") for n, ops in DAG_SIZES.items()]
    return out


def by_name(names) -> list[SuiteGraph]:
    """The suite graphs named, in the order given.

    Raises:
      KeyError: an unknown name (its message lists the valid ones).
    """
    table = {g.name: g for g in all_graphs()}
    unknown = [n for n in names if n not in table]
    if unknown:
        raise KeyError(f"unknown suite graph(s) {', '.join(unknown)} (valid: {', '.join(table)})")
    return [table[n] for n in names]


def cache_key(graph: SuiteGraph, cluster: Cluster) -> str:
    """The content hash a Keras graph's cache file is named by: the model file's and the graph-building code's
    text, the batch and data seed, the function's name, the TensorFlow version and the cluster's device kinds."""
    from graphs import pipeline  # noqa: PLC0415

    h = hashlib.sha256()
    devices = sorted({(d.type, d.memory_bytes, d.peak_gflops, d.memory_bandwidth) for d in cluster.devices})
    settings = {"function": graph.source, "batch": BATCH, "seed": DATA_SEED, "devices": devices}
    h.update(json.dumps({**settings, "tensorflow": pipeline.tensorflow_version()}, sort_keys=True).encode())
    for path in (MODELS_FILE, *(os.path.join(ROOT, p) for p in ("bench/suite_graphs.py", "graphs/extract.py", "graphs/costs.py"))):  # fmt: skip
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def costed_graph(graph: SuiteGraph, cluster: Cluster):
    """ADAPTER: the cost-annotated OpGraph of `graph` for the device types of `cluster`.

    Keras graphs are built by `keras_training_graph` and cached in CACHE_DIR
    under their content hash (a second call reads the file); the library's
    `--model=FILE.py:FUNCTION` route can replace that function.
    """
    if graph.kind == "dag":
        return generated.generate("layered", int(graph.source), DAG_SEED)
    if graph.kind == "paper":
        from graphs import pipeline  # noqa: PLC0415 (TensorFlow, only when the cache lacks the graph)
        from placer.core import configs_util  # noqa: PLC0415

        return pipeline.load_graph(cluster, config=configs_util.load_config(graph.source)).graph
    path = os.path.join(CACHE_DIR, f"{graph.name}-{cache_key(graph, cluster)}.graph.json.gz")
    if os.path.exists(path):
        return graph_io.load(path)
    suite_models = importlib.import_module("bench.suite_models")  # TensorFlow
    op_graph = keras_training_graph(graph.name, getattr(suite_models, graph.source), cluster)
    os.makedirs(CACHE_DIR, exist_ok=True)
    graph_io.save(op_graph, path)
    return op_graph


def keras_training_graph(name: str, function, cluster: Cluster):
    """One SGD training step of the compiled Keras model `function()` as an OpGraph with Grappler costs.

    Built as models/inception_v3.py builds its own: a fresh tf.Graph in graph
    mode, inputs and labels made in the graph by stateless random ops, the
    model called once on them in training mode, its compiled loss, gradients
    and update by tf.compat.v1 SGD, the forward pass's own variable updates
    (batch-norm averages) run with each step; the graph is then pruned to what
    the step and the initializer need (the Keras placeholders drop out).
    """
    tf = importlib.import_module("tensorflow")
    tf_keras = importlib.import_module("tf_keras")
    from graphs import costs, extract  # noqa: PLC0415 (TensorFlow)

    g = tf.Graph()
    with g.as_default():
        tf.compat.v1.set_random_seed(DATA_SEED)
        model = function()
        xs = []
        vocab = min([layer.input_dim for layer in model.submodules if isinstance(layer, tf_keras.layers.Embedding)] or [2])  # fmt: skip
        with tf.compat.v1.name_scope("input"):
            for i, x in enumerate(model.inputs):
                shape, seed = [BATCH, *x.shape.as_list()[1:]], [DATA_SEED, i]
                if x.dtype.is_integer:
                    xs.append(tf.random.stateless_uniform(shape, seed=seed, maxval=vocab, dtype=tf.int32))
                else:
                    xs.append(tf.random.stateless_uniform(shape, seed=seed, minval=-1.0, maxval=1.0))
        first = max(op._id for op in g.get_operations())  # noqa: SLF001
        logits = model(xs if len(xs) > 1 else xs[0], training=True)
        updates = [op for op in g.get_operations() if op._id > first and op.type.startswith("Assign")]  # noqa: SLF001
        with tf.compat.v1.name_scope("loss"):
            classes = int(logits.shape[-1])
            labels = tf.random.stateless_uniform([BATCH, *logits.shape.as_list()[1:-1]], seed=[DATA_SEED, 99], maxval=classes, dtype=tf.int32)  # fmt: skip
            loss = tf.reduce_mean(model.loss(labels, logits), name="loss")
        opt = tf.compat.v1.train.GradientDescentOptimizer(0.01)
        grads = opt.compute_gradients(loss, var_list=model.trainable_variables, gate_gradients=opt.GATE_NONE)
        with tf.control_dependencies([opt.apply_gradients(grads), *updates]):
            train_op = tf.no_op(name="train_op")
        init_op = tf.compat.v1.global_variables_initializer()
    graph_def = tf.compat.v1.graph_util.extract_sub_graph(g.as_graph_def(), [train_op.name, init_op.name])
    op_graph = extract.extract(graph_def, name=name)
    metagraph = extract.metagraph_of(graph_def, fetch=[train_op.name])
    return costs.grappler_costs(metagraph, op_graph, cluster)


def lower_bound(op_graph, cluster: Cluster) -> tuple[float, str]:
    """ADAPTER: (a lower bound on any placement's step time in seconds, the term that binds).

    Today placer.measure.bounds.lower_bound's three terms, recomputed here to
    name the binding one; the LP load bound replaces this function.
    """
    value = bounds.lower_bound(op_graph, cluster)
    cp = bounds.critical_path(op_graph, bounds.op_min_times(op_graph, cluster))
    return value, "critical path" if np.isclose(cp, value, rtol=1e-9) else "load"
