"""Kill -9 and resume: placer-train and placer-search killed at a random moment, then resumed to completion.

  python -m bench.kill                                          # the targets' counts: 10 train, 5 search trials
  python -m bench.kill --train_trials=2 --search_trials=1 --nowrite

Targets: 10/10 kill -9 runs of `placer-train` and 5/5 of `placer-search`
resume to completion with every file valid. Each binary first runs once
uninterrupted: W is the time it worked after saving its first progress (its
first checkpoint; a search's first finished iteration) until it exited. Each
trial then runs it in a fresh workdir, waits for its own first saved
progress, sends SIGKILL after a further wait drawn uniformly from (0, 0.9 W)
by a seeded random.Random, so that every kill cuts a run with work to lose,
then runs it with `--resume` until it exits 0 (at most 3 times). A run that
finishes before its kill (faster than the uninterrupted one) is run again
with a new draw, up to 3 times, and the table says so. placer-train: the tiny NMT config, policy hidden size 16, a
step-bounded run with a checkpoint every 10 steps. placer-search: the
three-search workload of bench/testing/workloads.py under the fair share,
one run killed once per trial. Writes a section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

from tabulate import tabulate

from bench import report
from bench.testing.workloads import METHODS, write_workload
from placer.core.errors import InputError
from placer.core.placement import Placement
from placer.rl.run_files import CURVE_COLUMNS

TRAIN_FLAGS = [
    "--noprogress",
    "--config=configs/nmt.py:tiny",
    "--config.placer.train.method=seq2seq",
    "--config.placer.policy.hidden_size=16",
    "--config.placer.train.checkpoint_every=10",
    "--seed=0",
]
SEARCH_FLAGS = ["--slots=4", "--epoch_s=0.2", "--policy=fair"]
SEARCHES = ("s0", "s1", "s2")
RESUMES = 3  # --resume runs allowed per trial
DRAWS = 3  # kill moments drawn per trial while the run finishes before its kill


def _start(module: str, args: list[str], log_path: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=report.ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    with open(log_path, "a") as log:  # a file, not a pipe: a full pipe would stall the run
        return subprocess.Popen(
            [sys.executable, "-m", module, *args], cwd=report.ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
        )


def _watch(module: str, args: list[str], log_path: str, progress, kill_after: float | None, timeout_s: float):
    """Runs the binary; with `kill_after`, sends SIGKILL that many seconds after its first saved progress.

    Args:
      module: the binary's module.
      args: its flags.
      log_path: file its output is appended to.
      progress: progress() -> True once the run has saved work of its own.
      kill_after: seconds after the first progress to kill it; None = run to the end.
      timeout_s: seconds before it is stopped anyway.

    Returns:
      (killed, exit status or None, seconds to the first progress or None, wall seconds).
    """
    t0 = time.monotonic()
    proc = _start(module, args, log_path)
    first = None
    while proc.poll() is None:
        now = time.monotonic() - t0
        if first is None and progress():
            first = now
        if (first is not None and kill_after is not None and now - first >= kill_after) or now > timeout_s:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return now <= timeout_s, None, first, time.monotonic() - t0
        time.sleep(0.05)
    return False, proc.returncode, first, time.monotonic() - t0


def _run(module: str, args: list[str], log_path: str, timeout_s: float) -> tuple[int, float]:
    """Runs to the end (killed past `timeout_s`); returns (exit status, wall seconds)."""
    _, code, _, wall = _watch(module, args, log_path, lambda: False, None, timeout_s)
    return (code if code is not None else -9), wall


def _read_json(path: str):
    with open(path) as f:
        return json.load(f)


def _csv_rows(path: str, columns: list[str]) -> list[dict]:
    with open(path) as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != columns:
            raise ValueError(f"{os.path.basename(path)}: columns {reader.fieldnames}")
        return list(reader)


def _saved_best(workdir: str) -> float | None:
    """The best step time in best_placement.json, or None when there is none (or it does not parse)."""
    try:
        return float(_read_json(os.path.join(workdir, "best_placement.json"))["metadata"]["step_time"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def check_train_workdir(workdir: str, steps: int, best_at_kill: float | None = None) -> list[str]:
    """What is wrong with a finished placer-train workdir (empty when every file is valid).

    Args:
      workdir: the run's folder.
      steps: the steps the run was asked for.
      best_at_kill: the best step time (s) saved on disk when it was killed, if any;
        the final best must be no worse.
    """
    problems = []
    try:
        summary = _read_json(os.path.join(workdir, "summary.json"))
        run = _read_json(os.path.join(workdir, "run.json"))
        history = [int(h["step"]) for h in _read_json(os.path.join(workdir, "history.json"))]
        curve = _csv_rows(os.path.join(workdir, "curve.csv"), list(CURVE_COLUMNS))
        best = Placement.load(os.path.join(workdir, "best_placement.json"))
    except (OSError, ValueError, KeyError, TypeError, InputError) as e:
        return [f"unreadable: {str(e).splitlines()[0][:80]}"]
    if summary["steps"] != steps:
        problems.append(f"summary steps {summary['steps']} != {steps}")
    if run["fingerprint"] != summary["fingerprint"]:
        problems.append("run.json names another graph")
    if history != list(range(1, steps + 1)):
        problems.append("history.json steps not 1..N once each")
    curve_steps = [int(r["step"]) for r in curve]
    if curve_steps != list(range(1, steps + 1)):
        repeated = len(curve_steps) - len(set(curve_steps))
        problems.append(f"curve.csv steps not 1..N once each ({repeated} repeated)")
    samples = [int(r["samples"]) for r in curve]
    if any(a >= b for a, b in zip(samples, samples[1:], strict=False)):
        problems.append("curve.csv samples not increasing")
    meta = best.metadata
    if len(best.op_names) != summary["ops"] or best.fingerprint != summary["fingerprint"]:
        problems.append("best_placement.json does not match the graph")
    if not {best.device_names[d] for d in best.devices} <= set(run["devices"]):
        problems.append("best_placement.json names devices outside the cluster")
    if meta.get("step_time") != summary["best_step_time"]:
        problems.append("best_placement.json and summary.json disagree on the best")
    if best_at_kill is not None and summary["best_step_time"] > best_at_kill:
        problems.append(f"best {summary['best_step_time']:.4f} s worse than {best_at_kill:.4f} s saved at the kill")
    return problems


def _search_state(out: str) -> dict[str, dict]:
    """Each search's saved curve (sharing_state.json) right now, by search name."""
    got = {}
    for name in SEARCHES:
        try:
            got[name] = _read_json(os.path.join(out, "fair", "jobs", name, "sharing_state.json"))
        except (OSError, ValueError):
            pass
    return got


