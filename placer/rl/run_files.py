"""The files a placer-train run keeps beside its checkpoint: the per-step history and the learning curve."""

from __future__ import annotations

import csv
import io
import json

from placer.core.errors import InputError, one_line

CURVE_COLUMNS = ("step", "samples", "wall_seconds", "mean_step_time", "best_step_time", "entropy")


def curve_csv(history: list[dict]) -> str:
    """The learning curve as CSV text: step, placements measured, wall seconds, mean and best step time (s), entropy (nats)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(CURVE_COLUMNS)
    for h in history:
        w.writerow([h.get(k, "") for k in CURVE_COLUMNS])
    return out.getvalue()


def read_history(path: str) -> list[dict]:
    """The per-step statistics saved beside a checkpoint (written before it, so always there).

    Raises:
      InputError: the file is missing, unreadable, or not a JSON list of objects.
    """
    try:
        with open(path) as f:
            history = json.load(f)
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: cannot resume, corrupt or missing history ({one_line(e)})") from None
    if not isinstance(history, list) or not all(isinstance(h, dict) for h in history):
        raise InputError(f"{path}: cannot resume, history is not a JSON list of objects")
    return history
