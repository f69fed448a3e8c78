"""placer-measure prints times with 3 significant figures and the unit that fits (us, ms, s)."""

import json
import re

from tests import binaries

# a (3 us on a GPU) -> b (2 ms on a GPU), no bytes between them; 10x as long on the CPU.
GRAPH = {
    "format": "placer.opgraph",
    "version": 1,
    "name": "short",
    "device_types": ["CPU", "GPU"],
    "ops": [
        {
            "name": n,
            "type": "T",
            "output_shapes": [],
            "output_bytes": 0,
            "persistent_bytes": 0,
            "colocation": "",
            "cost": {"CPU": 10 * c, "GPU": c},
        }
        for n, c in (("a", 3e-6), ("b", 2e-3))
    ],
    "edges": [{"src": "a", "dst": "b", "bytes": 0, "control": False}],
}

TIME = re.compile(r"\d+(?:\.\d+)? (?:us|ms|s)\b")


def test_step_time_busy_time_and_lower_bound_print_with_units(tmp_path):
    (tmp_path / "g.json").write_text(json.dumps(GRAPH))
    out = binaries.run(
        "placer.measure_main", f"--graph={tmp_path / 'g.json'}", "--cluster=k80x2", "--baseline=single_gpu"
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    # Both ops on GPU:0: 3 us + 2 ms of compute, and k80x2's dispatch of 5 us per GPU op, twice:
    # 2.003 ms + 0.010 ms = 2.013 ms, 3 significant figures 2.01 ms (a .6f print said 0.002013 s).
    assert "step time: 2.01 ms" in lines
    # Lower bound: the critical path of the fastest costs, 3 us + 2 ms = 2.003 ms; 2.013 / 2.003 = 1.005.
    assert "lower bound: 2.00 ms (step time / lower bound = 1.00)" in lines
    busy = {line.split()[0]: line for line in lines if " busy " in line}
    assert "busy 0 s " in busy["/device:CPU:0"] and "busy 0 s " in busy["/device:GPU:1"]
    assert "busy 2.01 ms " in busy["/device:GPU:0"]  # its two ops and their dispatch: the whole step
    for line in lines:  # no time printed without its unit or with more than 3 significant figures
        assert not re.search(r"\d\.\d{4,}", line), line
    assert len([t for line in lines for t in TIME.findall(line)]) >= 5
