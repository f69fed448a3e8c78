"""GPU check: session step times next to simulated ones, on one GPU split into 4.

  bench/gpu_check.sh                      (sets up .venv, then runs this)
  .venv/bin/python -m bench.gpu_check [--models=configs/nmt.py:tiny,configs/nmt.py] [--steps=5]

Physical GPU 0 becomes 4 logical GPUs ("/device:GPU:0".."3", each
`--memory_mb` MiB, default min(12 GiB, 90% of the GPU / 4): 12 GiB is one
K80 die, the paper's GPU, Mirhoseini et al. 2017 section 4). For each model:
per-op costs are profiled on this machine (graphs.costs.profiled_costs, CPU
and GPU columns), then a few placements (single GPU, the human expert, a
random one) are measured for real (placer.measure.session.SessionMeasurer)
and simulated (placer.measure.simulator.Simulator) on the same devices, and
printed side by side. Results go to gpu_check.json and gpu_check.md in $OUT
when that is set, else in the current folder.

Caveat: the 4 logical GPUs share one chip's cores and memory bandwidth, so
kernels of different logical GPUs slow each other down; the simulator treats
them as independent devices and is expected to be optimistic for placements
that spread work over several GPUs.

Where TensorFlow sees no GPU this prints "no GPU: skipped" and exits 0.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from absl import app, flags

_MODELS = flags.DEFINE_list("models", ["configs/nmt.py:tiny", "configs/nmt.py"], "Model config specs.")
_STEPS = flags.DEFINE_integer("steps", 5, "Timed session steps per placement (median) and profiled steps.")
_WARMUP = flags.DEFINE_integer("warmup", 2, "Untimed steps dropped first.")
_MEMORY_MB = flags.DEFINE_integer("memory_mb", 0, "MiB per logical GPU; 0 = min(12288, 90% of GPU 0 / 4).")
_BUDGET_S = flags.DEFINE_float("budget_s", 420.0, "Seconds after which the remaining models are skipped.")
_SEED = flags.DEFINE_integer("seed", 0, "Seed of the random placement.")

NUM_LOGICAL_GPUS = 4
K80_MEMORY_MB = 12288  # one K80 die (NVIDIA Tesla K80 datasheet: 12 GB per GPU)
# Links of the check's cluster: host <-> GPU over PCIe (10 GB/s effective, as
# configs/clusters/k80x4.json); logical GPUs on one chip copy through its own
# memory, taken as 100 GB/s (a conservative fraction of HBM bandwidth).
PCIE_BANDWIDTH = 1e10  # bytes/s
ON_CHIP_BANDWIDTH = 1e11  # bytes/s
LINK_LATENCY = 2e-5  # s
PLACEMENTS = ("single_gpu", "expert", "random")


def out_dir() -> str:
    """Folder for the result files: $OUT when set, else the current folder."""
    return os.environ.get("OUT") or os.getcwd()


def gpu_total_mb() -> int | None:
    """Total memory of GPU 0 in MiB as nvidia-smi reports it, or None."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
        return int(out.split()[0])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def logical_memory_mb(requested: int, total_mb: int | None) -> int:
    """MiB per logical GPU: `requested` if > 0, else min(12 GiB, 90% of the GPU / 4)."""
    if requested > 0:
        return int(requested)
    if not total_mb:
        return 4096
    return int(min(K80_MEMORY_MB, 0.9 * total_mb / NUM_LOGICAL_GPUS))


def split_gpu(memory_mb: int) -> list[str]:
    """Splits GPU 0 into NUM_LOGICAL_GPUS logical GPUs, for eager code and sessions.

    Returns:
      The logical GPU names TF reports.
    """
    import tensorflow as tf  # noqa: PLC0415

    from graphs import tf_session  # noqa: PLC0415

    gpus = tf.config.list_physical_devices("GPU")
    tf.config.set_visible_devices(gpus[0], "GPU")
    tf.config.set_logical_device_configuration(
        gpus[0], [tf.config.LogicalDeviceConfiguration(memory_limit=memory_mb)] * NUM_LOGICAL_GPUS
    )
    tf_session.set_gpu_virtual_devices([memory_mb] * NUM_LOGICAL_GPUS)
    return [d.name for d in tf.config.list_logical_devices("GPU")]


