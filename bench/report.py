"""Writes one section of BENCHMARKS.md, leaving the other sections as they are."""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import time

from placer.core import atomic

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATH = os.path.join(ROOT, "BENCHMARKS.md")
HEADER = "# Benchmarks\n\nEvery section is written by the script it names in `bench/`; rerun it to refresh.\n"


def commit() -> str:
    """The checked-out commit: short hash, "+changes" when tracked files other than what benches write differ.

    BENCHMARKS.md, README.md and bench/out/ are left out of the check, since
    bench scripts write them. "unknown" outside a git checkout.
    """
    git = ["git", "-C", ROOT]
    try:
        head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
        dirty = subprocess.run(
            [*git, "status", "--porcelain", "--untracked-files=no", "--", ".", *(f":!{p}" for p in _WRITTEN)],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


_WRITTEN = ("BENCHMARKS.md", "README.md", "bench/out")


def update_section(name: str, title: str, body: str, script: str, at: str | None = None) -> None:
    """Replaces (or appends) the section `name` of BENCHMARKS.md.

    Args:
      name: stable key of the section, e.g. "extract".
      title: heading text.
      body: Markdown body.
      script: the bench script that wrote it, quoted under the heading.
      at: the commit the run measured (`commit()` at its start), quoted beside the script; None: the
        body names it.
    """
    text = open(PATH).read() if os.path.exists(PATH) else HEADER
    stamp = time.strftime("%Y-%m-%d", time.gmtime())
    machine = f"{platform.machine()}, {os.cpu_count()} cores"
    section = (
        f"<!-- bench:{name} -->\n## {title}\n\n_Written by `{script}`{f' at commit {at}' if at else ''} on {stamp} "
        f"({machine})._\n\n"
        f"{body.strip()}\n<!-- /bench:{name} -->\n"
    )
    pattern = re.compile(rf"<!-- bench:{re.escape(name)} -->.*?<!-- /bench:{re.escape(name)} -->\n", re.S)
    text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section
    atomic.write_text(PATH, text)


def run_child(code: str, args: list[str], timeout_s: float) -> dict | str:
    """Runs `python -c code *args` in a fresh process (its own memory, its own TF).

    The child prints one line "RESULT <json>". Returns that JSON, or a
    one-line failure string (time-out, or the child's last stderr line).
    """
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        r = subprocess.run(
            [sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout_s, env=env
        )
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout_s:.0f} s"
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    err = r.stderr.strip()
    return f"failed: {err.splitlines()[-1] if err else r.returncode}"
