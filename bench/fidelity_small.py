"""Simulator fidelity on graphs of many small ops, on 1 and 2 logical CPU devices (part of bench/fidelity.py).

For each source (a tiny model config, or "generated:FAMILY:N:SEED", a
generated graph of placer/core/generated.py realised in TF as N scalar ops:
a Const for each op without inputs, Neg for one input, AddN for several),
in `rounds` rounds: per-op CPU costs profiled (graphs.costs.profiled_costs),
then two placements simulated and run in real sessions with one inter-op
thread: every op on "/device:CPU:0" of `local:1`, and the ops split over the
two devices of `local:2` (the first half of the ops in topological order on
CPU:0, the rest on CPU:1, colocated ops with their set's first op). The
profiled graph carries the CPU dispatch and transfer cost measured when it
was profiled (graphs/costs_calibrate.py), which the simulator gives the local
clusters, and those have a serial executor (one inter-op thread runs both
devices' ops). Beside the model's simulation, three variants show what each
part of it does: the documented constants of the `local` cluster instead of
the calibration, dispatch 0, and devices that compute in parallel.

Levels: on random group placements of the tiny NMT over `local:2`, the
same placement simulated at group level (a group's ops back to back, its
outputs sent when it ends) and at op level, against the session, under TF's
default inter-op pool (bench/fidelity.py runs it in a child process).
"""

from __future__ import annotations

import dataclasses
import os
import statistics

import numpy as np

TARGET = 0.20


def tiny_op_graph(op_graph):
    """A tf.Graph of the generated OpGraph's structure with scalar ops; "train_op" groups its sinks."""
    import tensorflow as tf  # noqa: PLC0415

    n = op_graph.num_ops
    preds: list[list[int]] = [[] for _ in range(n)]
    for a, b in zip(op_graph.edge_src.tolist(), op_graph.edge_dst.tolist(), strict=True):
        preds[b].append(a)
    g = tf.Graph()
    with g.as_default():
        out = []
        for i in range(n):
            ins, name = [out[j] for j in preds[i]], str(op_graph.names[i])
            if not ins:
                out.append(tf.constant(1.0, name=name))
            elif len(ins) == 1:
                out.append(tf.raw_ops.Neg(x=ins[0], name=name))
            else:
                out.append(tf.raw_ops.AddN(inputs=ins, name=name))
        consumed = set(op_graph.edge_src.tolist())
        train = tf.group(*[out[i] for i in range(n) if i not in consumed], name="train_op")
        g.add_to_collection("train_op", train)
    return g


def load_source(spec: str):
    """(model or tf.Graph, config or None, OpGraph without costs) of a fidelity source."""
    import models  # noqa: PLC0415
    from graphs import extract  # noqa: PLC0415
    from placer.core import configs_util, generated  # noqa: PLC0415

    if spec.startswith("generated:"):
        _, family, n, seed = spec.split(":")
        og = generated.generate(family, int(n), int(seed))
        g = tiny_op_graph(og)
        return g, None, extract.extract(g, name=og.name)
    config = configs_util.load_config(spec)
    model = models.build(config.model)
    return model, config, extract.extract(model.metagraph, name=model.name)


