"""Per-op dispatch and per-tensor transfer costs of the cluster model, worked out by hand.

Ops cost 1 s each on the reference GPU; the dispatch `d` of the tests is
0.25 s or 0.5 s so that every sum below is exact in binary floating point.
"""

import json

import numpy as np
import pytest

from placer.core import cluster as cl
from placer.core.errors import InputError
from placer.core.placement import Placement
from placer.measure import simulator
from placer.measure.simulator import Simulator, simulate
from tests.hand_graphs import chains


def gpus(n=2, dispatch=0.0, transfer_cost=0.0, latency=0.0, serial=False):
    devices = [
        cl.Device(f"/device:GPU:{i}", "GPU", 10**9, dispatch=dispatch, transfer_cost=transfer_cost) for i in range(n)
    ]
    return cl.make("t", devices, bandwidth=100.0, latency=latency, serial_executor=serial)


def test_chain_of_n_ops_costs_n_dispatches_more():
    g = chains(1, 5)
    base = simulate(g, gpus(), np.zeros(5, np.int64)).step_time
    with_d = simulate(g, gpus(dispatch=0.25), np.zeros(5, np.int64)).step_time
    # 5 ops x 1 s = 5 s; each op adds 0.25 s: 5 + 5 x 0.25 = 6.25 s.
    assert base == 5.0
    assert with_d == 6.25
    assert with_d - base == 5 * 0.25


def test_splitting_two_chains_over_two_devices_halves_the_dispatch_share():
    g = chains(2, 3)
    one, two = np.zeros(6, np.int64), np.array([0, 0, 0, 1, 1, 1])
    d = 0.5
    # One device: 6 ops of 1 + 0.5 s back to back = 9 s, of which 6 x 0.5 = 3 s dispatch.
    one_share = simulate(g, gpus(dispatch=d), one).step_time - simulate(g, gpus(), one).step_time
    # Two devices, one chain each (nothing crosses): 3 x 1.5 = 4.5 s, of which 3 x 0.5 = 1.5 s dispatch.
    two_share = simulate(g, gpus(dispatch=d), two).step_time - simulate(g, gpus(), two).step_time
    assert simulate(g, gpus(dispatch=d), one).step_time == 9.0
    assert simulate(g, gpus(dispatch=d), two).step_time == 4.5
    assert (one_share, two_share) == (3.0, 1.5)


def test_transfer_cost_is_paid_once_per_tensor_sent():
    g = chains(1, 2)
    # a 0-1 on GPU0; its 100 bytes: latency 0.5 + transfer cost 0.25 + 100 / 100 = 1.75 -> 2.75; b 2.75-3.75.
    r = simulate(g, gpus(latency=0.5, transfer_cost=0.25), np.array([0, 1]))
    assert r.step_time == 3.75
    # On one device nothing is sent, so the transfer cost is not paid: 2 s.
    assert simulate(g, gpus(latency=0.5, transfer_cost=0.25), np.array([0, 0])).step_time == 2.0


def test_a_group_of_n_ops_pays_n_dispatches_as_op_by_op():
    g = chains(1, 4)
    groups = np.array([0, 0, 0, 1])  # a group of 3 ops, then one of 1
    sim = Simulator(g, gpus(dispatch=0.25), op_group=groups)
    names = sim.cluster.device_names
    grouped = Placement.from_groups(g, groups, np.array([0, 0]), names)
    assert sim.level(grouped) == simulator.LEVEL_GROUP
    assert Simulator(g, gpus()).level(Placement.from_ops(g, np.zeros(4, np.int64), names)) == simulator.LEVEL_OP
    # 4 ops x (1 + 0.25) = 5 s at both levels: the group of 3 takes 3 x 1.25 = 3.75 s.
    group_level = sim.measure([grouped])[0].step_time
    op_level = simulate(g, gpus(dispatch=0.25), np.zeros(4, np.int64)).step_time
    assert group_level == op_level == 5.0
    # Split: the group of 3 on GPU0 (3.75 s), then 100 bytes at 100 B/s (1 s), the last op 4.75-6.0 on GPU1.
    split = Placement.from_groups(g, groups, np.array([0, 1]), names)
    assert sim.measure([split])[0].step_time == 6.0
    assert simulate(g, gpus(dispatch=0.25), np.array([0, 0, 0, 1])).step_time == 6.0


