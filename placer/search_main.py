"""placer-search: concurrent placement searches sharing a pool of measurement slots.

Every epoch the pool's slots go to the searches by an allocator: `slaq-safe`
(the default: the work-conserving fair share, in which a search past its knee,
99% of its fitted loss reduction after half its steps, yields its slots to the
others up to a fifth of its fair share, and no search yields once the searches together
would have given up 1% of their fair share), `slaq` (most predicted loss reduction;
Zhang et al., SoCC 2017: it trades long
jobs for short ones, starving a long job whose loss falls slowly at first; on the replay
set of bench/slaq_promise.py it reached 90% of the reduction a median 3.32% later than
fair at 16 slots and 8.05% at 32 on the stress set, up to 14.43% later, and 12.91% and
16.48% sooner on the Keras curves), `fair`
(the work-conserving fair share, the reference) or `fair-static` (an even
split that leaves a capped search's spare slots idle). `--policy=both` runs
SLAQ then fair on the same jobs, `--policy=all` every allocator, each line of
the closing comparison giving both SLAQ metrics against fair in words.
(A recorded trace CSV is replayed by `python -m bench.slaq_replay`, which
writes the same outputs and tables without TensorFlow.)

With the in-process engine the run's clock counts epochs (`--lockstep`, on by
default there): the same seeds give the same result. On Ray it is wall time
(`--lockstep` turns the clock of epochs on there too).

Example:
  placer-search --jobs=configs/searches/demo.py --slots=4 --policy=both --workdir=/tmp/search
  placer-search --jobs=configs/searches/demo.py --slots=16 --engine=ray \
      --ray_address=HEAD:6379 --workdir=/tmp/search
  placer-search --jobs=configs/searches/demo.py:session --slots=2 --engine=ray \
      --measure=session --epoch_s=2 --workdir=/tmp/search-session

`--measure=session` runs every measured placement in a real TF session on the
devices of the slot's machine (the jobs' cluster "local:N": N logical CPUs per
slot); `grappler` estimates it with Grappler's virtual cluster. Both need each
job's model config.
"""

from absl import flags

from placer import cli, cli_flags
from placer.sharing.allocators import ALLOCATORS, DEFAULT_ALLOCATOR, OBJECTIVES
from placer.sharing.report import DEFAULT_LOSS, LOSSES
from placer.sharing.slaq import DEFAULT_EPOCH_S, NORMALISERS

_JOBS = flags.DEFINE_string("jobs", None, "Jobs file (a .py config), e.g. configs/searches/demo.py.", required=True)
_SLOTS = flags.DEFINE_integer("slots", 4, "Measurement slots in the pool.")
_EPOCH = flags.DEFINE_float("epoch_s", DEFAULT_EPOCH_S, "Seconds between reallocations of the slots.")
_POLICY = flags.DEFINE_enum(
    "policy", DEFAULT_ALLOCATOR, [*ALLOCATORS, "both", "all"], "Slot allocator (both: slaq and fair; all: every one)."
)
_OBJECTIVE = flags.DEFINE_enum(
    "objective", "total", list(OBJECTIVES), "SLAQ's objective: summed loss reduction, or the worst job first."
)
_NORMALISE = flags.DEFINE_enum(
    "normalise",
    "max_change",
    list(NORMALISERS),
    "SLAQ's normaliser of loss reductions: the largest change so far (SLAQ paper) or the fitted total reduction.",
)
_LOSS = flags.DEFINE_enum(
    "loss",
    DEFAULT_LOSS,
    list(LOSSES),
    "A search's loss for the allocator: mean sqrt step time of its batch, sqrt of the best step time so far, "
    f"or the REINFORCE moving-average baseline. Default {DEFAULT_LOSS}; BENCHMARKS.md ('SLAQ: which loss "
    "signal') compares the three under the default --policy and plain slaq.",
)
_ENGINE, _RAY_ADDRESS = cli_flags.define_flags(__name__, "engine", "ray_address")
_LOCKSTEP = flags.DEFINE_bool(
    "lockstep",
    None,
    "The run's clock. On (a clock of epochs): each epoch every search holding slots takes one iteration, the "
    "epoch ends when all have, and each epoch counts --epoch_s seconds; nothing depends on thread timing, so the "
    "same seeds give the same result. Off (wall time): searches iterate as fast as their slots measure, and the "
    "slots a search holds at each iteration depend on how fast the threads ran, so runs differ slightly. "
    "Default: on with --engine=inprocess, off with --engine=ray.",
)
_MEASURE, _WORKDIR = cli_flags.define_flags(
    __name__, "measure", "workdir", required=["workdir"], notes={"measure": "How every slot measures a placement."}
)
_RESUME = cli_flags.define_resume(
    "Continue a stopped or killed run in --workdir (same jobs and flags) from its searches' last checkpoints.",
    __name__,
)

