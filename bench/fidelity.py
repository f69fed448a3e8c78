"""Simulator fidelity: simulated vs measured single-device step time, and the NMT memory check.

  .venv/bin/python -m bench.fidelity [--models=configs/nmt.py:tiny,configs/nmt.py]
      [--profile_steps=1] [--session_steps=1] [--warmup=1] [--tiny_steps=50] [--tiny_rounds=5]
      [--inter_op_threads=1]

Minutes on 2 shared cores: a paper-size NMT step is slow there, hence one
profiled and one timed step of it by default (each after one warm-up step);
tiny variants get `--tiny_steps` of each.

1. For each model: per-op costs profiled on this machine's CPU
   (graphs.costs.profiled_costs: warm-up traced steps dropped, median per op
   of the rest), every op on "/device:CPU:0", the simulator's step time
   (placer.measure.simulator) against the measured one of the same placement
   (placer.measure.session.SessionMeasurer: median of the timed steps).
   Target: within 20%.

   Why one inter-op thread: the simulator runs one op at a time per device,
   but TF's executor runs independent ops at once (one inter-op thread per
   core by default), which stretches the per-op times it traces. Every
   session here (profiling and measuring) therefore has one inter-op thread
   (TF_NUM_INTEROP_THREADS): ops run one after another, the simulator's
   model of a device. This process is pinned to one core (`--cpu`), so
   calibration, profiling and sessions see the same one (docs/measure.md).
   The tiny model also runs in a child process on every core with TF's
   default pool (`--default_pool_model`) to show the effect; that row is
   checked against [simulated / P, simulated + ops run x hand-off], the
   hand-off measured in the child. Grappler rewrites are off on both sides,
   so the profiled op names are the ops the session runs.

2. The paper reports that single-GPU NMT runs out of memory on a 12 GB K80
   (Mirhoseini et al. 2017, Table 1). The paper-size NMT with Grappler costs
   for the k80x4 preset is simulated with the single_gpu baseline; when it
   fits, the peak is split into variables and activations and the batch (or
   sequence length) at which activations would fill the GPU is extrapolated
   linearly (activations scale with batch x length in an unrolled seq2seq).

3. Placements that split the graph: the simulator against Grappler on the
   same op costs, random and searched placements (bench/fidelity_split.py).

Writes the "fidelity" and "fidelity_split" sections of BENCHMARKS.md;
`--parts` picks which of the three parts run (a section is only rewritten
when its parts ran).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from absl import app, flags

from bench import fidelity_report as fr

_MODELS = flags.DEFINE_list("models", ["configs/nmt.py:tiny", "configs/nmt.py"], "Model config specs.")
_PROFILE_STEPS = flags.DEFINE_integer("profile_steps", 1, "Traced steps per op (median kept), large models.")
_SESSION_STEPS = flags.DEFINE_integer("session_steps", 1, "Timed session steps (median kept), large models.")
_WARMUP = flags.DEFINE_integer("warmup", 1, "Steps dropped before profiling and before timing, large models.")
_TINY_ROUNDS = flags.DEFINE_integer("tiny_rounds", 5, "Profile-and-measure rounds of tiny variants; median shown.")
_TINY_STEPS = flags.DEFINE_integer("tiny_steps", 50, "Profiled and timed steps of tiny variants (2 warm-up).")
_INTER_OP = flags.DEFINE_integer("inter_op_threads", 1, "TF inter-op threads; 0 = TF's default pool.")
_DEFAULT_POOL_MODEL = flags.DEFINE_string(
    "default_pool_model", "configs/nmt.py:tiny", "Also run this model with TF's default inter-op pool ('' = skip)."
)
_OOM_CHECK = flags.DEFINE_bool("oom_check", True, "Run the k80x4 single-GPU memory check.")
_PARTS = flags.DEFINE_list(
    "parts", ["single", "small", "levels", "oom", "split"], "Parts to run: single, small, levels, oom, split."
)
_SMALL = flags.DEFINE_list(
    "small",
    ["configs/nmt.py:tiny", "configs/rnnlm.py:tiny", "configs/inception_v3.py:tiny", "generated:layered:2000:0"],
    "Graphs of many small ops, each on 1 and split over 2 logical CPUs (bench/fidelity_small.py).",
)
_SMALL_STEPS = flags.DEFINE_integer("small_steps", 30, "Profiled and timed steps per round of the small graphs.")
_SMALL_ROUNDS = flags.DEFINE_integer("small_rounds", 5, "Rounds of the small graphs; the median error is shown.")
_LEVEL_MODEL = flags.DEFINE_string("level_model", "configs/nmt.py:tiny", "Model of the group-level/op-level rows.")
_LEVEL_PLACEMENTS = flags.DEFINE_integer("level_placements", 6, "Random group placements of the level rows.")
_SPLIT_MODELS = flags.DEFINE_list(
    "split_models", ["configs/nmt.py", "configs/inception_v3.py"], "Models of the split-placement comparison."
)
_SPLIT_CLUSTER = flags.DEFINE_string("split_cluster", "k80x4", "Cluster preset of the split-placement comparison.")
_SPLIT_RANDOM = flags.DEFINE_integer("split_random", 20, "Random placements per model.")
_SPLIT_STEPS = flags.DEFINE_integer("split_search_steps", 5, "Policy-gradient steps of the search per model.")
_SPLIT_SAMPLES = flags.DEFINE_integer("split_search_samples", 4, "Placements sampled per search step.")
_JSON_OUT = flags.DEFINE_string("json_out", "", "Write the rows as JSON here and skip BENCHMARKS.md.")
_CPU = flags.DEFINE_integer(
    "cpu",
    1,
    "Core this process is pinned to for its 1-thread rows and the small-op part (the TF-default-pool and "
    "levels children use every core); -1: unpinned.",
)


def fidelity_row(
    spec: str, profile_steps: int, session_steps: int, warmup: int, trace_steps: int = 1, pool_threads: int = 0
) -> dict:
    """Profiles, simulates and measures the single-CPU placement of one model.

    Args:
      spec: model config spec, e.g. "configs/nmt.py:tiny".
      profile_steps, session_steps, warmup: see the flags.
      trace_steps: traced steps the measuring session runs after its timed
        ones for the second cost source (the first `warmup` dropped, as
        profiled_costs drops them, when there are more than one).
      pool_threads: threads of TF's default inter-op pool when this process
        runs under it: the hand-off per op is then measured right after
        profiling (graphs.costs_calibrate.pool_handoff); 0 skips it.

    Returns:
      A dict with ops, ops_run (the train op's fan-in), sim_s and session_s
      (seconds per step), the relative error, the measured time per run op
      that the simulation lacks (s) and wall times (s).
    """
    import models  # noqa: PLC0415
    from graphs import (  # noqa: PLC0415
        costs,
        costs_calibrate,
        extract,
        local_cluster,  # noqa: PLC0415
        tf_session,  # noqa: PLC0415
    )
    from placer.core import configs_util  # noqa: PLC0415
    from placer.core.placement import Placement  # noqa: PLC0415
    from placer.measure import session as session_lib  # noqa: PLC0415
    from placer.measure.simulator import Simulator  # noqa: PLC0415

    t0 = time.time()
    model = models.build(configs_util.load_config(spec).model)
    graph = extract.extract(model.metagraph, name=model.name)
    t1 = time.time()
    graph = costs.profiled_costs(model, graph, steps=profile_steps, warmup=warmup, device_types=("CPU",))
    handoff, handoff_rounds = costs_calibrate.pool_handoff(pool_threads) if pool_threads > 0 else (None, [])
    t2 = time.time()
    cluster = local_cluster.discover(1)
    placement = Placement.from_ops(
        graph, np.zeros(graph.num_ops, dtype=np.int64), cluster.device_names, method="single_cpu"
    )
    sim = Simulator(graph, cluster).measure([placement])[0]
    fetches = tf_session.as_metagraph(model).collection_def["train_op"].node_list.value
    run = step_fan_in(graph, list(fetches))
    measurer = session_lib.SessionMeasurer(
        model,
        graph,
        cluster,
        warmup=warmup,
        steps=session_steps,
        timeout_s=600.0,
        rewrite=False,
        trace_steps=trace_steps + (warmup if trace_steps > 1 else 0),
    )
    measured = measurer.measure([placement])[0]
    t3 = time.time()
    session_s = measured.step_time if measured.ok else None
    sim_same = None
    if measurer.last_traces:
        # Costs from the measuring session's own traced steps, run right after the timed ones.
        traced = trace_costs(measurer.last_traces, graph, skip=warmup if trace_steps > 1 else 0)
        cost = np.where(np.isnan(graph.compute_cost[:, 0]), np.nan, traced)[:, None]
        sim_same = Simulator(graph.with_costs(("CPU",), cost), cluster).measure([placement])[0].step_time
    return {
        "model": spec,
        "ops": graph.num_ops,
        "ops_run": int(run.sum()),
        "sim_s": sim.step_time,
        "session_s": session_s,
        "session_failure": measured.failure,
        "session_message": measured.message[:200],
        "sim_same_session_s": sim_same,
        "error": relative_error(sim.step_time, session_s),
        "error_same_session": None if sim_same is None else relative_error(sim_same, session_s),
        "gap_per_op_s": None if session_s is None else (session_s - sim.step_time) / max(int(run.sum()), 1),
        "pool_threads": pool_threads,
        "handoff_s": handoff,
        "handoff_rounds_s": handoff_rounds,
        "build_s": t1 - t0,
        "profile_s": t2 - t1,
        "measure_s": t3 - t2,
    }


def step_fan_in(graph, fetch_names) -> np.ndarray:
    """[n_ops] bool: the ops a step runs, the fan-in (data and control) of `fetch_names`."""
    index = graph.index()
    run = np.zeros(graph.num_ops, dtype=bool)
    preds: list[list[int]] = [[] for _ in range(graph.num_ops)]
    for a, b in zip(graph.edge_src.tolist(), graph.edge_dst.tolist(), strict=True):
        preds[b].append(a)
    stack = [index[n] for n in fetch_names if n in index]
    while stack:
        i = stack.pop()
        if not run[i]:
            run[i] = True
            stack.extend(preds[i])
    return run


def trace_costs(run_metadatas, graph, skip: int = 0) -> np.ndarray:
    """[n_ops] median CPU seconds per op over traced steps, as profiled_costs takes them (its trace floor off).

    Args:
      run_metadatas: RunMetadata of the traced steps.
      graph: the profiled OpGraph (its calibration gives the floor).
      skip: leading steps dropped (warm-up).
    """
    from graphs.costs import medians_less_floor, op_samples  # noqa: PLC0415

    samples = op_samples(run_metadatas, "CPU", skip=skip)
    return medians_less_floor(samples, graph.index(), graph.calibration.get("cpu_trace_floor", 0.0))


def relative_error(sim_s: float, session_s: float | None) -> float | None:
    """(simulated - measured) / measured, or None without a measurement.

    Args:
      sim_s: simulated seconds per step.
      session_s: measured seconds per step, or None when the session failed.
    """
    return None if not session_s else (sim_s - session_s) / session_s


def child_rows(spec: str, args: list[str]) -> dict:
    """Runs this script for `spec` in a child process with `args` under TF's default inter-op pool, on every core.

    Returns:
      {"rows": single-device rows, "levels": level rows} ({} on failure).
    """
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rows.json")
        cmd = [
            sys.executable,
            "-m",
            "bench.fidelity",
            f"--models={spec}",
            "--nooom_check",
            "--default_pool_model=",
            "--cpu=-1",
            f"--json_out={path}",
            *args,
        ]
        env = {k: v for k, v in os.environ.items() if k != "TF_NUM_INTEROP_THREADS"}
        proc = subprocess.run(
            cmd,
            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
            capture_output=True,
            text=True,
            env=env,
            preexec_fn=lambda: os.sched_setaffinity(0, range(os.cpu_count() or 1)),
        )
        if proc.returncode != 0 or not os.path.exists(path):
            print(f"child run failed (exit {proc.returncode}): {proc.stderr.strip().splitlines()[-1:]}")
            return {}
        with open(path) as f:
            return json.load(f)


def steps_for(spec: str) -> tuple[int, int, int, int, int]:
    """(profiled steps, timed steps, warm-up steps, rounds, traced steps of the measuring session) for a spec.

    Tiny variants get `--tiny_steps` of each and `--tiny_rounds`: one traced step of ops that short is noisy,
    so the measuring session traces as many steps as profiling does. Others get the flags of large models, one
    round and one traced step (ops of milliseconds).
    """
    if "tiny" in spec.partition(":")[2].split(","):
        return _TINY_STEPS.value, _TINY_STEPS.value, 2, max(_TINY_ROUNDS.value, 1), _TINY_STEPS.value
    return _PROFILE_STEPS.value, _SESSION_STEPS.value, _WARMUP.value, 1, 1


def median_round(rounds: list[dict]) -> dict:
    """The round with the median error (failed rounds last), with every round's error attached."""
    ranked = sorted(rounds, key=lambda r: (r["error"] is None, r["error"] or 0.0))
    ok = [r for r in ranked if r["error"] is not None]
    row = dict((ok or ranked)[(len(ok or ranked) - 1) // 2])
    row["round_errors"] = [r["error"] for r in rounds]
    row["round_errors_same_session"] = [r["error_same_session"] for r in rounds]
    return row


def run_rows(specs, inter_op: int) -> list[dict]:
    """The fidelity rows of `specs` in this process."""
    rows = []
    for spec in specs:
        profile_steps, session_steps, warmup, rounds, traced = steps_for(spec)
        pool = len(os.sched_getaffinity(0)) if inter_op <= 0 else 0  # TF's default: one thread per usable core
        row = median_round(
            [fidelity_row(spec, profile_steps, session_steps, warmup, traced, pool) for _ in range(rounds)]
        )
        row.update(
            inter_op_threads=inter_op,
            profile_steps=profile_steps,
            session_steps=session_steps,
            warmup=warmup,
            trace_steps=traced,
        )
        print(
            f"{spec}: simulated {row['sim_s']:.4g} s, measured {fr.fmt_num(row['session_s'], '.4g')} s, error "
            f"{fr.fmt_err(row['error'])} (rounds: {fr.fmt_errs(row['round_errors'])}; build {row['build_s']:.0f} s, "
            f"profile {row['profile_s']:.0f} s, measure {row['measure_s']:.0f} s)",
            flush=True,
        )
        rows.append(row)
    return rows


def main(argv) -> None:
    del argv
    from bench import fidelity_memory, fidelity_small, fidelity_split, report  # noqa: PLC0415

    t0 = time.time()
    parts = set(_PARTS.value)
    inter_op = _INTER_OP.value
    if _CPU.value >= 0:
        # Before TensorFlow starts a thread: its pools inherit the core (docs/measure.md, why).
        os.sched_setaffinity(0, {_CPU.value})
    if inter_op > 0:
        # Read by TF when it creates its first session; nothing has run yet.
        os.environ["TF_NUM_INTEROP_THREADS"] = str(inter_op)
    rows = run_rows(_MODELS.value, inter_op) if "single" in parts else []
    if _JSON_OUT.value:
        levels = []
        if "levels" in parts:
            levels = fidelity_small.level_rows(_LEVEL_MODEL.value, _LEVEL_PLACEMENTS.value, _SMALL_STEPS.value)
        with open(_JSON_OUT.value, "w") as f:
            json.dump({"rows": rows, "levels": levels}, f)
        return
    if _DEFAULT_POOL_MODEL.value and "single" in parts:
        rows += child_rows(
            _DEFAULT_POOL_MODEL.value,
            ["--parts=single", "--inter_op_threads=0", f"--tiny_steps={_TINY_STEPS.value}"]
            + [f"--tiny_rounds={_TINY_ROUNDS.value}"],
        ).get("rows", [])
    oom = fidelity_memory.oom_check() if _OOM_CHECK.value and "oom" in parts else None
    if oom:
        print(f"k80x4 single_gpu NMT: failure {oom['failure']}, peak {oom['peak_bytes'] / 2**30:.2f} GiB", flush=True)
    small = []
    for spec in _SMALL.value if "small" in parts else []:
        small += fidelity_small.source_rows(spec, _SMALL_STEPS.value, _SMALL_ROUNDS.value)
    levels = []
    if "levels" in parts:  # under TF's default pool, where devices compute at once and the levels differ
        args = ["--parts=levels", "--inter_op_threads=0", f"--level_model={_LEVEL_MODEL.value}"]
        args += [f"--level_placements={_LEVEL_PLACEMENTS.value}", f"--small_steps={_SMALL_STEPS.value}"]
        levels = child_rows(_LEVEL_MODEL.value, args).get("levels", [])
    if "single" in parts or oom or small or levels:
        settings = {
            "profile_steps": _PROFILE_STEPS.value,
            "session_steps": _SESSION_STEPS.value,
            "warmup": _WARMUP.value,
            "tiny_steps": _TINY_STEPS.value,
            "tiny_rounds": _TINY_ROUNDS.value,
            "cpu": _CPU.value,
        }
        body = fr.single_device_body(rows, settings) if rows else []
        if small:
            body += ["", "### Many small ops, on 1 and 2 logical CPU devices", ""]
            body += fidelity_small.section(small, _SMALL_STEPS.value, _SMALL_ROUNDS.value, _CPU.value)
        if levels:
            body += ["", "### Group level and op level against sessions", ""]
            body += fidelity_small.level_lines(levels, _LEVEL_MODEL.value)
        if oom:
            body += ["", "### Single-GPU NMT memory (paper: OOM)", "", *fidelity_memory.oom_lines(oom)]
        body += [
            "",
            f"Total run: {time.time() - t0:.0f} s, commit {report.commit()}; load average at the end "
            f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (shared with other jobs).",
        ]
        report.update_section("fidelity", "Simulator fidelity", "\n".join(body), "bench/fidelity.py")
        print("\n".join(body))
    if "split" in parts:
        t1 = time.time()
        split = (_SPLIT_CLUSTER.value, _SPLIT_RANDOM.value, _SPLIT_STEPS.value, _SPLIT_SAMPLES.value, 0)
        results = []
        for spec in _SPLIT_MODELS.value:
            results.append(fidelity_split.model_rows(spec, *split))
            print(f"{spec}: {fidelity_split.summary(results[-1][0])}", flush=True)
        body = [
            *fidelity_split.DESCRIPTION,
            "",
            *fidelity_split.section(results, _SPLIT_CLUSTER.value, 0),
            "",
            f"Total: {time.time() - t1:.0f} s, commit {report.commit()}.",
        ]
        report.update_section(
            "fidelity_split", "Simulator against Grappler, split placements", "\n".join(body), "bench/fidelity.py"
        )
        print("\n".join(body))


if __name__ == "__main__":
    app.run(main)
