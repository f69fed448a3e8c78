"""placer-apply: train a model with a placement and check where every op ran.

  placer-apply --config=configs/nmt.py:tiny --placement=best.placement.json \
      --device_map=/device:GPU:0=/device:CPU:0,/device:GPU:1=/device:CPU:1 --logical_cpus=2 --steps=10

Builds the model, checks the placement against it and this machine
(placer/apply.py `validate`), sets every op's device, runs `--steps` training
steps in a tf.compat.v1.Session and traces one more. Prints the median step
time, per device the ops placed and the busy time of the traced step, and
the ops that ran somewhere else than placed. TF's placer always runs an op
that reads a resource (a variable) on the resource's device, so a placement
putting one elsewhere is rejected before running (exit 2).

Even a valid placement may not run exactly as given: with graph rewrites on
(the default) Grappler's remapper fuses an op into the op feeding it, e.g. a
BiasAdd into the MatMul before it, and the fused op runs on the MatMul's
device under the BiasAdd's name; such ops are listed as fused.

--strict turns soft placement off and makes any op not run where placed (moved
or fused) an error (exit 2); --norewrite keeps every op as built.
Writes nothing unless --report=FILE is given (JSON, written atomically; an
existing file is kept unless --overwrite).
"""

from __future__ import annotations

import json
import os
import time

from absl import flags
from ml_collections import config_flags

from placer import cli
from placer.core.errors import InputError

_CONFIG = config_flags.DEFINE_config_file("config", None, "Model config file, e.g. configs/nmt.py:tiny.")
_PLACEMENT = flags.DEFINE_string("placement", None, "Placement JSON file (docs/formats.md).")
_DEVICE_MAP = flags.DEFINE_string(
    "device_map", None, "Retarget devices: SOURCE=TARGET pairs, comma-separated, e.g. /device:GPU:0=/device:CPU:1."
)
_LOGICAL_CPUS = flags.DEFINE_integer(
    "logical_cpus", None, "Split the CPU into N logical devices /device:CPU:0..N-1 (default 1).", lower_bound=1
)
_STEPS = flags.DEFINE_integer("steps", 10, "Timed training steps; the median is the step time.")
_WARMUP = flags.DEFINE_integer("warmup", 1, "Untimed training steps first.", lower_bound=0)
_STRICT = flags.DEFINE_bool("strict", False, "Soft placement off; any op not run where placed is an error.")
_REWRITE = flags.DEFINE_bool("rewrite", True, "Let Grappler rewrite the graph (as in ordinary training).")
_REPORT = flags.DEFINE_string("report", None, "Write a JSON report here.")
_OVERWRITE = flags.DEFINE_bool("overwrite", False, "Replace an existing --report file.")

SHOW = 10  # moved ops listed on the terminal.


def _list_moves(title: str, moves: dict[str, tuple[str, str]], ran_as: dict[str, str] | None = None) -> None:
    print(f"{title}: {len(moves)}")
    for op, (want, got) in list(moves.items())[:SHOW]:
        how = f" as {ran_as[op]}" if ran_as and op in ran_as else ""
        print(f"  {op}: placed on {want}, ran on {got}{how}")
    if len(moves) > SHOW:
        print(f"  ... and {len(moves) - SHOW} more")