_OVERWRITE = flags.DEFINE_bool(
    "overwrite",
    False,
    "Replace output files in --workdir that this run did not write (a fresh run refuses them otherwise).",
)

WRITES = (
    "run_state.json",
    "inputs.json",
    *ALLOCATORS,
)  # what --workdir receives: the run's clock and a folder per allocator


def _clock_is_epochs() -> bool:
    """--lockstep as given, else the engine's clock: epochs in process (reproducible), wall time on Ray."""
    return _LOCKSTEP.value if _LOCKSTEP.value is not None else _ENGINE.value == "inprocess"


def main(argv):
    del argv
    from placer.core import locks, stop  # noqa: PLC0415

    locks.claim_workdir(_WORKDIR.value, inputs={"jobs": _JOBS.value.partition(":")[0]}, owned=WRITES)
    sharing = {"normalise": _NORMALISE.value, "objective": _OBJECTIVE.value}
    from placer.measure.registry import MeasurerFactory  # noqa: PLC0415
    from placer.sharing import jobs as search_jobs  # noqa: PLC0415

    work = search_jobs.load_workload(_JOBS.value)  # every error here comes before anything starts
    measure = _MEASURE.value
    search_jobs.check_measure(work, measure)
    backend = {}
    if measure == "session":
        backend = {"warmup": work.session_warmup, "steps": work.session_steps, "timeout_s": work.measure_timeout_s}
        cpus = search_jobs.local_cpu_count(work)
        if cpus and _ENGINE.value == "inprocess":
            from graphs import local_cluster  # noqa: PLC0415 (TensorFlow, before it sets up its devices)

            local_cluster.configure_logical_cpus(cpus)  # the slot threads share this process's CPU devices
    options = {
        "measure_timeout_s": work.measure_timeout_s,
        "max_retries": work.max_retries,
        "measure_seconds": work.measure_seconds,
        "factory": MeasurerFactory(measure, **backend),
    }
    if _ENGINE.value == "ray":
        from placer.measure.ray_pool import RayEngine  # noqa: PLC0415

        def engine_factory(n):
            return RayEngine(n, address=_RAY_ADDRESS.value, **options)
    else:
        from placer.measure.pool import InProcessEngine  # noqa: PLC0415

        def engine_factory(n):
            return InProcessEngine(n, **options)

    from placer.sharing import search  # noqa: PLC0415 (imports TensorFlow)

    with stop.on_signals():  # SIGINT/SIGTERM: every search ends after its iteration and saves
        search.run_search(
            work,
            slots=_SLOTS.value,
            epoch_s=_EPOCH.value,
            policy=_POLICY.value,
            workdir=_WORKDIR.value,
            engine_factory=engine_factory,
            loss=_LOSS.value,
            resume=_RESUME.value,
            measure=measure,
            lockstep=_clock_is_epochs(),
            overwrite=_OVERWRITE.value,
            **sharing,
        )


def run():
    cli.run_main(main)


if __name__ == "__main__":
    run()