def split_devices(graph) -> np.ndarray:
    """[n_ops] 0 for the first half of the ops (topological order), 1 for the rest; colocation sets kept whole."""
    from placer.core.colocation import colocation_sets  # noqa: PLC0415

    dev = (np.arange(graph.num_ops) >= graph.num_ops // 2).astype(np.int64)
    for members in colocation_sets(graph):
        dev[members] = dev[members[0]]
    return dev


def session_clocks(model, graph, cluster, devices: np.ndarray, steps: int) -> tuple[float, float]:
    """(median wall s, median process CPU s) per step of the placed graph in a real session.

    Placed and run as placer.measure.session.SessionMeasurer runs a placement
    (every node's device set, soft placement off, Grappler rewrites off, 2
    warm-up steps), with both clocks read around each step (placer.core.clocks.median_clocks).
    """
    import tensorflow as tf  # noqa: PLC0415

    from graphs import tf_util  # noqa: PLC0415
    from graphs.tf_session import as_metagraph, import_for_session, session_config  # noqa: PLC0415
    from placer.core.clocks import median_clocks  # noqa: PLC0415

    mg = tf_util.placed_metagraph(as_metagraph(model), graph, devices, cluster.device_names)
    g, fetches, init = import_for_session(mg)
    with tf.compat.v1.Session(graph=g, config=session_config(cluster.num_devices, rewrite=False)) as sess:
        sess.run(init)
        for _ in range(2):
            sess.run(fetches)
        return median_clocks(lambda: sess.run(fetches), steps)


def _simulate(graph, cluster, placement) -> dict:
    """Simulated step times of the model and its variants (seconds).

    "sim_s" is the model: profiled kernel times, the tracer's floor off, and the
    dispatch and transfer cost measured when the costs were profiled (the
    graph's calibration). "sim_constants_s" uses the `local` cluster's
    documented constants instead of that calibration.
    """
    from placer.measure.simulator import Simulator  # noqa: PLC0415

    def run(c, g=graph):
        return Simulator(g, c).measure([placement])[0].step_time

    no_dispatch = [dataclasses.replace(d, dispatch=0.0, transfer_cost=0.0) for d in cluster.devices]
    return {
        "sim_s": run(cluster),
        "sim_constants_s": run(cluster, graph.with_calibration({})),
        "sim_no_dispatch_s": run(dataclasses.replace(cluster, name="local, no dispatch", devices=tuple(no_dispatch))),
        "sim_parallel_s": run(dataclasses.replace(cluster, serial_executor=False)),
    }


def source_rows(spec: str, steps: int, rounds: int) -> list[dict]:
    """One row per placement (1 device, 2 devices split) of one source: the round with the median error."""
    from graphs import costs, local_cluster  # noqa: PLC0415
    from placer.core.placement import Placement  # noqa: PLC0415

    model, _, graph0 = load_source(spec)
    clusters = {"1 device": local_cluster.discover(1), "2 devices, split": local_cluster.discover(2)}
    devs = {"1 device": np.zeros(graph0.num_ops, np.int64), "2 devices, split": split_devices(graph0)}
    runs: dict[str, list[dict]] = {k: [] for k in clusters}
    for _ in range(rounds):
        graph = costs.profiled_costs(model, graph0, steps=steps, warmup=2, device_types=("CPU",))
        for label, cluster in clusters.items():
            p = Placement.from_ops(graph, devs[label], cluster.device_names, method=label)
            wall, cpu = session_clocks(model, graph, cluster, devs[label], steps)
            row = {"model": spec, "placement": label, "ops": graph.num_ops, **_simulate(graph, cluster, p)}
            row.update(calibration=dict(graph.calibration), load=os.getloadavg()[0])
            row.update(session_s=wall, session_cpu_s=cpu, err_sim_s=row["sim_s"] / wall - 1.0)
            row["err_sim_constants_s"] = row["sim_constants_s"] / wall - 1.0
            row["cross_edges"] = int((devs[label][graph.edge_src] != devs[label][graph.edge_dst]).sum())
            for key in ("sim_s", "sim_constants_s", "sim_no_dispatch_s", "sim_parallel_s"):
                row["cpu_err_" + key] = row[key] / cpu - 1.0
            runs[label].append(row)
            print(
                f"{spec} {label}: simulated {row['sim_s']:.4g} s (constants {row['sim_constants_s']:.4g} s), measured "
                f"{wall:.4g} s ({cpu:.4g} s CPU), error {row['err_sim_s']:+.1%} / {row['cpu_err_sim_s']:+.1%} CPU; "
                f"load {row['load']:.1f}",
                flush=True,
            )
    out = []
    for rows in runs.values():
        ranked = sorted(rows, key=lambda r: (r["err_sim_s"] is None, r["err_sim_s"] or 0.0))
        row = dict(ranked[(len(ranked) - 1) // 2])
        row["round_errors"] = [r["err_sim_s"] for r in rows]
        out.append(row)
    return out


def level_rows(spec: str, count: int, steps: int, seed: int = 0) -> list[dict]:
    """Random group placements of `spec` over local:2: session, group-level and op-level simulation."""
    from bench import fidelity_split  # noqa: PLC0415
    from graphs import costs, local_cluster  # noqa: PLC0415
    from placer.core.placement import Placement  # noqa: PLC0415
    from placer.measure.simulator import Simulator  # noqa: PLC0415
    from placer.rl import problem as problem_lib  # noqa: PLC0415

    model, config, graph = load_source(spec)
    graph = costs.profiled_costs(model, graph, steps=steps, warmup=2, device_types=("CPU",))
    cluster = local_cluster.discover(2)
    problem, groups = problem_lib.make_problem(graph, cluster, config.placer)
    sim = Simulator(graph, cluster, op_group=groups.op_group)
    op_sim = Simulator(graph, cluster)  # no groups: every placement op by op
    rows = []
    grp = np.asarray(groups.op_group, np.int64)
    first = np.full(groups.num_groups, -1)
    first[grp[::-1]] = np.arange(len(grp))[::-1]
    for p in fidelity_split.random_placements(problem, graph, cluster, groups, count, seed):
        group_dev = np.asarray(p.devices, np.int64)[first]
        grouped = Placement.from_groups(graph, grp, group_dev, p.device_names)
        op_only = Placement.from_ops(graph, group_dev[grp], p.device_names)
        wall, cpu = session_clocks(model, graph, cluster, group_dev[grp], steps)
        rows.append(
            {
                "level": sim.level(grouped),
                "group_s": sim.measure([grouped])[0].step_time,
                "op_s": op_sim.measure([op_only])[0].step_time,
                "session_s": wall,
                "session_cpu_s": cpu,
                "groups": groups.num_groups,
            }
        )
        print(f"levels {spec}: {rows[-1]}", flush=True)
    return rows


def _e(x) -> str:
    return "-" if x is None else f"{x:+.1%}"


def small_table(rows: list[dict]) -> list[str]:
    """Markdown rows of the many-small-ops comparison."""
    out = [
        "| graph | placement | ops | crossing edges | measured wall / CPU (s) | simulated (s) | error vs wall / CPU "
        "| simulated, documented constants (s) | error vs wall / CPU | vs CPU: dispatch 0 "
        "| vs CPU: devices in parallel | errors vs wall, all rounds | load average |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| `{r['model']}` | {r['placement']} | {r['ops']:,} | {r['cross_edges']:,} "
            f"| {r['session_s']:.4g} / {r['session_cpu_s']:.4g} | {r['sim_s']:.4g} "
            f"| {_e(r['err_sim_s'])} / {_e(r['cpu_err_sim_s'])} | {r['sim_constants_s']:.4g} "
            f"| {_e(r['err_sim_constants_s'])} / {_e(r['cpu_err_sim_constants_s'])} "
            f"| {_e(r['cpu_err_sim_no_dispatch_s'])} | {_e(r['cpu_err_sim_parallel_s'])} "
            f"| {', '.join(_e(e) for e in r['round_errors'])} | {r['load']:.1f} |"
        )
    return out


def _verdict(e: float) -> str:
    return "met" if abs(e) <= TARGET else "NOT met"


def small_targets(rows: list[dict]) -> list[str]:
    """met / NOT met per row and cost source, against wall time (the target) and against CPU time."""
    out = []
    for r in rows:
        for key, label in (("sim_s", "calibrated when profiled"), ("sim_constants_s", "documented constants")):
            wall, cpu = r["err_" + key], r["cpu_err_" + key]
            out.append(
                f"- `{r['model']}`, {r['placement']}, {label}: {_e(wall)} against wall time: **{_verdict(wall)}**; "
                f"{_e(cpu)} against CPU time: {_verdict(cpu)}"
            )
    return out


def level_lines(rows: list[dict], spec: str) -> list[str]:
    """Markdown: the group-level and op-level simulation of the same placements against sessions."""
    ok = [r for r in rows if r["session_s"]]
    if not ok:
        return [f"Levels: no placement of `{spec}` ran in a session."]

    def med(key, clock="session_s"):
        return statistics.median(r[key] / r[clock] - 1.0 for r in ok)

    gap = statistics.median(r["group_s"] / r["op_s"] - 1.0 for r in ok)
    return [
        f"Simulation levels: {len(rows)} random group placements of `{spec}` ({rows[0]['groups']} groups) on "
        f"`local:2` under TF's default inter-op pool (a child process; with one inter-op thread both levels give "
        "the same time, since one thread then does all the work in any order), each run in a session and "
        "simulated at both levels with the two devices computing at once "
        f"({sum(r['level'] == 'group' for r in rows)} of them simulated at group level).",
        "",
        "| level | median error against wall time | median error against CPU time | errors against wall time |",
        "|---|---|---|---|",
        f"| group (a group's ops back to back, outputs sent when it ends) | {_e(med('group_s'))} "
        f"| {_e(med('group_s', 'session_cpu_s'))} "
        f"| {', '.join(_e(r['group_s'] / r['session_s'] - 1.0) for r in ok)} |",
        f"| op | {_e(med('op_s'))} | {_e(med('op_s', 'session_cpu_s'))} "
        f"| {', '.join(_e(r['op_s'] / r['session_s'] - 1.0) for r in ok)} |",
        "",
        f"Group level against op level on the same placements: {_e(gap)} (median).",
    ]


def _cal(rows: list[dict]) -> str:
    c = rows[0]["calibration"]
    keys = ("cpu_trace_floor", "cpu_dispatch", "cpu_transfer_cost")
    return " / ".join(f"{c.get(k, 0.0) * 1e9:.0f} ns" for k in keys) + f" for `{rows[0]['model']}`"


def section(rows: list[dict], steps: int, rounds: int, cpu: int = -1) -> list[str]:
    """Markdown of the many-small-ops comparison (`cpu`: the core it ran pinned to, -1: unpinned)."""
    pinned = (
        f"The whole part runs in a process pinned to core {cpu} of this machine's two: unpinned, TF's threads "
        "move between the cores and the per-op overheads the calibration measures jump between two levels "
        "(docs/measure.md), so a calibration and the sessions that follow it can see different ones. "
        if cpu >= 0
        else "The part runs unpinned. "
    )
    return [
        "Graphs of many small ops: the tiny model variants and a generated layered graph of scalar ops "
        "(`generated:layered:2000:0`: a Const per op without inputs, Neg for one input, AddN for several). Per-op "
        f"CPU costs profiled, then {steps} timed steps per placement after 2 warm-up steps, {rounds} rounds of "
        "profiling then measuring, the round with the median error shown. Both sessions and the simulator have "
        "one inter-op thread: the `local` clusters have a serial executor, so the two logical CPUs of "
        "`local:2` share one thread as in TF. Split: the first half of the ops (topological order) on CPU:0, the "
        "rest on CPU:1. Profiled costs are kernel windows less the tracer's floor (ops the traced steps did not "
        "run pay no dispatch), and the simulator pairs them with the CPU dispatch and transfer cost measured in "
        "the same process when the costs were profiled "
        "(`graphs/costs_calibrate.py`; floor / dispatch / transfer cost of the median row: "
        f"{_cal(rows)}). Three more simulated columns show what each part of the model does: the `local` "
        "cluster's documented constants instead of the calibration, dispatch and transfer cost 0, and devices "
        "that compute in parallel. Each step is timed on two clocks in the same session: wall "
        "time (the target's measure) and the process's CPU time, which leaves out the time other jobs hold the "
        "cores of this shared machine (the dispatch was calibrated on CPU time); the load average after each row "
        "is in the last column. " + pinned + "Simulation level: op (every placement here is op-level).",
        "",
        *small_table(rows),
        "",
        f"Target: simulated within {TARGET:.0%} of measured on every 1-thread row.",
        "",
        *small_targets(rows),
    ]
