"""Cluster specs: the devices a placement targets and the links between them.

Loaded from `configs/clusters/*.json` (format in docs/formats.md). No
TensorFlow import.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

import numpy as np

from placer.core import checks
from placer.core.errors import InputError

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER_DIR = os.path.join(_ROOT, "configs", "clusters")
MAX_OVERHEAD = 1.0  # seconds: a per-op dispatch or per-tensor transfer cost above this is a unit mistake
# This machine's CPU under TF, measured by bench/dispatch.py (chains of scalar ops in sessions with one
# inter-op thread, CPU time; BENCHMARKS.md "Executor dispatch", bench of a6d77ab): seconds each op adds
# to a step, and seconds each tensor sent between two logical CPU devices of one session adds.
LOCAL_CPU_DISPATCH = 7.81e-7
LOCAL_CPU_TRANSFER_COST = 5.70e-6
# A GPU op's kernel launch plus TF's per-op work (docs/measure.md gives the source).
GPU_DISPATCH = 5e-6


@dataclasses.dataclass(frozen=True)
class Device:
    """One device.

    Attributes:
      name: TF device name, e.g. "/device:GPU:0".
      type: device type, "CPU" or "GPU"; selects the op cost column.
      memory_bytes: memory available to one training step, bytes.
      speed: compute speed relative to the reference device of its type
        (an op costing c seconds on the reference takes c / speed here).
      peak_gflops: peak compute, 1e9 float ops per second, for Grappler's
        analytical cost model; 0 = the reference device of its type times
        `speed` (graphs/tf_util.py REFERENCE_DEVICES).
      memory_bandwidth: device memory bandwidth, bytes per second, for
        Grappler; 0 = the reference device of its type times `speed`.
      dispatch: seconds the runtime adds to every op run on this device
        (TF's executor bookkeeping, and a kernel launch on a GPU), on top of
        the op's cost; 0 when a cluster file omits it (docs/formats.md).
      transfer_cost: seconds added to every tensor this device sends to
        another device (the _Send/_Recv pair TF inserts), on top of the
        link's latency; 0 when omitted.
    """

    name: str
    type: str
    memory_bytes: int
    speed: float = 1.0
    peak_gflops: float = 0.0
    memory_bandwidth: float = 0.0
    dispatch: float = 0.0
    transfer_cost: float = 0.0


@dataclasses.dataclass(frozen=True)
class Cluster:
    """Devices and links.

    Attributes:
      name: preset name, e.g. "k80x4".
      devices: the devices, in index order (placements store these indices).
      bandwidth: [D, D] bytes/s of the link from device i to device j.
      latency: [D, D] seconds per transfer from device i to device j.
      serial_executor: one host thread runs the ops of every device in turn
        (TF with one inter-op thread: logical CPU devices of one process then
        never compute at once); False = each device runs its own ops.
    """

    name: str
    devices: tuple[Device, ...]
    bandwidth: np.ndarray
    latency: np.ndarray
    serial_executor: bool = False

    @property
    def num_devices(self) -> int:
        return len(self.devices)

    @property
    def device_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.devices)

    def indices_of_type(self, device_type: str) -> list[int]:
        """Returns the indices of the devices of `device_type`, in order."""
        return [i for i, d in enumerate(self.devices) if d.type == device_type]

    def speeds(self) -> np.ndarray:
        """Returns [D] relative speeds."""
        return np.array([d.speed for d in self.devices], dtype=np.float64)

    def memory(self) -> np.ndarray:
        """Returns [D] memory in bytes."""
        return np.array([d.memory_bytes for d in self.devices], dtype=np.float64)

    def dispatch(self) -> np.ndarray:
        """Returns [D] seconds added to every op run on each device."""
        return np.array([d.dispatch for d in self.devices], dtype=np.float64)

    def transfer_cost(self) -> np.ndarray:
        """Returns [D] seconds added to every tensor each device sends to another."""
        return np.array([d.transfer_cost for d in self.devices], dtype=np.float64)

    def op_seconds(self, graph, op_unit: np.ndarray | None = None, *, dispatch: bool = True) -> np.ndarray:
        """Returns [n_ops, D] seconds each op of `graph` takes on each device (NaN: no kernel there).

        An op takes its cost on a reference device of the device's type
        (`OpGraph.cost_for`) over the device's speed, plus, with `dispatch`,
        the device's dispatch if a training step runs it (`OpGraph.step_weights`).
        Every model of op time (the simulator, the lower bounds, the
        baselines, the learners' features) reads it here.

        Args:
          graph: the OpGraph.
          op_unit: optional [n_ops] unit of each op (units numbered from 0):
            then [U, D] seconds of each unit's ops run back to back, their
            costs summed before the division by speed, one dispatch per op.
          dispatch: whether the per-op dispatch is added.
        """
        cost = np.stack([graph.cost_for(d.type) for d in self.devices], axis=1)
        runs = graph.step_weights()
        if op_unit is not None:
            op_unit = np.asarray(op_unit, dtype=np.int64)
            num = int(op_unit.max()) + 1 if len(op_unit) else 0
            cost = np.stack([np.bincount(op_unit, weights=c, minlength=num) for c in cost.T], axis=1)
            runs = np.bincount(op_unit, weights=runs, minlength=num)
        seconds = cost / self.speeds()[None, :]
        return seconds + runs[:, None] * self.dispatch()[None, :] if dispatch else seconds

    def to_json(self) -> dict:
        """Returns the documented JSON form, with per-pair overrides spelt out."""
        d = len(self.devices)
        bw0, lat0 = _default_link(self.bandwidth, self.latency)
        links = [
            {
                "src": self.devices[i].name,
                "dst": self.devices[j].name,
                "bandwidth": float(self.bandwidth[i, j]),
                "latency": float(self.latency[i, j]),
            }
            for i in range(d)
            for j in range(d)
            if i != j and (self.bandwidth[i, j] != bw0 or self.latency[i, j] != lat0)
        ]
        out = {
            "name": self.name,
            "devices": [dataclasses.asdict(x) for x in self.devices],
            "links": {"default": {"bandwidth": bw0, "latency": lat0}, "pairs": links},
        }
        if self.serial_executor:
            out["serial_executor"] = True
        return out


def _default_link(bw: np.ndarray, lat: np.ndarray) -> tuple[float, float]:
    off = ~np.eye(len(bw), dtype=bool)
    if not off.any():
        return 1e10, 0.0
    vals, counts = np.unique(np.stack([bw[off], lat[off]], 1), axis=0, return_counts=True)
    b, la = vals[np.argmax(counts)]
    return float(b), float(la)


def from_json(data: dict, source: str = "cluster") -> Cluster:
    """Builds and checks a Cluster from its JSON form; every field is checked here.

    Raises:
      InputError: naming `source` and the field: no devices, a missing,
        empty or duplicate name, a memory, speed, rate, bandwidth or latency
        out of its range (placer/core/checks.py), a dispatch or transfer cost
        that is negative, not a number or over 1 s, or a link naming an
        unknown device.
    """
    data = checks.obj(data, source)
    raw = checks.arr(checks.get(data, "devices", f"{source}: devices", required=True), f"{source}: devices", min_len=1)
    checks.within_cap(len(raw), "devices", f"{source}: devices")
    devices = [_device(checks.obj(r, f"{source}: devices[{k}]"), f"{source}: devices[{k}]") for k, r in enumerate(raw)]
    names = [d.name for d in devices]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise InputError(f"{source}: devices: duplicate device name {dup!r}")
    links = checks.obj(checks.get(data, "links", source, {}), f"{source}: links")
    w = f"{source}: links.default"
    default = checks.obj(checks.get(links, "default", w, {}), w)
    bw0 = checks.number(checks.get(default, "bandwidth", w, 1e10), f"{w}.bandwidth", 0.0, checks.MAX_RATE, lo_open=True)
    lat0 = checks.number(checks.get(default, "latency", w, 0.0), f"{w}.latency")
    d = len(devices)
    bw = np.full((d, d), bw0)
    lat = np.full((d, d), lat0)
    idx = {n: i for i, n in enumerate(names)}
    w = f"{source}: links.pairs"
    for k, p in enumerate(checks.arr(checks.get(links, "pairs", w, []), w)):
        where = f"{w}[{k}]"
        p = checks.obj(p, where)
        for end in ("src", "dst"):
            if p.get(end) not in idx:
                raise InputError(f"{where}.{end}: names unknown device {p.get(end)!r}")
        b = checks.number(
            checks.get(p, "bandwidth", where, bw0), f"{where}.bandwidth", 0.0, checks.MAX_RATE, lo_open=True
        )
        la = checks.number(checks.get(p, "latency", where, lat0), f"{where}.latency")
        i, j = idx[p["src"]], idx[p["dst"]]
        bw[i, j], lat[i, j] = b, la
        if checks.boolean(checks.get(p, "symmetric", where, True), f"{where}.symmetric"):
            bw[j, i], lat[j, i] = b, la
    np.fill_diagonal(bw, np.inf)
    np.fill_diagonal(lat, 0.0)
    bw.setflags(write=False)
    lat.setflags(write=False)
    name = checks.text(checks.get(data, "name", source, source), f"{source}: name")
    serial = checks.boolean(checks.get(data, "serial_executor", source, False), f"{source}: serial_executor")
    return Cluster(name=name, devices=tuple(devices), bandwidth=bw, latency=lat, serial_executor=serial)


def _device(r: dict, w: str) -> Device:
    """Checks the fields of one device entry."""
    rate = checks.MAX_RATE
    return Device(
        name=checks.text(checks.get(r, "name", f"{w}.name", required=True), f"{w}.name"),
        type=checks.text(checks.get(r, "type", f"{w}.type", required=True), f"{w}.type").upper(),
        memory_bytes=checks.integer(
            checks.get(r, "memory_bytes", f"{w}.memory_bytes", required=True), f"{w}.memory_bytes", 1, checks.MAX_MEMORY
        ),
        speed=checks.number(checks.get(r, "speed", w, 1.0), f"{w}.speed", 0.0, 1e6, lo_open=True),
        peak_gflops=checks.number(checks.get(r, "peak_gflops", w, 0.0), f"{w}.peak_gflops", 0.0, rate),
        memory_bandwidth=checks.number(checks.get(r, "memory_bandwidth", w, 0.0), f"{w}.memory_bandwidth", 0.0, rate),
        dispatch=checks.number(checks.get(r, "dispatch", w, 0.0), f"{w}.dispatch", 0.0, MAX_OVERHEAD),
        transfer_cost=checks.number(checks.get(r, "transfer_cost", w, 0.0), f"{w}.transfer_cost", 0.0, MAX_OVERHEAD),
    )


def local_cpus(spec: str) -> int | None:
    """The CPU device count of a "local:N" cluster spec; None for "local" (the process's own count).

    "local:N" is the measuring machine split into N logical CPU devices
    (graphs.local_cluster), so each measurement worker can own them.

    Raises:
      InputError: `spec` is not "local" or "local:N" with N a positive integer.
    """
    if spec == "local":
        return None
    head, _, count = spec.partition(":")
    if head != "local" or not count.isdigit() or int(count) < 1:
        raise InputError(f"cluster {spec!r}: a local cluster is 'local' or 'local:N' with N >= 1 logical CPUs")
    return int(count)


def is_local(spec: str) -> bool:
    """True for "local" and "local:N" (this machine's devices, read with TensorFlow)."""
    return spec == "local" or spec.startswith("local:")


def load(path_or_name: str) -> Cluster:
    """Loads a cluster from a JSON file or a preset name ("k80x4").

    "local" and "local:N", this process's own devices, need TensorFlow:
    graphs.local_cluster.load accepts them as well as everything this function does.

    Raises:
      InputError: the file is missing, not JSON, or fails the checks.
    """
    if is_local(path_or_name):
        raise InputError(
            f"cluster {path_or_name!r} lists this process's devices: load it with graphs.local_cluster.load"
        )
    path = path_or_name
    if not os.path.exists(path):
        preset = os.path.join(CLUSTER_DIR, path_or_name + ".json")
        if os.path.exists(preset):
            path = preset
        else:
            presets = sorted(f[:-5] for f in os.listdir(CLUSTER_DIR) if f.endswith(".json"))
            raise InputError(f"{path_or_name}: no such cluster file or preset (presets: {', '.join(presets)}, local)")
    return from_json(checks.read_json(path, "cluster spec"), source=path)


def make(
    name: str,
    devices: Sequence[Device],
    bandwidth: float = 1e10,
    latency: float = 0.0,
    *,
    serial_executor: bool = False,
) -> Cluster:
    """Builds a uniform cluster in code (tests, discovery): one link type for all pairs."""
    data = {
        "name": name,
        "devices": [dataclasses.asdict(d) for d in devices],
        "links": {"default": {"bandwidth": bandwidth, "latency": latency}},
        "serial_executor": serial_executor,
    }
    return from_json(data, source=name)
