"""placer-search's comparison lines and tables say what they measure (placer.sharing.report)."""

from placer.sharing import report


def _summary(policy, t90s, quality, trace=None, window=1):
    jobs = [
        {"name": n, "status": "done", "iterations": 3, "best_step_time": 0.5, "error": "", "time_to": {"90%": t}}
        for n, t in t90s.items()
    ]
    for j in jobs:
        j["time_to"].update({"80%": None, "95%": None})
    out = {"policy": policy, "slots": 4, "epoch_s": 5.0, "wall_s": 10.0, "jobs": jobs, "average_quality": quality}
    out["mean_time_to"] = {"80%": None, "90%": None, "95%": None}
    out["smooth_iterations"] = window
    if trace:
        out["trace"] = trace
    return out


def test_times_are_compared_on_the_jobs_that_reached_90_percent_under_both():
    # Job b never reached 90% under fair: only a counts, 8 s against 10 s, whatever b did under slaq.
    fair = _summary("fair", {"a": 10.0, "b": None}, 0.5)
    slaq = _summary("slaq", {"a": 8.0, "b": 1.0}, 0.5)
    line = report.compare_to_fair({"fair": fair, "slaq": slaq})
    assert line == (
        "slaq: mean time to 90% 8.00 s, 20.00% sooner than fair (10.0 s), over the 1 jobs that reached 90% "
        "under both; average normalised quality 0.500, the same as fair (0.500)"
    )


def test_a_replay_table_names_its_lowest_loss_and_no_smoothing():
    text = report.format_table(_summary("fair", {"a": 10.0}, 0.5, trace="t.csv", window=1))
    assert "lowest loss" in text and "best step time" not in text
    assert "its loss as recorded first fell" in text and "trailing mean" not in text
    live = report.format_table(_summary("fair", {"a": 10.0}, 0.5, window=5))
    assert "best step time" in live and "trailing mean over 5 iterations of its loss" in live
