"""The main job of `make demo`: a short RL search on NMT, compared with baselines.

Builds the NMT training graph, extracts and groups it, runs the RL placer
against the simulated paper cluster (4 K80-class GPUs and a CPU), then
measures the single-GPU and expert placements the same way and prints the
three side by side.
"""

import os

from absl import flags

from placer import cli

_CONFIG = flags.DEFINE_string("config", "configs/nmt.py", "Model config file (with an optional :variant).")
_CLUSTER = flags.DEFINE_string("cluster", "k80x4", "Cluster preset or JSON file.")
_STEPS = flags.DEFINE_integer("steps", 400, "RL steps at most.")
_MINUTES = flags.DEFINE_float("minutes", 2.5, "Wall-time budget of the RL search.")
_WORKDIR = flags.DEFINE_string("workdir", "out/demo", "Output folder; an earlier demo there is replaced.")
_SEED = flags.DEFINE_integer("seed", 0, "Random seed.")


def main(argv):
    del argv
    import shutil  # noqa: PLC0415

    from baselines import registry  # noqa: PLC0415
    from graphs import pipeline  # noqa: PLC0415
    from placer.core import configs_util, fmt  # noqa: PLC0415
    from placer.measure.simulator import Simulator  # noqa: PLC0415
    from placer.rl import train_lib  # noqa: PLC0415

    config = configs_util.load_config(_CONFIG.value)
    config.cluster = _CLUSTER.value
    config.measure = "sim"
    config.placer.train.method = "seq2seq"  # the paper's RL, whatever placer-train's default
    if os.path.exists(os.path.join(_WORKDIR.value, "run.json")):
        shutil.rmtree(_WORKDIR.value)
    summary = train_lib.run(
        config, workdir=_WORKDIR.value, steps=_STEPS.value, seed=_SEED.value, max_seconds=60 * _MINUTES.value
    )
    cluster = cli.load_cluster(config.cluster)
    graph = pipeline.load_graph(cluster, config=config).graph
    sim = Simulator(graph, cluster)
    rows = [("rl", summary["best_step_time"])]
    for name in ("single_gpu", "expert", "m_sct"):
        placement = registry.get(name)(graph, cluster, seed=_SEED.value)
        m = sim.measure([placement])[0]
        rows.append((name, m.step_time if m.ok else None, m.failure))
    print()
    print(f"{'method':<12} {'step time':>14} {'speedup vs expert':>18}")
    expert = dict((r[0], r[1]) for r in rows)["expert"]
    for row in rows:
        t = row[1]
        if t is None:
            print(f"{row[0]:<12} {'failed: ' + str(row[2] if len(row) > 2 else ''):>14}")
            continue
        speed = f"{expert / t:.2f}x" if expert else "-"
        print(f"{row[0]:<12} {fmt.step_time(t):>14} {speed:>18}")
    print(f"\nbest placement: {os.path.join(_WORKDIR.value, 'best_placement.json')}")


def run():
    cli.run_main(main)


if __name__ == "__main__":
    run()
