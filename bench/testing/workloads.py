"""Small placer-search workloads: graphs of independent chains and a jobs file of three searches.

The test suite and bench/kill.py run placer-search on these; each search
takes a fraction of a second per step on the simulator.
"""

from __future__ import annotations

import os
import textwrap

import numpy as np

from placer.core import io as graph_io
from placer.core.op_graph import OpGraph

MB = 1 << 20


def chains_graph(name: str, chains: int, length: int, seconds: float) -> OpGraph:
    """`chains` independent chains of `length` ops: `seconds` each on a GPU, 10x that on the CPU.

    Ops are named "{chain}{position}"; every output and edge is 1 MiB.
    """
    names = [f"{c}{i}" for c in range(chains) for i in range(length)]
    edges = [(f"{c}{i}", f"{c}{i + 1}", MB) for c in range(chains) for i in range(length - 1)]
    cost = np.tile([[10 * seconds, seconds]], (len(names), 1))
    return OpGraph.create(
        name,
        names,
        ["MatMul"] * len(names),
        edges,
        output_bytes=[MB] * len(names),
        device_types=["CPU", "GPU"],
        compute_cost=cost,
    )


METHODS = ("seq2seq", "annealing_warm", "random_search")


def write_workload(folder, *, steps=5, arrivals=(0.0, 0.0, 0.2), job_fields="", top_fields="", methods=METHODS) -> str:
    """Writes three chain graphs and a jobs file of three searches on k80x2 into `folder`.

    Only the first search learns a policy by default: the others take no
    TensorFlow tracing, so a run starts in seconds.

    Args:
      folder: where the files go.
      steps: iterations per search.
      arrivals: [3] arrival time of each search, seconds after the start.
      job_fields: extra `job(...)` keyword arguments, text starting with ", "; or [3] such texts, one per job.
      top_fields: a statement setting top-level fields of the config (`c.x = ...`).
      methods: [3] each search's method (placer.rl.methods).

    Returns:
      The jobs file's path.
    """
    lines = []
    per_job = [job_fields] * 3 if isinstance(job_fields, str) else list(job_fields)
    for i, (chains, length) in enumerate([(2, 3), (3, 2), (2, 2)]):
        p = os.path.join(str(folder), f"g{i}.graph.json")
        graph_io.save(chains_graph(f"g{i}", chains, length, 0.01 * (i + 1)), p)
        lines.append(
            f"        job(name='s{i}', graph={p!r}, arrival_s={arrivals[i]}, steps={steps}, seed={i}, method={methods[i]!r}{per_job[i]}),"
        )
    text = (
        textwrap.dedent("""\
        import ml_collections


        def job(**kw):
            d = dict(cluster="k80x2", hidden_size=8, type_embedding_size=4, device_embedding_size=4,
                     merge_single_consumer=False, learning_rate=0.05)
            d.update(kw)
            return ml_collections.ConfigDict(d)


        def get_config():
            c = ml_collections.ConfigDict()
            c.jobs = [
        JOBS
            ]
            TOP
            return c
        """)
        .replace("JOBS", "\n".join(lines))
        .replace("TOP", top_fields or "pass")
    )
    path = os.path.join(str(folder), "jobs.py")
    with open(path, "w") as f:
        f.write(text)
    return path
