"""The suite's runs: what to run, one run, its result file, and running the ones not yet done.

A run is (graph, cluster, method, budget, seed). A method is a registered
learned method (placer.rl.methods, every one the registry holds) given
`budget` measured placements, or a baseline (baselines.registry, budget 0:
one placement, measured once). Each finished run is one small JSON file,
RESULTS/CLUSTER/GRAPH/METHOD-bBUDGET-sSEED-COMMIT.json, COMMIT being the last
commit of the code a run measures (`code_commits`, per method): a later
commit that changes only results, docs or code no run imports keeps every
result current; a change to one method's own code makes only its results
stale, a change to the code they share makes them all stale. A run whose file exists is skipped, so a killed suite resumes
and another machine continues it from the committed files.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import traceback

from bench import suite_graphs
from placer.core import atomic
from placer.core.errors import InputError

ROOT = suite_graphs.ROOT
RESULTS = os.path.join(ROOT, "bench", "results", "suite")
# The code every run depends on, beside the modules it imports (`code_files`): the folders read through
# importlib strings or file paths (baselines' registry, the paper graphs' configs, the clusters' JSON, the
# Keras models' file) and the suite's own run code.
STATIC_PATHS = ("baselines", "graphs", "models", "configs", "bench/suite_graphs.py", "bench/suite_models.py", "bench/suite_runs.py")  # fmt: skip
PACKAGES = ("placer", "graphs", "models", "configs", "baselines", "bench")
# Registered methods that are plain searches (the references), not learned ones.
SEARCHES = ("annealing", "annealing_warm", "random_search")
REFERENCE = "annealing_warm"
BASELINE = "baseline"  # the key of every baseline's runs in code_commits()
# Runs that are not a registered method's: their own modules and files (bench/suite_transfer.py's
# fine-tuning from a policy pretrained on the tune split runs seq2seq).
OWN_MODULES = {"pretrained": ("placer.rl.learn_seq2seq", "placer.rl.pretrain_lib")}
OWN_FILES = {"pretrained": ("bench/suite_transfer.py",)}


def key(job: dict) -> str:
    """What a run's code commit is looked up by: its method, or BASELINE for every baseline."""
    return job["method"] if job["kind"] == "learned" else BASELINE


def learner_modules() -> dict[str, str]:
    """Each registered method's learner module (placer.rl.methods), by method name."""
    from placer.rl import methods  # noqa: PLC0415 (TensorFlow)

    return {n: getattr(m.learner, "func", m.learner).__module__ for n, m in methods.METHODS.items()}


def code_files(method: str) -> list[str]:
    """The files a run of `method` (BASELINE: a baseline) depends on: STATIC_PATHS and every module
    bench/suite_runs.py imports (read by grimp, lazy imports included), but of the learner modules only
    the method's own and what it imports (or OWN_MODULES' and OWN_FILES'). So a change to one method's
    code leaves the others' results current."""
    import grimp  # noqa: PLC0415 (import-linter's graph builder, a development dependency)

    learners = learner_modules()
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    roots = OWN_MODULES.get(method, (learners[method],) if method in learners else ())
    # A learner's imports count in full (exact's hint is annealing's); the other learners are left out
    # of what everything else imports.
    own = set(roots).union(*(graph.find_upstream_modules(m) for m in roots if m in learners.values()))
    for m in set(learners.values()) - set(roots):
        graph.remove_module(m)
    modules = own.union(*(graph.find_upstream_modules(m) for m in ("bench.suite_runs", *roots)))
    modules |= {m.rsplit(".", k)[0] for m in modules for k in range(1, m.count(".") + 1)}  # their packages
    files = set()
    for m in modules:
        path = os.path.join(*m.split("."))
        files.add(os.path.join(path, "__init__.py") if os.path.isdir(os.path.join(ROOT, path)) else path + ".py")
    static = (*STATIC_PATHS, *OWN_FILES.get(method, ()))
    return sorted(static) + sorted(f for f in files if not f.startswith(static))


def code_commit(paths, root: str = ROOT) -> str:
    """The last commit that changed `paths` (short hash), "+changes" when they differ from it; "unknown"."""
    git = ["git", "-C", root]
    try:
        head = subprocess.run([*git, "log", "-1", "--format=%h", "--", *paths], capture_output=True, text=True, check=True)  # fmt: skip
        dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no", "--", *paths], capture_output=True, text=True, check=True)  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def code_commits(methods) -> dict[str, str]:
    """The code commit of each method's runs and of the baselines' (key BASELINE)."""
    return {m: code_commit(code_files(m)) for m in [*methods, BASELINE]}


def current(results: list[dict], commits: dict[str, str] | None = None) -> list[dict]:
    """The results made by the code as it is now: their commit is their method's in `commits` (default:
    code_commits of the registered methods)."""
    commits = commits if commits is not None else code_commits([*learner_modules(), *OWN_MODULES])
    return [r for r in results if commits.get(key(r)) == r["commit"]]


def learned_methods() -> list[str]:
    """Every method placer.rl.methods registers, in registry order."""
    from placer.rl import methods  # noqa: PLC0415 (TensorFlow)

    return methods.names()


def baseline_methods() -> list[str]:
    """Every baseline of baselines.registry that places without measuring (the measured searches run as
    the learned registry's random_search and annealing)."""
    from baselines import registry  # noqa: PLC0415

    return [n for n in registry.names() if n not in registry.MEASURED]


def result_path(results: str, job: dict, commit: str) -> str:
    """Where the result of `job` (graph, cluster, method, budget, seed) at `commit` is written."""
    name = f"{job['method']}-b{job['budget']}-s{job['seed']}-{commit}.json"
    return os.path.join(results, job["cluster"], job["graph"], name)