def check_cluster(memory_mb: int):
    """The check's devices: CPU 0 and the logical GPUs, with PCIe and on-chip links."""
    from graphs import local_cluster  # noqa: PLC0415
    from placer.core import cluster as cluster_lib  # noqa: PLC0415

    devices = [{"name": "/device:CPU:0", "type": "CPU", "memory_bytes": local_cluster.available_memory_bytes()}]
    devices += [
        {"name": f"/device:GPU:{k}", "type": "GPU", "memory_bytes": memory_mb << 20} for k in range(NUM_LOGICAL_GPUS)
    ]
    pairs = [
        {"src": f"/device:GPU:{i}", "dst": f"/device:GPU:{j}", "bandwidth": ON_CHIP_BANDWIDTH, "latency": LINK_LATENCY}
        for i in range(NUM_LOGICAL_GPUS)
        for j in range(i + 1, NUM_LOGICAL_GPUS)
    ]
    return cluster_lib.from_json(
        {
            "name": f"gpu0x{NUM_LOGICAL_GPUS}",
            "devices": devices,
            "links": {"default": {"bandwidth": PCIE_BANDWIDTH, "latency": LINK_LATENCY}, "pairs": pairs},
        },
        source="gpu_check",
    )


def random_placement(graph, cluster, seed: int):
    """Each tie class of groups (placer.core.grouping) on a random GPU, then made legal."""
    import numpy as np  # noqa: PLC0415

    from baselines import common, space  # noqa: PLC0415
    from placer.core import grouping  # noqa: PLC0415

    groups = grouping.group(graph)
    rng = np.random.default_rng(seed)
    (group_dev,) = space.random_group_devices(graph, cluster, groups, 1, rng, devices=cluster.indices_of_type("GPU"))
    return common.finish(graph, cluster, group_dev[np.asarray(groups.op_group)], "random", seed=seed)


def placements_for(graph, cluster, seed: int) -> dict:
    """name -> Placement, or name -> error string where a baseline cannot place."""
    from baselines import registry  # noqa: PLC0415
    from placer.core.errors import InputError  # noqa: PLC0415

    out = {}
    for name in PLACEMENTS:
        try:
            out[name] = (
                random_placement(graph, cluster, seed)
                if name == "random"
                else registry.place(name, graph, cluster, seed=seed)
            )
        except (InputError, ValueError, KeyError) as e:
            out[name] = f"not available: {e}"
    return out


def _row(m, cluster) -> dict:
    gpus = cluster.indices_of_type("GPU")
    return {
        "step_time_s": m.step_time if m.ok else None,
        "failure": m.failure,
        "message": m.message[:300],
        "peak_gpu_bytes": [float(m.peak_memory[i]) for i in gpus] if len(m.peak_memory) else [],
    }


def check_model(spec: str, cluster, steps: int, warmup: int, seed: int) -> dict:
    """Profiles, places, measures and simulates one model; returns its result record."""
    import numpy as np  # noqa: PLC0415

    import models  # noqa: PLC0415
    from graphs import costs, extract  # noqa: PLC0415
    from placer.core import configs_util  # noqa: PLC0415
    from placer.measure.session import SessionMeasurer  # noqa: PLC0415
    from placer.measure.simulator import Simulator  # noqa: PLC0415

    t0 = time.time()
    model = models.build(configs_util.load_config(spec).model)
    graph = extract.extract(model.metagraph, name=model.name)
    gpu = costs.profiled_costs(model, graph, steps=steps, warmup=warmup, device_types=("GPU",))
    # The CPU column only prices the few ops a GPU placement leaves on the host: one step is enough.
    cpu = costs.profiled_costs(model, graph, steps=1, warmup=1, device_types=("CPU",))
    graph = graph.with_costs(("CPU", "GPU"), np.stack([cpu.cost_for("CPU"), gpu.cost_for("GPU")], axis=1))
    rec = {"model": spec, "ops": graph.num_ops, "profile_s": time.time() - t0, "placements": {}}
    sim = Simulator(graph, cluster)
    # Rewrites off, as in profiling: the session runs the ops the costs describe.
    session = SessionMeasurer(model, graph, cluster, warmup=warmup, steps=steps, timeout_s=120.0, rewrite=False)
    for name, p in placements_for(graph, cluster, seed).items():
        if isinstance(p, str):
            rec["placements"][name] = {"skipped": p}
            continue
        sm = session.measure([p])[0]
        mm = sim.measure([p])[0]
        rec["placements"][name] = {
            "session": _row(sm, cluster),
            "simulator": _row(mm, cluster),
            "gpus_used": sorted({cluster.device_names[d] for d in set(p.devices.tolist())}),
        }
        print(format_line(spec, name, rec["placements"][name]), flush=True)
    rec["seconds"] = time.time() - t0
    return rec


def _fmt_step(row: dict) -> str:
    return f"{row['step_time_s']:.4g}" if row.get("step_time_s") is not None else (row.get("failure") or "-")


