"""The library behind `placer-apply`: a placement set on a built model, run, verified and reported."""

from __future__ import annotations

import dataclasses
import time

from placer.apply import devices as apply
from placer.apply import run as apply_run
from placer.core import fmt
from placer.core.placement import Placement

SHOW = 10  # moved ops listed on the terminal.


@dataclasses.dataclass
class Applied:
    """A placement checked against a model and this machine, and set on its graph.

    Attributes:
      placement: the placement, its devices retargeted by the device map.
      placed: the model's MetaGraphDef with every op's device set.
      local: this process's device names.
      seconds: wall time of loading, validating and applying (s).
    """

    placement: Placement
    placed: object
    local: list[str]
    seconds: float


def apply_file(model, graph, path: str, device_map_spec: str | None, local: list[str]) -> Applied:
    """Loads the placement file, validates it against the model and `local` devices, and applies it.

    Raises:
      InputError: a bad file, device map, or a placement TF cannot run as given.
    """
    t0 = time.perf_counter()
    placement = Placement.load(path)
    device_map = apply.parse_device_map(device_map_spec, known=placement.device_names)
    apply.validate(placement, graph, local, device_map=device_map, source=path, tf_graph=model.graph)
    placement = apply.remap(placement, device_map)
    placed = apply.apply_to_graph_def(placement, model.metagraph)
    return Applied(placement, placed, list(local), time.perf_counter() - t0)


def _moves(title: str, moves: dict[str, tuple[str, str]], ran_as: dict[str, str] | None = None) -> list[str]:
    lines = [f"{title}: {len(moves)}"]
    for op, (want, got) in list(moves.items())[:SHOW]:
        how = f" as {ran_as[op]}" if ran_as and op in ran_as else ""
        lines.append(f"  {op}: placed on {want}, ran on {got}{how}")
    if len(moves) > SHOW:
        lines.append(f"  ... and {len(moves) - SHOW} more")
    return lines


def result_lines(result, summary: dict, check) -> list[str]:
    """What `placer-apply` prints after the run: step time, per-device ops and busy time, what moved."""
    lines = [f"step time: {fmt.step_time(result.step_time)} (median of {len(result.step_times)})"]
    for name, s in summary.items():
        lines.append(
            f"  {name:<16} {s['ops_placed']:>6} ops placed  {s['ops_traced']:>6} traced  busy {fmt.seconds(s['busy_s'])}"
        )
    lines.append(
        f"verified: {check.checked} ops ran on their device; not traced: {len(check.not_in_step)} "
        f"outside the training step, {len(check.not_traced)} folded or merged by graph optimisation"
    )
    lines += _moves("fused by Grappler into an op on another device", check.fused, check.fused_into)
    lines += _moves("moved by TF", check.moved)
    return lines


def strict_message(check, op_types: dict[str, str], n: int = 3) -> str:
    """One line naming the first few ops that did not run where placed, and why."""
    causes = [
        f"{op!r} ({op_types.get(op, '?')}) placed on {want}, ran on {got}: Grappler fused it into "
        f"{check.fused_into.get(op, 'another op')} on the device of its input"
        for op, (want, got) in check.fused.items()
    ]
    causes += [
        f"{op!r} placed on {want}, ran on {got}: moved by TF's placer" for op, (want, got) in check.moved.items()
    ]
    more = f"; and {len(causes) - n} more" if len(causes) > n else ""
    hint = " (--norewrite keeps every op as built)" if check.fused else ""
    return f"--strict: {len(causes)} ops did not run where placed: {'; '.join(causes[:n])}{more}{hint}"


def report_data(graph, path: str, applied: Applied, strict: bool, result, summary: dict, check) -> dict:
    """The --report JSON: graph, placement, devices, step times, per-device summary, fused and moved ops."""
    return {
        "graph": {"name": graph.name, "fingerprint": graph.fingerprint(), "ops": graph.num_ops},
        "placement": path,
        "method": applied.placement.metadata.get("method"),
        "devices": applied.local,
        "strict": strict,
        "apply_s": applied.seconds,
        "step_time_s": result.step_time,
        "step_times_s": result.step_times,
        "per_device": summary,
        "verified_ops": check.checked,
        "not_in_step": len(check.not_in_step),
        "not_traced": check.not_traced,
        "fused": {op: {"placed": w, "ran": g, "as": check.fused_into.get(op)} for op, (w, g) in check.fused.items()},
        "moved": {op: {"placed": w, "ran": g} for op, (w, g) in check.moved.items()},
    }


def run_and_verify(applied: Applied, num_cpus: int, steps: int, warmup: int, strict: bool, rewrite: bool):
    """Runs the placed model; returns (RunResult, per-device summary, Verification)."""
    result = apply_run.run_placed(
        applied.placed, num_cpus=num_cpus, steps=steps, warmup=warmup, soft_placement=not strict, rewrite=rewrite
    )
    asked = apply.op_devices(applied.placement)
    return result, apply_run.device_summary(asked, result), apply_run.verify(asked, result)
