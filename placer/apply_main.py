"""placer-apply: train a model with a placement and check where every op ran.

  placer-apply --config=configs/nmt.py:tiny --placement=best.placement.json \
      --device_map=/device:GPU:0=/device:CPU:0,/device:GPU:1=/device:CPU:1 --logical_cpus=2 --steps=10
  placer-apply --model=examples/tiny_cnn.py:tiny_cnn --batch_size=8 --placement=runs/tiny/best_placement.json \
      --logical_cpus=4 --strict

Builds the model, checks the placement against it and this machine
(placer.apply `validate`), sets every op's device, runs `--steps` training
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

from absl import flags
from ml_collections import config_flags

from placer import cli, cli_flags
from placer.core import atomic, fmt
from placer.core.errors import InputError

_CONFIG = config_flags.DEFINE_config_file("config", None, "Model config file, e.g. configs/nmt.py:tiny.")
_MODEL, _BATCH_SIZE = cli_flags.define_model_flags(__name__)
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


def main(argv: list[str]) -> None:
    del argv
    config = cli_flags.with_model(_CONFIG.value, _MODEL, _BATCH_SIZE)
    if config is None or _PLACEMENT.value is None:
        raise InputError("give --config=configs/MODEL.py (or --model=FILE.py:FUNCTION) and --placement=FILE")
    if _STEPS.value < 1:
        raise InputError(f"--steps: need at least 1, got {_STEPS.value}")
    if _REPORT.value:
        inputs = {
            "placement": _PLACEMENT.value,
            "config": cli.config_file(_CONFIG),
            "model": cli_flags.model_file(_MODEL),
        }
        atomic.check_output_file(_REPORT.value, "report", overwrite=_OVERWRITE.value, inputs=inputs)
    num_cpus = _LOGICAL_CPUS.value or 1
    from graphs import local_cluster  # noqa: PLC0415 (imports TensorFlow)

    if _LOGICAL_CPUS.value:
        try:
            local_cluster.configure_logical_cpus(num_cpus)
        except RuntimeError as e:
            raise InputError(f"--logical_cpus: {e}") from None

    import models  # noqa: PLC0415
    from graphs import extract  # noqa: PLC0415
    from placer.apply import apply_lib  # noqa: PLC0415

    model = models.build(config.model)
    graph = extract.extract(model.metagraph, name=model.name)
    local = local_cluster.discover(num_cpus).device_names
    applied = apply_lib.apply_file(model, graph, _PLACEMENT.value, _DEVICE_MAP.value, local)
    print(
        f"graph: {graph.name} ({graph.num_ops} ops), placement: {_PLACEMENT.value} "
        f"({applied.placement.metadata.get('method', '?')}), devices: {', '.join(local)}"
    )
    print(f"load, validate and apply: {fmt.seconds(applied.seconds)}")
    result, summary, check = apply_lib.run_and_verify(
        applied, num_cpus, _STEPS.value, _WARMUP.value, _STRICT.value, _REWRITE.value
    )
    print("\n".join(apply_lib.result_lines(result, summary, check)))
    if _REPORT.value:
        if os.path.exists(_REPORT.value) and not _OVERWRITE.value:
            raise InputError(f"--report: {_REPORT.value} exists (give --overwrite to replace it)")
        data = apply_lib.report_data(graph, _PLACEMENT.value, applied, _STRICT.value, result, summary, check)
        atomic.write_text(_REPORT.value, json.dumps(data, indent=1) + "\n")
        print(f"wrote {_REPORT.value}")
    if _STRICT.value and (check.moved or check.fused):
        raise InputError(apply_lib.strict_message(check, result.op_types))


def run() -> None:
    cli.run_main(main)


if __name__ == "__main__":
    run()