def pending(jobs: list[dict], results: str, commits: dict[str, str]) -> list[dict]:
    """The jobs that have no result file at their code commit (`commits`, by `key`) yet."""
    return [j for j in jobs if not os.path.exists(result_path(results, j, commits[key(j)]))]


def save(results: str, result: dict) -> str:
    """Writes one result atomically; returns its path."""
    path = result_path(results, result, result["commit"])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    atomic.write_text(path, json.dumps(result, indent=1, sort_keys=True) + "\n")
    return path


def load_all(results: str) -> list[dict]:
    """Every result file under `results`."""
    out = []
    for folder, _, files in os.walk(results):
        for f in sorted(files):
            if f.endswith(".json"):
                with open(os.path.join(folder, f)) as fh:
                    out.append(json.load(fh))
    return out


def placer_config(graph: suite_graphs.SuiteGraph, cluster: str, method: str):
    """The placer-train config of a learned run: the paper graph's own config, else configs/common.py's
    defaults; simulator, op-level measurement (as bench/budget.py)."""
    from configs import common  # noqa: PLC0415
    from placer.core import configs_util  # noqa: PLC0415

    config = configs_util.load_config(graph.source) if graph.kind == "paper" else common.get_config()
    config.cluster, config.measure = cluster, "sim"
    config.placer.train.measure_op_level = True
    config.placer.train.method = method
    return config


def run_method(
    graph: suite_graphs.SuiteGraph,
    op_graph,
    cluster: str,
    method: str,
    budget,
    seed: int,
    cap: int = 0,
    init_from: str | None = None,
) -> dict:
    """ADAPTER: runs the learned method `method` on `op_graph` for `budget` placements with `seed`; or, for a
    budget "Ns", for N seconds of wall time, its cooling fitted to `cap` placements (what it measures in N s).
    `init_from`: a placer-pretrain policy folder the method starts from.

    Returns:
      {"best": s or None, "placements", "groups", "curve": [[placements, best s, wall s], ...] at every
      improvement, "search_seconds": the search loop's wall time, "wall_seconds": the whole run's}.
    """
    from placer.rl import train_lib  # noqa: PLC0415 (TensorFlow)

    seconds = float(str(budget)[:-1]) if str(budget).endswith("s") else 0.0
    workdir = tempfile.mkdtemp(prefix="suite-")
    t0 = time.time()
    try:
        s = train_lib.run(
            placer_config(graph, cluster, method), workdir=workdir, steps=0, seed=seed, progress=False,
            log=lambda *_: None, max_placements=cap if seconds else int(budget), max_seconds=seconds, graph=op_graph,
            init_from=init_from,
        )  # fmt: skip
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return {
        "best": s["best_step_time"],
        "placements": s["placements"],
        "groups": s["groups"],
        "curve": [list(c) for c in s["curve"]],
        "search_seconds": s["train_seconds"],
        "wall_seconds": time.time() - t0,
    }


def run_baseline(op_graph, cluster, method: str, seed: int) -> dict:
    """Places `op_graph` with the baseline `method` and measures it once with the simulator (op level)."""
    from baselines import registry  # noqa: PLC0415
    from placer.measure import registry as measure_registry  # noqa: PLC0415

    t0 = time.time()
    placement = registry.place(method, op_graph, cluster, seed=seed)
    placed = time.time() - t0
    (m,) = measure_registry.make_measurer("sim", op_graph, cluster).measure([placement])
    return {
        "best": m.step_time if m.ok else None,
        "failure": None if m.ok else str(m.failure),
        "placements": 1,
        "curve": [[1, m.step_time, placed]] if m.ok else [],
        "search_seconds": placed,
        "wall_seconds": time.time() - t0,
    }


def run_job(job: dict) -> dict:
    """Runs one job in this process; returns its result (an "error" field instead of "best" when it failed)."""
    from placer.core import cluster as cluster_lib  # noqa: PLC0415

    graph = suite_graphs.by_name([job["graph"]])[0]
    cluster = cluster_lib.load(job["cluster"])
    op_graph = suite_graphs.costed_graph(graph, cluster)
    bound, term = suite_graphs.lower_bound(op_graph, cluster)
    result = {**job, "ops": op_graph.num_ops, "bound": bound, "bound_term": term, "host": os.uname().nodename}
    t0 = time.time()
    try:
        if job["kind"] == "baseline":
            result.update(run_baseline(op_graph, cluster, job["method"], job["seed"]))
        else:
            run = job.get("runs", job["method"])  # the registered method a run under another name runs
            result.update(
                run_method(
                    graph, op_graph, job["cluster"], run, job["budget"], job["seed"], job.get("cap", 0),
                    job.get("init_from"),
                )
            )  # fmt: skip
    except Exception as e:  # noqa: BLE001 (a failed run is a finding, recorded so a rerun does not retry it)
        result.update(best=None, error=f"{type(e).__name__}: {e}".splitlines()[0][:300], placements=0)
        result.update(curve=[], search_seconds=0.0, wall_seconds=time.time() - t0)
        if not isinstance(e, InputError):
            traceback.print_exc()
    result["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return result


def prepare_graph(graph_name: str, cluster_name: str) -> tuple[str, str, int]:
    """Builds (or reads from its cache) one costed graph; returns (graph, cluster, ops)."""
    from placer.core import cluster as cluster_lib  # noqa: PLC0415

    graph = suite_graphs.by_name([graph_name])[0]
    return graph_name, cluster_name, suite_graphs.costed_graph(graph, cluster_lib.load(cluster_name)).num_ops
