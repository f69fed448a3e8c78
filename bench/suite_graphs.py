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
import os

from placer.core import generated
from placer.core.cluster import Cluster
from placer.measure import bounds

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH = 32  # examples per training step of the Keras models
DATA_SEED = 1  # seed of the synthetic inputs made in the graph
CLUSTERS = ("k80x4", "k80x4_slow4")
DAG_SIZES = {"dag300": 300, "dag1000": 1000, "dag3000": 3000}
DAG_SEED = 48
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


def costed_graph(graph: SuiteGraph, cluster: Cluster):
    """The cost-annotated OpGraph of `graph` for the device types of `cluster`.

    Keras graphs come through the library's own model route, as
    `--model=bench/suite_models.py:FUNCTION --batch_size=BATCH` would build them
    (models.registry.user_model_config), and the costed-graph cache of
    graphs.pipeline keeps them (keyed by the model file's text, the batch and
    the cluster's device kinds).
    """
    if graph.kind == "dag":
        return generated.generate("layered", int(graph.source), DAG_SEED)
    from graphs import pipeline  # noqa: PLC0415 (TensorFlow, only when the cache lacks the graph)

    if graph.kind == "paper":
        from placer.core import configs_util  # noqa: PLC0415

        return pipeline.load_graph(cluster, config=configs_util.load_config(graph.source)).graph
    from configs import common  # noqa: PLC0415
    from models import registry  # noqa: PLC0415

    config = common.get_config()
    config.model = registry.user_model_config(f"{MODELS_FILE}:{graph.source}", batch_size=BATCH, seed=DATA_SEED)
    return pipeline.load_graph(cluster, config=config).graph


def lower_bound(op_graph, cluster: Cluster) -> tuple[float, str]:
    """(the lower bound on any placement's step time in seconds, the term that binds), placer.measure.bounds'."""
    b = bounds.bound(op_graph, cluster)
    return b.value, b.binds
