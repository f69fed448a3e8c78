"""Markdown of the single-device part of bench/fidelity.py: tables, per-op gaps and verdicts."""

from __future__ import annotations

import os

TARGET = 0.20  # relative error allowed between simulated and measured step time


def fmt_num(x, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def pool_name(threads: int) -> str:
    return "1 thread" if threads == 1 else ("TF default" if threads <= 0 else f"{threads} threads")


def fmt_err(e: float | None) -> str:
    return "-" if e is None else f"{e:+.1%}" + ("" if abs(e) <= TARGET else " (over 20%)")


def fmt_errs(errors) -> str:
    return ", ".join("-" if e is None else f"{e:+.0%}" for e in errors)


def fidelity_table(rows: list[dict]) -> list[str]:
    """Markdown rows of the comparison."""
    out = [
        "| model | inter-op pool | steps profiled / timed | ops run | measured (s) | simulated, profiled costs (s) "
        "| error | simulated, costs of the measuring session (s) | error "
        "| errors of all rounds (profiled / measuring session) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        measured = fmt_num(r["session_s"], ".4g") if r["session_s"] else (r.get("session_failure") or "-")
        out.append(
            f"| `{r['model']}` | {pool_name(r.get('inter_op_threads', 1))} | {r['profile_steps']} / {r['session_steps']} "
            f"| {r['ops_run']:,} of {r['ops']:,} | {measured} | {r['sim_s']:.4g} | {fmt_err(r['error'])} "
            f"| {fmt_num(r['sim_same_session_s'], '.4g')} | {fmt_err(r['error_same_session'])} "
            f"| {fmt_errs(r.get('round_errors', [r['error']]))} / "
            f"{fmt_errs(r.get('round_errors_same_session', [r['error_same_session']]))} |"
        )
    return out


def fmt_us(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms" if abs(seconds) >= 1e-3 else f"{seconds * 1e6:.3g} us"


def tracing_lines(rows: list[dict]) -> list[str]:
    """A sentence on the measured time per op run and the simulator's gap to it, from this run's rows."""
    out = []
    for r in rows:
        if r.get("session_s") and r.get("ops_run") and r.get("gap_per_op_s") is not None:
            out.append(
                f"`{r['model']}` ({pool_name(r.get('inter_op_threads', 1))}): {fmt_us(r['session_s'] / r['ops_run'])} "
                f"measured, {fmt_us(r['gap_per_op_s'])} measured minus simulated"
            )
    return ["Per op run: " + "; ".join(out) + "."] if out else []


def target_lines(rows: list[dict]) -> list[str]:
    """met / NOT met for each row of the comparison (1-thread pool) and each cost source."""
    out = []
    for r in rows:
        if r.get("inter_op_threads", 1) != 1:
            continue
        for key, label in (("error", "profiled costs"), ("error_same_session", "costs of the measuring session")):
            e = r.get(key)
            verdict = "not measured" if e is None else ("met" if abs(e) <= TARGET else "NOT met")
            out.append(f"- `{r['model']}`, {label}: {fmt_err(e)}: **{verdict}**")
    return out


def single_device_body(rows: list[dict], settings: dict) -> list[str]:
    """Markdown of the single-device comparison; `settings` holds the step counts of bench/fidelity.py's flags."""
    return [
        "Single-device step time: per-op costs profiled on this machine's CPU (`graphs.costs.profiled_costs`, "
        "warm-up steps dropped, median per op of the kernel windows of the traced steps less the tracer's floor), every "
        "op on `/device:CPU:0`, simulated at op level (`placer.measure.simulator`, with the CPU dispatch measured "
        "when the costs were profiled, `graphs/costs_calibrate.py`) against the same placement run in a session (`SessionMeasurer`, Grappler "
        f"rewrites off as in profiling, median of the timed steps); large models {settings['profile_steps']} profiled "
        f"and {settings['session_steps']} timed step(s) after {settings['warmup']} warm-up step(s); tiny variants "
        f"{settings['tiny_steps']} of each after 2, in {settings['tiny_rounds']} rounds of profiling then measuring, the "
        "round with the median error shown."
        + (
            f" The 1-thread rows ran in a process pinned to core {settings['cpu']}, calibration, profiling and "
            "sessions alike (docs/measure.md: unpinned, the per-op overheads jump between two levels as TF's "
            "threads move between the cores); the TF-default row ran on every core."
            if settings.get("cpu", -1) >= 0
            else ""
        ),
        "",
        "Parallelism: the simulator runs one op at a time per device, TF's executor runs independent ops at once "
        "on its inter-op pool. Rows with a 1-thread inter-op pool (TF_NUM_INTEROP_THREADS=1 for profiling and "
        "session alike) are the comparison: ops then run one after another, each kernel still using every core "
        "the process may use; "
        "the TF-default row shows what the default pool does to both sides. The simulator does not model that "
        "pool; it bounds it instead: with P pool threads (one per core by default) and per-op times as profiled, "
        "a step takes at least the simulated time / P. It can take longer than the simulated time (ops one after "
        "another): for its first 90 runs or so TF's executor counts every op as expensive (its cost estimate "
        "starts at 1e8 cycles and moves a tenth of the way to each run's cycles; cheap below 8,000) and hands "
        "all but one of the ops a finished op makes ready to the pool, and with several threads another core "
        "picks them up, which costs time that one thread does not pay. The upper end therefore adds a hand-off "
        "per op run: simulated + ops run x hand-off, the hand-off measured in the same process right after "
        "profiling, on a chain of scalar ops that hands every link to the pool, under P threads against one "
        "(`graphs.costs_calibrate.pool_handoff`, wall time, 5 side-by-side rounds; the rounds are in the "
        "verdict). The rounds spread by more than their median on this shared machine, so the upper end takes "
        "the largest round's hand-off: a bound that holds for every round measured. Profiling under the default pool also stretches each op's traced time while others share "
        "the cores, which pushes the simulation up.",
        "",
        "Two cost sources: `profiled_costs` runs its own session before the measurement, and on this shared "
        "machine the load can change in between (the errors of all rounds, last column, show by how much); the "
        "second simulated column takes the per-op times from traced steps the measuring session runs right "
        "after its timed steps, which leaves out that drift, with the same care as profiling: tiny variants "
        f"{settings['tiny_steps']} traced steps after 2 dropped, the median per op, large models 1 traced step "
        "(ops of milliseconds); the same floor taken off. A trace records kernels, "
        "not the executor's work between ops, which the dispatch stands for; tracing also stretches some kernels "
        "beyond the floor it adds to every op: both weigh most where ops are short.",
        "",
        *tracing_lines(rows),
        "",
        *fidelity_table(rows),
        "",
        f"Target: simulated within {TARGET:.0%} of measured, on the 1-thread rows. The machine is shared "
        "(2 cores, other jobs running), so absolute times are noisy; the simulated and measured times of one row "
        "ran back to back in one process.",
        "",
        *target_lines(rows),
        *bound_lines(rows),
    ]


def bound_lines(rows: list[dict]) -> list[str]:
    """The TF-default-pool rows checked against [simulated / P, simulated + ops run x the largest round's hand-off]."""
    from placer.measure.calibration import pool_bounds  # noqa: PLC0415

    out = []
    for r in rows:
        if r.get("inter_op_threads", 1) == 1 or not r.get("session_s"):
            continue
        p = r.get("pool_threads") or os.cpu_count() or 1
        rounds = r.get("handoff_rounds_s") or []
        handoff = max([r.get("handoff_s") or 0.0, *rounds])  # the largest round: the bound holds for each
        lo, hi = pool_bounds(r["sim_s"], r["ops_run"], handoff, p)
        m = r["session_s"]
        verdict = "met" if lo <= m <= hi else "NOT met"
        beyond = f" ({(m - hi) / hi:+.1%} beyond the upper end)" if m > hi else ""
        out.append(
            f"- `{r['model']}`, TF default pool ({p} threads): measured {m:.4g} s within [simulated / {p}, "
            f"simulated + {r['ops_run']:,} ops x {handoff * 1e9:.0f} ns] = [{lo:.4g}, {hi:.4g}] s: **{verdict}**"
            + beyond
            + (f"; hand-off rounds (ns): {', '.join(f'{x * 1e9:.0f}' for x in rounds)}" if rounds else "")
        )
    return out