def check_search_workdir(out: str, steps: int, at_kill: dict[str, dict]) -> list[str]:
    """What is wrong with a finished placer-search workdir (empty when every file is valid).

    Args:
      out: the run's --workdir.
      steps: iterations per search.
      at_kill: each search's sharing_state.json when the run was killed; iterations
        finished then (all but the last, which may lie past its checkpoint) must survive unchanged.
    """
    problems = []
    try:
        summary = _read_json(os.path.join(out, "fair", "summary.json"))
        jobs = {j["name"]: j for j in summary["jobs"]}
        for name in SEARCHES:
            job = jobs[name]
            if (job["status"], job["iterations"]) != ("done", steps):
                problems.append(f"{name}: {job['status']} after {job['iterations']} iterations")
            with open(os.path.join(out, "fair", "curves", f"{name}.csv")) as f:
                rows = list(csv.DictReader(f))
            if [int(r["iteration"]) for r in rows] != list(range(steps)):
                problems.append(f"{name}: curve iterations not 0..N-1 once each")
            times = [float(r["time_s"]) for r in rows]
            if times != sorted(times):
                problems.append(f"{name}: curve clock went back")
            kept = at_kill.get(name, {"times": [], "losses": []})
            n = max(0, len(kept["losses"]) - 1)
            if [float(r["loss"]) for r in rows[:n]] != kept["losses"][:n]:
                problems.append(f"{name}: iterations finished before the kill were run again")
            folder = os.path.join(out, "fair", "jobs", name)
            rounds = _read_json(os.path.join(folder, "search.json"))["rounds"]
            if rounds != steps:
                problems.append(f"{name}: search.json counts {rounds} rounds, not {steps}")
            if METHODS[SEARCHES.index(name)] == "seq2seq":  # the one method with a per-step history.json
                history = _read_json(os.path.join(folder, "history.json"))
                if [h["step"] for h in history] != list(range(1, steps + 1)):
                    problems.append(f"{name}: history.json steps not 1..N once each")
            Placement.load(os.path.join(folder, "best_placement.json"))
    except (OSError, ValueError, KeyError, TypeError, InputError) as e:
        problems.append(f"unreadable: {str(e).splitlines()[0][:80]}")
    return problems


