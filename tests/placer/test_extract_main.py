"""placer-extract end to end on the tiny NMT, and its bad-input errors."""

from placer.core import cluster as cluster_lib
from placer.core import configs_util, io
from placer.measure.simulator import Simulator
from placer.rl import problem as problem_lib
from placer.rl import search_loop, train_lib
from tests import binaries


def run(*args):
    return binaries.run("placer.extract_main", *args)


def error_lines(stderr):
    return [x for x in stderr.splitlines() if x.startswith("error:")]


def test_tiny_nmt_summary_and_graph_file(tmp_path):
    out = tmp_path / "nmt.graph.json.gz"
    r = run("--config=configs/nmt.py:tiny", f"--out={out}")
    assert r.returncode == 0, r.stderr[-2000:]
    g = io.load(str(out))
    assert f"ops: {g.num_ops}" in r.stdout
    n_control = int(g.edge_control.sum())
    assert f"edges: {g.num_edges} ({g.num_edges - n_control} data, {n_control} control)" in r.stdout
    assert "groups:" in r.stdout and "grouping time:" in r.stdout
    # The written graph groups the same without extraction; a scope depth changes the groups.
    r2 = run(f"--graph={out}")
    assert r2.returncode == 0, r2.stderr
    groups = [x for x in r.stdout.splitlines() if x.startswith("groups:")]
    assert groups == [x for x in r2.stdout.splitlines() if x.startswith("groups:")]
    # placer-train groups the graph from scratch into as many groups (the config's grouping,
    # gradients apart from their forward ops, on k80x4's five devices).
    _, train_groups = problem_lib.make_problem(
        g, cluster_lib.load("k80x4"), configs_util.load_config("configs/nmt.py:tiny").placer
    )
    assert groups[0].startswith(f"groups: {train_groups.num_groups} (")
    # ...and the warm-started methods place the groups placer-train makes with the warm start's colours.
    placer = configs_util.load_config("configs/nmt.py:tiny").placer
    sim = search_loop.CountingMeasurer(Simulator(g, cluster_lib.load("k80x4")))
    _, warm_groups, _ = train_lib.prepare_problem(g, cluster_lib.load("k80x4"), placer, sim, 0, log=lambda *_: None)
    placed = [x for x in r.stdout.splitlines() if x.startswith("groups placed on k80x4:")]
    assert placed[0].startswith(f"groups placed on k80x4: {train_groups.num_groups} by methods that choose")
    assert placed[1].startswith(f"groups placed on k80x4: {warm_groups.num_groups} by warm-started methods")
    # The step's ops: the train op's fan-in, the rest (initialisers) outside it.
    assert f"ops: {g.num_ops} ({int(g.in_step.sum())} in the training step, " in r.stdout
    assert 0 < int(g.in_step.sum()) < g.num_ops
    r3 = run("--config=configs/nmt.py:tiny", "--scope_depth=2")
    assert r3.returncode == 0, r3.stderr[-2000:]
    scoped = [x for x in r3.stdout.splitlines() if x.startswith("groups:")]
    assert scoped != groups and scoped[0].endswith("scope depth 2)")


def test_bad_inputs_exit_2_with_one_line(tmp_path):
    bad_py = tmp_path / "bad.py"
    bad_py.write_text("garbage(\n")
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{")
    cases = [
        ([f"--config={tmp_path / 'missing.py'}"], "missing.py"),
        ([f"--config={bad_py}"], "bad.py"),
        (["--config=configs/nmt.py:tiny", "--config.model.name=bogus"], "bogus"),
        ([f"--metagraph={bad_json}"], "bad.json"),
        ([f"--graph={bad_json}"], "bad.json"),
        ([f"--graph={tmp_path / 'none.json'}"], "none.json"),
        ([f"--graph={bad_json}", "--costs=none"], "--costs needs --config or --metagraph"),
    ]
    for args, needle in cases:
        out = tmp_path / "out.json"
        r = run(*args, f"--out={out}")
        assert r.returncode == 2, (args, r.stderr[-2000:])
        lines = error_lines(r.stderr)
        assert len(lines) == 1 and needle in lines[0], (args, r.stderr[-2000:])
        assert "Traceback" not in r.stderr
        assert not out.exists()


def test_profile_of_a_step_that_reads_a_placeholder_is_one_line(tmp_path):
    # y = x * w, trained by SGD, x a placeholder: the step cannot run without a feed, so profiling it (which
    # runs the train op with none) is refused before any session starts, naming the placeholder.
    import tensorflow as tf

    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [4, 3], name="x")
        w = tf.compat.v1.get_variable("w", [3, 2])
        loss = tf.reduce_sum(tf.matmul(x, w), name="loss")
        train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
        g.add_to_collection("train_op", train)
        tf.compat.v1.train.export_meta_graph(str(tmp_path / "m.meta"), graph=g)
    out = tmp_path / "out.json"
    r = run(f"--metagraph={tmp_path / 'm.meta'}", "--costs=profile", f"--out={out}")
    assert r.returncode == 2, r.stderr[-2000:]
    lines = error_lines(r.stderr)
    assert len(lines) == 1 and "placeholder 'x'" in lines[0] and "--costs=profile" in lines[0], r.stderr[-2000:]
    assert "Traceback" not in r.stderr and not out.exists()
