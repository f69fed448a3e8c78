"""Runs the bad-input corpus end to end and writes its table to BENCHMARKS.md.

  python -m bench.probe            # every case (about 2 to 5 s each)
  python -m bench.probe --only=graph-cycle,train-measure

Each case of bench/testing/badinput/cases.py runs its binary in a fresh folder and
must exit with status 2, print one stderr line naming the file, field or op,
and leave no new or changed file. The target is 100% of the cases.
"""

from __future__ import annotations

import argparse
import tempfile
import time

from tabulate import tabulate

from bench import report
from bench.testing.badinput import cases, runner


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated case names (default: all)")
    parser.add_argument("--nowrite", action="store_true", help="print the table, leave BENCHMARKS.md as it is")
    args = parser.parse_args()
    chosen = [c for c in cases.CASES if not args.only or c.name in args.only.split(",")]
    rows, passed, start = [], 0, time.time()
    for case in chosen:
        with tempfile.TemporaryDirectory() as folder:
            out = runner.run_case(case, folder)
        passed += out.ok
        line = out.stderr_lines[-1] if out.stderr_lines else ""
        line = line.replace(folder, "DIR")
        rows.append(
            [
                case.name,
                case.what,
                out.exit_status,
                len(out.stderr_lines),
                "yes" if not out.words_missing else "no: " + ", ".join(out.words_missing),
                "nothing" if not out.left_behind else ", ".join(out.left_behind),
                "ok" if out.ok else "FAILED",
                line if len(line) <= 110 else line[:107] + "...",
            ]
        )
        print(f"{'ok    ' if out.ok else 'FAILED'} {case.name}: {line}", flush=True)
    table = tabulate(
        rows,
        headers=["case", "input", "exit", "stderr lines", "names file/field/op", "left behind", "result", "message"],
        tablefmt="github",
    )
    share = 100.0 * passed / max(len(chosen), 1)
    verdict = (
        "met"
        if passed == len(chosen) and not args.only
        else ("NOT met" if passed < len(chosen) else "not measured at full scale")
    )
    body = (
        f"Commit {report.commit()}; {len(chosen)} cases of `bench/testing/badinput/cases.py` "
        f"({', '.join(f'{k} {sum(c.kind == k for c in chosen)}' for k in ('graph', 'cluster', 'placement', 'flag', 'output', 'limit'))}), "
        f"each run once in a fresh folder, {time.time() - start:.0f} s in all.\n\n"
        f"Target: 100% of the cases exit with status 2, print one line naming the file, field or op, "
        f"and leave nothing behind: {passed}/{len(chosen)} ({share:.0f}%): **{verdict}**.\n\n{table}\n"
    )
    print(f"{passed}/{len(chosen)} cases ok: {verdict}")
    if not args.nowrite:
        report.update_section("probe", "Bad input: the corpus end to end", body, "bench/probe.py")
    return 0 if passed == len(chosen) else 1


if __name__ == "__main__":
    raise SystemExit(main())