def _ratio(entry: dict) -> str:
    s, m = entry["session"].get("step_time_s"), entry["simulator"].get("step_time_s")
    return f"{m / s:.2f}" if s and m else "-"


def _peak_gib(row: dict) -> str:
    return f"{max(row['peak_gpu_bytes']) / 2**30:.2f}" if row.get("peak_gpu_bytes") else "-"


def format_line(spec: str, name: str, entry: dict) -> str:
    """One printed result line: model, placement, session and simulated step times."""
    if "skipped" in entry:
        return f"{spec:<24} {name:<11} {entry['skipped']}"
    se, si = entry["session"], entry["simulator"]
    return (
        f"{spec:<24} {name:<11} session (s) {_fmt_step(se):>9}  simulator (s) {_fmt_step(si):>9}  "
        f"sim/session {_ratio(entry):>5}  peak GPU GiB {_peak_gib(se)} / {_peak_gib(si)}"
        + "".join(f"\n    {k}: {r['message'][:200]}" for k, r in (("session", se), ("simulator", si)) if r["failure"])
    )


def markdown(result: dict) -> str:
    """The results as a Markdown table."""
    lines = [
        f"GPU check on {result['gpu']} split into {NUM_LOGICAL_GPUS} logical GPUs of "
        f"{result['memory_mb']} MiB; costs profiled on it; {result['steps']} timed steps per placement.",
        "",
        "| model | placement | session step (s) | simulated step (s) | sim / session | peak GPU GiB session / sim |",
        "|---|---|---|---|---|---|",
    ]
    for rec in result["models"]:
        if "error" in rec or "skipped" in rec:
            lines.append(f"| {rec['model']} | - | {rec.get('error') or rec.get('skipped')} | | | |")
            continue
        for name, e in rec["placements"].items():
            if "skipped" in e:
                lines.append(f"| {rec['model']} | {name} | {e['skipped']} | | | |")
            else:
                lines.append(
                    f"| {rec['model']} | {name} | {_fmt_step(e['session'])} | {_fmt_step(e['simulator'])} "
                    f"| {_ratio(e)} | {_peak_gib(e['session'])} / {_peak_gib(e['simulator'])} |"
                )
    return "\n".join(lines) + "\n"


def write_results(result: dict, folder: str) -> list[str]:
    """Writes gpu_check.json and gpu_check.md into `folder`; returns their paths."""
    from placer.core import atomic  # noqa: PLC0415

    os.makedirs(folder, exist_ok=True)
    paths = [os.path.join(folder, "gpu_check.json"), os.path.join(folder, "gpu_check.md")]
    atomic.write_text(paths[0], json.dumps(result, indent=1, default=str) + "\n")
    atomic.write_text(paths[1], markdown(result))
    return paths


def run_check(specs, steps: int, warmup: int, memory_mb: int, budget_s: float, seed: int) -> int:
    """The whole check; returns the exit status (0 ok or skipped, 1 when a model failed)."""
    import tensorflow as tf  # noqa: PLC0415

    t0 = time.time()
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        print("no GPU: skipped (TensorFlow sees no GPU on this machine)", flush=True)
        return 0
    mb = logical_memory_mb(memory_mb, gpu_total_mb())
    try:
        names = split_gpu(mb)  # before anything initialises the GPU
    except RuntimeError as e:
        print(f"gpu_check: cannot split GPU 0 into {NUM_LOGICAL_GPUS} logical GPUs: {e}", flush=True)
        return 1
    details = tf.config.experimental.get_device_details(gpus[0])
    print(f"GPU 0 ({details.get('device_name', '?')}) split into {names} of {mb} MiB each", flush=True)
    cluster = check_cluster(mb)
    result = {"gpu": details.get("device_name", "GPU 0"), "memory_mb": mb, "steps": steps, "models": []}
    status = 0
    for spec in specs:
        if time.time() - t0 > budget_s:
            result["models"].append({"model": spec, "skipped": f"time budget of {budget_s:.0f} s spent"})
            continue
        try:
            result["models"].append(check_model(spec, cluster, steps, warmup, seed))
        except Exception as e:  # noqa: BLE001 (one model's failure must not lose the others' results)
            result["models"].append({"model": spec, "error": f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"})
            print(f"{spec}: failed: {result['models'][-1]['error']}", flush=True)
            status = 1
    result["seconds"] = time.time() - t0
    for path in write_results(result, out_dir()):
        print(f"wrote {path}")
    print(markdown(result))
    return status


def main(argv) -> None:
    del argv
    sys.exit(run_check(_MODELS.value, _STEPS.value, _WARMUP.value, _MEMORY_MB.value, _BUDGET_S.value, _SEED.value))


if __name__ == "__main__":
    app.run(main)
