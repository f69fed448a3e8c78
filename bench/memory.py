"""Memory fidelity: the simulator's single-device peak against TensorFlow's own.

For each model, every op on this machine's CPU: the simulated peak
(`placer.measure.simulator`: variables plus live activations) against one
traced step of the same graph in a session (`SessionMeasurer`), read two ways
(`graphs.tf_session.trace_memory`): the step's allocation records
replayed (activations only) and the largest allocator snapshot (everything,
variables included). On one device the simulated order does not depend on op
costs (every ready op is waiting when the device frees), so unit costs are used.

Each model runs in a fresh process. Writes the "memory" section of BENCHMARKS.md.

  .venv/bin/python -m bench.memory [--specs=configs/nmt.py:tiny,configs/nmt.py]
"""

from __future__ import annotations

import time

from absl import app, flags

from bench import report

_SPECS = flags.DEFINE_list(
    "specs",
    ["configs/rnnlm.py", "configs/nmt.py", "configs/inception_v3.py"],
    "Model config specs, one process each.",
)
_TIMEOUT = flags.DEFINE_float("timeout_s", 900.0, "Seconds allowed per model.")

CHILD = r"""
import json, sys
import numpy as np
import models
from graphs import extract
from placer.core import configs_util
from graphs import local_cluster
from graphs import tf_session
from placer.measure import session as session_lib
from placer.measure.simulator import Simulator
from placer.core.placement import Placement

model = models.build(configs_util.load_config(sys.argv[1]).model)
graph = extract.extract(model.metagraph, name=model.name)
graph = graph.with_costs(("CPU",), np.ones((graph.num_ops, 1)))
cluster = local_cluster.discover(1)
placement = Placement.from_ops(graph, np.zeros(graph.num_ops, np.int64), cluster.device_names)
sim = Simulator(graph, cluster).measure([placement])[0]
measurer = session_lib.SessionMeasurer(model, graph, cluster, warmup=0, steps=1, timeout_s=600.0, rewrite=False)
measured = measurer.measure([placement])[0]
act, alloc = tf_session.trace_memory(measurer.last_run_metadata, cluster.device_names)
print("RESULT " + json.dumps({
    "ops": graph.num_ops,
    "sim_peak": float(sim.peak_memory[0]),
    "variables": float(graph.persistent_bytes.sum()),
    "session_ok": measured.ok,
    "session_message": measured.message[:200],
    "session_activations": float(act[0]),
    "session_allocator": float(alloc[0]),
}))
"""


def _gib(x: float) -> str:
    return f"{x / 2**30:.2f}" if x > 0 else "-"


def main(argv) -> None:
    del argv
    t0 = time.time()
    rows = []
    for spec in _SPECS.value:
        print(f"{spec} ...", flush=True)
        res = report.run_child(CHILD, [spec], _TIMEOUT.value)
        rows.append((spec, res))
        print(f"  {res}", flush=True)
    lines = [
        "Every op on `/device:CPU:0` of this machine. Simulated: `placer.measure.simulator` (variables plus",
        "activations live at once). Measured: one traced step in a `SessionMeasurer` session (Grappler rewrites",
        "off), read two ways by `graphs.tf_session.trace_memory`: allocation records of the step replayed",
        "(activations only), and the allocator's largest bytes-in-use snapshot (variables included).",
        "",
        "| model | ops | variables (GiB) | simulated peak (GiB) | simulated activations (GiB) "
        "| measured activations (GiB) | measured allocator peak (GiB) | simulated / allocator peak |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for spec, r in rows:
        if isinstance(r, str) or not r["session_ok"]:
            why = r if isinstance(r, str) else r["session_message"]
            lines.append(f"| `{spec}` | {why} | | | | | | |")
            continue
        ratio = f"{r['sim_peak'] / r['session_allocator']:.3f}" if r["session_allocator"] > 0 else "-"
        lines.append(
            f"| `{spec}` | {r['ops']:,} | {_gib(r['variables'])} | {_gib(r['sim_peak'])} "
            f"| {_gib(r['sim_peak'] - r['variables'])} | {_gib(r['session_activations'])} "
            f"| {_gib(r['session_allocator'])} | {ratio} |"
        )
    lines += [
        "",
        "TF's executor runs ops in its own order (several at once on its inter-op pool) and forwards some",
        "buffers in place, the simulator in its priority order one at a time; the peaks need not agree exactly.",
        "",
        f"Total run: {time.time() - t0:.0f} s.",
    ]
    body = "\n".join(lines)
    print(body)
    report.update_section("memory", "Memory fidelity", body, "bench/memory.py")


if __name__ == "__main__":
    app.run(main)
