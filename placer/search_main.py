"""placer-search: concurrent placement searches sharing a pool of measurement slots.

Every epoch the pool's slots go to the searches by SLAQ (most predicted loss
reduction) or fair share; `--policy=both` runs the same jobs file under SLAQ,
then fair share, and prints both tables.

Example:
  placer-search --jobs=configs/searches/demo.py --slots=4 --epoch_s=2 \
      --policy=both --workdir=/tmp/search
  placer-search --jobs=configs/searches/demo.py --slots=16 --engine=ray \
      --ray_address=HEAD:6379 --workdir=/tmp/search
"""

from absl import flags

from placer import cli

_JOBS = flags.DEFINE_string("jobs", None, "Jobs file, e.g. configs/searches/demo.py.", required=True)
_SLOTS = flags.DEFINE_integer("slots", 4, "Measurement slots in the pool.")
_EPOCH = flags.DEFINE_float("epoch_s", 2.0, "Seconds between reallocations of the slots.")
_POLICY = flags.DEFINE_enum("policy", "slaq", ["slaq", "fair", "both"], "Slot allocation policy.")
_NORMALISE = flags.DEFINE_enum(
    "normalise",
    "max_change",
    ["max_change", "fitted_total"],
    "SLAQ's normaliser of loss reductions: the largest change so far (SLAQ paper) or the fitted total reduction.",
)
_ENGINE = flags.DEFINE_enum("engine", "inprocess", ["inprocess", "ray"], "Where measurement workers run.")
_RAY_ADDRESS = flags.DEFINE_string("ray_address", None, "Ray cluster address (default: start a local Ray).")
_WORKDIR = flags.DEFINE_string("workdir", None, "Output folder.", required=True)


def main(argv):
    del argv
    from placer.core import atomic  # noqa: PLC0415
    from placer.sharing import jobs as search_jobs  # noqa: PLC0415

    atomic.check_output_dir(_WORKDIR.value, "workdir", reuse=True)
    work = search_jobs.load_workload(_JOBS.value)  # every error here comes before anything starts
    options = {
        "measure_timeout_s": work.measure_timeout_s,
        "max_retries": work.max_retries,
        "measure_seconds": work.measure_seconds,
    }
    if _ENGINE.value == "ray":
        from placer.sharing.ray_engine import RayEngine  # noqa: PLC0415

        def engine_factory(n):
            return RayEngine(n, address=_RAY_ADDRESS.value, **options)
    else:
        from placer.sharing.engines import InProcessEngine  # noqa: PLC0415

        def engine_factory(n):
            return InProcessEngine(n, **options)

    from placer.sharing import search  # noqa: PLC0415 (imports TensorFlow)

    search.run_search(
        work,
        slots=_SLOTS.value,
        epoch_s=_EPOCH.value,
        policy=_POLICY.value,
        workdir=_WORKDIR.value,
        engine_factory=engine_factory,
        normalise=_NORMALISE.value,
    )


def run():
    cli.run_main(main)


if __name__ == "__main__":
    run()