def main(argv: list[str]) -> None:
    del argv
    if _CONFIG.value is None or _PLACEMENT.value is None:
        raise InputError("give --config=configs/MODEL.py and --placement=FILE")
    if _STEPS.value < 1:
        raise InputError(f"--steps: need at least 1, got {_STEPS.value}")
    if _REPORT.value:
        from placer.core import atomic  # noqa: PLC0415

        atomic.check_output_file(_REPORT.value, "report", overwrite=_OVERWRITE.value)
    num_cpus = _LOGICAL_CPUS.value or 1
    if num_cpus < 1:
        raise InputError(f"--logical_cpus: need at least 1, got {num_cpus}")
    from graphs import local_cluster  # noqa: PLC0415 (imports TensorFlow)

    if _LOGICAL_CPUS.value:
        try:
            local_cluster.configure_logical_cpus(num_cpus)
        except RuntimeError as e:
            raise InputError(f"--logical_cpus: {e}") from None

    import models  # noqa: PLC0415
    from graphs import extract  # noqa: PLC0415
    from placer.apply import devices as apply  # noqa: PLC0415
    from placer.apply import run as apply_run  # noqa: PLC0415
    from placer.core.placement import Placement  # noqa: PLC0415

    model = models.build(_CONFIG.value.model)
    graph = extract.extract(model.metagraph, name=model.name)
    t0 = time.perf_counter()
    placement = Placement.load(_PLACEMENT.value)
    device_map = apply.parse_device_map(_DEVICE_MAP.value, known=placement.device_names)
    local = local_cluster.discover(num_cpus).device_names
    apply.validate(placement, graph, local, device_map=device_map, source=_PLACEMENT.value, tf_graph=model.graph)
    placement = apply.remap(placement, device_map)
    placed = apply.apply_to_graph_def(placement, model.metagraph)
    apply_s = time.perf_counter() - t0
    asked = apply.op_devices(placement)
    print(
        f"graph: {graph.name} ({graph.num_ops} ops), placement: {_PLACEMENT.value} "
        f"({placement.metadata.get('method', '?')}), devices: {', '.join(local)}"
    )
    print(f"load, validate and apply: {apply_s:.3f} s")
    result = apply_run.run_placed(
        placed,
        num_cpus=num_cpus,
        steps=_STEPS.value,
        warmup=_WARMUP.value,
        soft_placement=not _STRICT.value,
        rewrite=_REWRITE.value,
    )
    check = apply_run.verify(asked, result)
    summary = apply_run.device_summary(asked, result)
    print(f"step time: {result.step_time:.6f} s (median of {len(result.step_times)})")
    for name, s in summary.items():
        print(f"  {name:<16} {s['ops_placed']:>6} ops placed  {s['ops_traced']:>6} traced  busy {s['busy_s']:.6f} s")
    print(
        f"verified: {check.checked} ops ran on their device; not traced: {len(check.not_in_step)} "
        f"outside the training step, {len(check.not_traced)} folded or merged by graph optimisation"
    )
    _list_moves("fused by Grappler into an op on another device", check.fused, check.fused_into)
    _list_moves("moved by TF", check.moved)
    if _REPORT.value:
        _write_report(graph, placement, local, apply_s, result, summary, check)
        print(f"wrote {_REPORT.value}")
    if _STRICT.value and (check.moved or check.fused):
        raise InputError(_strict_message(check, result.op_types))


def _strict_message(check, op_types: dict[str, str], n: int = 3) -> str:
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


def _write_report(graph, placement, local, apply_s, result, summary, check) -> None:
    from placer.core import atomic  # noqa: PLC0415

    data = {
        "graph": {"name": graph.name, "fingerprint": graph.fingerprint(), "ops": graph.num_ops},
        "placement": _PLACEMENT.value,
        "method": placement.metadata.get("method"),
        "devices": list(local),
        "strict": _STRICT.value,
        "apply_s": apply_s,
        "step_time_s": result.step_time,
        "step_times_s": result.step_times,
        "per_device": summary,
        "verified_ops": check.checked,
        "not_in_step": len(check.not_in_step),
        "not_traced": check.not_traced,
        "fused": {op: {"placed": w, "ran": g, "as": check.fused_into.get(op)} for op, (w, g) in check.fused.items()},
        "moved": {op: {"placed": w, "ran": g} for op, (w, g) in check.moved.items()},
    }
    if os.path.exists(_REPORT.value) and not _OVERWRITE.value:
        raise InputError(f"--report: {_REPORT.value} exists (give --overwrite to replace it)")
    atomic.write_text(_REPORT.value, json.dumps(data, indent=1) + "\n")


def run() -> None:
    cli.run_main(main)


if __name__ == "__main__":
    run()