def test_trace_places_each_op_after_the_dispatches_before_it_in_its_group():
    g = chains(1, 3)
    sim = Simulator(g, gpus(dispatch=0.25), op_group=np.zeros(3, np.int64))
    r = sim.simulate(np.array([0]), trace=True)
    # Ops of the one group: 0-1.25, 1.25-2.5, 2.5-3.75 (dispatch counted inside each op).
    np.testing.assert_allclose(r.op_start, [0.0, 1.25, 2.5])
    np.testing.assert_allclose(r.op_finish, [1.25, 2.5, 3.75])
    assert r.step_time == 3.75


def test_serial_executor_runs_all_devices_on_one_thread():
    g = chains(2, 3)
    two = np.array([0, 0, 0, 1, 1, 1])
    # Both chains on one thread: 6 x 1.5 = 9 s whatever the split (no tensor crosses).
    assert simulate(g, gpus(dispatch=0.5, serial=True), two).step_time == 9.0
    # A chain of 2 split across devices on one thread: a 0-1, its transfer 0.5 + 1 s spent by the
    # thread 1-2.5, b 2.5-3.5.
    r = simulate(chains(1, 2), gpus(latency=0.5, serial=True), np.array([0, 1]))
    assert r.step_time == 3.5
    assert r.bytes_moved == 100


def _write(tmp_path, device_extra):
    device = {"name": "/device:GPU:0", "type": "GPU", "memory_bytes": 1000, **device_extra}
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"name": "c", "devices": [device]}))
    return str(path)


def test_cluster_files_without_the_fields_load_with_zero(tmp_path):
    c = cl.load(_write(tmp_path, {}))
    assert c.devices[0].dispatch == 0.0 and c.devices[0].transfer_cost == 0.0
    assert not c.serial_executor
    # With zero dispatch an op takes its kernel time alone: 3 ops of 1 s.
    assert simulate(chains(1, 3), c, np.zeros(3, np.int64)).step_time == 3.0


def test_cluster_files_with_the_fields_load_and_round_trip(tmp_path):
    c = cl.load(_write(tmp_path, {"dispatch": 5e-6, "transfer_cost": 1e-5}))
    assert (c.devices[0].dispatch, c.devices[0].transfer_cost) == (5e-6, 1e-5)
    again = cl.from_json(json.loads(json.dumps(c.to_json())), "again")
    assert again.devices == c.devices


@pytest.mark.parametrize("name", ["k80x2", "k80x4", "h100x8"])
def test_presets_carry_dispatch_costs(name):
    c = cl.load(name)
    assert all(d.dispatch > 0 for d in c.devices)


@pytest.mark.parametrize(
    "field,value",
    [("dispatch", -1e-6), ("dispatch", "5us"), ("dispatch", True), ("transfer_cost", -1.0), ("dispatch", 2.0)],
)
def test_bad_values_name_the_file_and_field(tmp_path, field, value):
    path = _write(tmp_path, {field: value})
    with pytest.raises(InputError) as e:
        cl.load(path)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"{path}: devices[0].{field}: must be a finite number")


def test_level_follows_the_constructors_groups_for_a_placement_without_its_own():
    g = chains(1, 4)
    groups = np.array([0, 0, 1, 1])
    sim = Simulator(g, gpus(), op_group=groups)
    names = sim.cluster.device_names
    # Devices constant per group: measure() simulates it at the constructor's group level.
    assert sim.level(Placement.from_ops(g, np.array([0, 0, 1, 1]), names)) == simulator.LEVEL_GROUP
    # A group split over two devices: op level.
    assert sim.level(Placement.from_ops(g, np.array([0, 1, 1, 1]), names)) == simulator.LEVEL_OP
    assert Simulator(g, gpus()).level(Placement.from_ops(g, np.zeros(4, np.int64), names)) == simulator.LEVEL_OP


def test_serial_executor_must_be_a_boolean(tmp_path):
    path = tmp_path / "c.json"
    device = {"name": "/device:CPU:0", "type": "CPU", "memory_bytes": 1000}
    path.write_text(json.dumps({"name": "c", "devices": [device], "serial_executor": "yes"}))
    with pytest.raises(InputError, match=r"c\.json: serial_executor: must be true or false"):
        cl.load(str(path))