def _trial(module, args, workdir: str, progress, kill_after: float, timeout_s: float, snapshot):
    """One kill and the resumes after it; returns (killed, resumes, final exit, what was on disk at the kill)."""
    log = workdir + ".log"
    killed, *_ = _watch(module, args, log, progress, kill_after, timeout_s)
    saved = snapshot(workdir)
    code, resumes = -1, 0
    while killed and code != 0 and resumes < RESUMES:
        resumes += 1
        code, _ = _run(module, [*args, "--resume"], log, timeout_s)
    with open(log) as f:
        lines = [x for x in f.read().splitlines() if "resum" in x or "starting over" in x]
    return killed, resumes, code, saved, lines[-1].replace(workdir, "WORKDIR").split(",")[0][:70] if lines else ""


def _checkpointed(workdir: str) -> bool:
    """Whether placer-train has written its first checkpoint."""
    return os.path.exists(os.path.join(workdir, "checkpoints", "checkpoint"))


def _iterated(out: str) -> bool:
    """Whether placer-search has saved a finished iteration of any search."""
    return any(st.get("losses") for st in _search_state(out).values())


def run_trials(binary: str, trials: int, rng: random.Random, folder: str, timeout_s: float, steps: int) -> list[list]:
    """The reference run and `trials` kill trials of one binary; returns the table rows."""
    if binary == "placer-train":
        module = "placer.train_main"

        def make_args(w):
            return [*TRAIN_FLAGS, f"--workdir={w}", f"--steps={steps}"]

        def snapshot(w):
            return _saved_best(w)

        def check(w, saved):
            return check_train_workdir(w, steps, saved)

        saved_work = _checkpointed
    else:
        module = "placer.search_main"
        jobs = write_workload(folder, steps=steps, arrivals=(0.0, 0.0, 0.3))

        def make_args(w):
            return [f"--jobs={jobs}", *SEARCH_FLAGS, f"--workdir={w}"]

        snapshot = _search_state

        def check(w, saved):
            return check_search_workdir(w, steps, saved)

        saved_work = _iterated

    ref = os.path.join(folder, f"{binary}-ref")
    _, code, first, wall = _watch(module, make_args(ref), ref + ".log", lambda: saved_work(ref), None, timeout_s)
    work_s = wall - (first if first is not None else wall)
    saved_at = "never" if first is None else f"{first:.1f} s"
    print(f"{binary}: uninterrupted run {wall:.1f} s, first work saved at {saved_at}, exit {code}", flush=True)
    problems = check(ref, None if binary == "placer-train" else {}) if code == 0 else [f"exit {code}"]
    rows = [[binary, "uninterrupted", "-", "-", "no" if problems else "yes", "; ".join(problems) or f"{wall:.1f} s"]]
    for t in range(trials):
        # A run that finishes before its kill (it worked faster than the uninterrupted one) is no
        # trial: draw another moment, in a fresh workdir, up to DRAWS times.
        for draw in range(DRAWS):
            w = os.path.join(folder, f"{binary}-{t}-{draw}")
            kill_s = rng.uniform(0.0, 0.9) * work_s
            killed, resumes, code, saved, note = _trial(
                module, make_args(w), w, lambda w=w: saved_work(w), kill_s, timeout_s, snapshot
            )
            if killed:
                break
        problems = check(w, saved) if code == 0 or not killed else ["did not finish"]
        ok = killed and code == 0 and resumes == 1
        if binary == "placer-search" and killed:
            done = sum(len(st["losses"]) for st in saved.values())
            note = f"{done}/{len(SEARCHES) * steps} iterations saved at the kill" + (f"; {note}" if note else "")
        if not killed:
            note = f"finished before the kill, {DRAWS} times"
        elif resumes > 1:
            note = f"{resumes} resumes; " + note
        if killed and draw:
            note += f" ({draw} earlier run(s) finished before the kill drawn for them)"
        rows.append(
            [
                binary,
                t + 1,
                f"{kill_s:.1f}",
                "yes" if ok else "no",
                "yes" if not problems else "no",
                "; ".join(problems) or note,
            ]
        )
        print("  ".join(str(x) for x in rows[-1]), flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train_trials", type=int, default=10)
    parser.add_argument("--search_trials", type=int, default=5)
    parser.add_argument("--train_steps", type=int, default=100, help="placer-train --steps")
    parser.add_argument("--search_steps", type=int, default=12, help="iterations per search")
    parser.add_argument("--seed", type=int, default=0, help="seeds the kill moments")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before a run is stopped")
    parser.add_argument("--nowrite", action="store_true", help="print the table, leave BENCHMARKS.md as it is")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    start = time.time()
    with tempfile.TemporaryDirectory() as folder:
        rows = run_trials("placer-train", args.train_trials, rng, folder, args.timeout, args.train_steps)
        rows += run_trials("placer-search", args.search_trials, rng, folder, args.timeout, args.search_steps)
    lines = []
    for binary, target in (("placer-train", 10), ("placer-search", 5)):
        mine = [r for r in rows if r[0] == binary and isinstance(r[1], int)]
        passed = sum(r[3] == "yes" and r[4] == "yes" for r in mine)
        verdict = "met" if passed == len(mine) >= target else "NOT met"
        if passed == len(mine) < target:
            verdict = "not measured at full scale"
        lines.append(
            f"Target: {target}/{target} kill -9 runs of `{binary}` resume with every file valid: "
            f"{passed}/{len(mine)}: **{verdict}**."
        )
        print(lines[-1])
    table = tabulate(
        rows,
        headers=["binary", "trial", "kill after first save (s)", "resumed ok", "files valid", "note"],
        tablefmt="github",
    )
    body = (
        f"Commit {report.commit()}; {time.time() - start:.0f} s in all, on a machine shared with other jobs. Each trial: a "
        f"fresh workdir, SIGKILL after its first saved progress (first checkpoint; a search's first finished "
        f"iteration) plus a wait drawn uniformly from 0 to 90% of the time an uninterrupted run works after that "
        f"(random.Random({args.seed})), then `--resume` until it exits 0; resumed ok means one resume finished; a run that finished before its "
        f"kill is run again with a new draw (up to {DRAWS} times). "
        f"placer-train: `configs/nmt.py:tiny`, policy hidden size 16, --steps={args.train_steps}, a checkpoint every "
        f"10 steps; files valid: summary.json, run.json, history.json, curve.csv and best_placement.json parse, "
        f"every step once in order, the best no worse than the one saved at the kill. placer-search: the three "
        f"searches of bench/testing/workloads.py ({', '.join(METHODS)}), {args.search_steps} iterations each, "
        f"fair share on 4 slots, one kill per trial; files valid: every search done, each iteration once (its "
        f"curve, its search.json's rounds, seq2seq's history.json), those finished before the kill not run again.\n\n"
        + "\n\n".join(lines)
        + f"\n\n{table}\n"
    )
    if not args.nowrite:
        report.update_section("kill", "Kill -9 and resume", body, "bench/kill.py")
    return 0 if all("NOT" not in x for x in lines) else 1


if __name__ == "__main__":
    raise SystemExit(main())
