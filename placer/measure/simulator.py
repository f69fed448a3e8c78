"""Event-driven simulator of one training step of a placed graph (no TensorFlow).

Model (all times in seconds, sizes in bytes):

* Compute: an op placed on device d takes
  `graph.cost_for(d.type)[op] / d.speed + d.dispatch` (`Cluster.op_seconds`):
  its kernel time, scaled by the device's speed, plus the runtime's fixed
  cost of running one op there (TF's executor bookkeeping, and on a GPU the kernel launch). The
  dispatch term is what makes many small ops cost more than one large op of
  the same total work. Each device runs one op (or unit, below) at a time;
  whenever it is free it starts the ready one of highest priority, the lowest
  op index in the graph's topological order (or the lowest group number).
  See `placer.measure.schedule` for the exact rule. With the cluster's
  `serial_executor`, one host thread runs the ops of every device (TF with
  one inter-op thread): all devices share one timeline, and each transfer's
  time is spent by that thread when its producer finishes.
* Communication: a data edge between devices a != b costs
  `latency[a, b] + a.transfer_cost + bytes / bandwidth[a, b]` and occupies
  the directed link a -> b; transfers on one link run one after another, in
  the order their producers finish. A tensor goes to a given device once,
  however many ops there read it (when one producer has several edges to one
  device, the largest byte count is sent). Control edges order ops only: no
  bytes, no latency, even across devices.
* Memory per device: the persistent bytes (variables) of the ops placed there,
  plus activations: an op's output is allocated when the op starts and freed
  once its last reader on that device finished and its transfers left; a
  received tensor is allocated at the receiver when the transfer starts and
  freed once its last reader there finished. Frees at a time come before
  allocations at the same time. A peak above a device's `memory_bytes` is an
  OOM failure naming the device.
* An op whose cost is NaN for its device's type cannot run there: an
  UNSUPPORTED failure naming the first such op. Ops sharing a non-empty
  colocation key on different devices: an ERROR failure whose message starts
  with "colocation".

Groups: given the op-to-group map of a placement that places every group
whole, the simulator schedules groups instead of ops: a group's ops run back
to back on its device (in op order, each paying its dispatch, so a group of n
ops pays n dispatches as op by op), its outputs leave when the whole group
finished (one transfer per destination device, n tensors costing n
latencies), and its memory is its external outputs (from the group start) plus
the peak of its internal activations while it runs. Groups on a cycle of the
group graph (closed by colocation constraints) are split into acyclic units
first (`placer.measure.units.split_cycles`). This is the unit the paper's
policy places, and it makes thousands of placements per second possible; a
placement that splits a group is simulated op by op. Holding outputs until the
group ends makes the group level report longer steps than the op level on the
same placement (`Simulator.level` names the level a placement gets).
Every placement, traced or not, runs through one compiled kernel
(`placer.measure.fast`); tests/measure/reference_sim.py is its plain-numpy
reference.

Sources: Graham's list scheduling of a task graph, with the per-edge
latency-plus-bytes-over-bandwidth cost of the simulators of Mirhoseini et al.
2017 and Baechi (Jeon et al., SoCC 2020); op costs from Grappler or profiled
kernels (graphs/costs.py); dispatch and transfer costs in docs/measure.md.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from placer.core.cluster import Cluster
from placer.core.colocation import colocation_sets
from placer.core.errors import InputError
from placer.core.measurement import ERROR, OOM, UNSUPPORTED, Measurement
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement
from placer.measure import calibration, fast, sim_trace
from placer.measure.sim_trace import SimResult
from placer.measure.units import Units, contract

# The two simulation levels a step time can come from, named in every report that quotes one.
LEVEL_OP = "op"  # every op scheduled on its own, its outputs sent when it ends
LEVEL_GROUP = "group"  # a group's ops back to back, its outputs sent when the whole group ends


class Simulator:
    """Measures placements of one graph on one cluster by simulation (a Measurer).

    Everything that depends only on the graph and cluster is computed here
    once; `measure_devices` then simulates batches of placements given as
    device arrays (`placer.core.measurement.measure_devices` hands them over).

    Args:
      graph: the op graph with costs for the cluster's device types.
      cluster: the devices and links.
      op_group: optional [n_ops] op-to-group map; batches of per-group
        placements ([K, n_groups]) are then accepted by `measure_devices`.
    """

    takes_device_arrays = True

    def __init__(
        self,
        graph: OpGraph,
        cluster: Cluster,
        *,
        op_group: Sequence[int] | None = None,
    ):
        # Graphs profiled on this machine carry its dispatch of that moment (placer/measure/calibration.py).
        cluster = calibration.calibrated(cluster, graph)
        self.graph, self.cluster = graph, cluster
        self.num_devices = cluster.num_devices
        self.memory = cluster.memory()
        self.latency = np.asarray(cluster.latency, dtype=np.float64)
        self.bandwidth = np.asarray(cluster.bandwidth, dtype=np.float64)
        self.per_tensor = self.latency + cluster.transfer_cost()[:, None]  # [D, D] fixed seconds per tensor sent
        sets = colocation_sets(graph)
        self._coloc_ops = np.concatenate(sets) if sets else np.zeros(0, np.int64)
        self._coloc_start = np.cumsum([0] + [len(m) for m in sets[:-1]]).astype(np.int64)[: len(sets)]
        self._units: dict[bytes | None, tuple[fast.Prepared, np.ndarray]] = {}
        self.op_group = None if op_group is None else np.asarray(op_group, dtype=np.int64)
        if self.op_group is not None:
            if self.op_group.shape != (graph.num_ops,):
                raise InputError(f"op_group has {self.op_group.size} entries for {graph.num_ops} ops")
            self._units_for(self.op_group)

    # ----- public ---------------------------------------------------------

    def measure(self, placements: Sequence[Placement]) -> list[Measurement]:
        """Simulates each placement; per-group ones (placed whole) at group level.

        Raises:
          InputError: a placement of another graph length or naming a device
            missing from the cluster.
        """
        out: list[Measurement | None] = [None] * len(placements)
        by_groups: dict[bytes | None, list[int]] = {}
        rows = []
        for i, p in enumerate(placements):
            rows.append(self._device_row(p))
            key = None if p.groups is None else np.asarray(p.groups, np.int64).tobytes()
            by_groups.setdefault(key, []).append(i)
        for key, idx in by_groups.items():
            grp = None if key is None else np.frombuffer(key, dtype=np.int64)
            res = self.run(np.stack([rows[i] for i in idx]), op_group=grp)
            for i, r in zip(idx, res, strict=True):
                out[i] = r.measurement()
        return out  # type: ignore[return-value]

    def level(self, placement: Placement) -> str:
        """LEVEL_GROUP when `measure` simulates `placement` by groups (its own, else the
        constructor's `op_group`, each placed whole, acyclic), else LEVEL_OP."""
        groups = self.op_group if placement.groups is None else placement.groups
        if groups is None or not self.graph.num_ops:
            return LEVEL_OP
        grp = np.asarray(groups, np.int64)
        dev = np.asarray(placement.devices, np.int64)
        first = np.full(int(grp.max()) + 1, -1)
        first[grp[::-1]] = np.arange(len(grp))[::-1]
        whole = bool((dev[first[grp]] == dev).all()) and self._units_for(grp).acyclic
        return LEVEL_GROUP if whole else LEVEL_OP

    def measure_devices(self, batch: np.ndarray, op_group: Sequence[int] | None = None) -> list[Measurement]:
        """Simulates a batch of placements given as device indices.

        Args:
          batch: [K, n_ops] device per op, or [K, n_groups] device per group
            (with `op_group` here or in the constructor).
          op_group: [n_ops] op-to-group map; default the constructor's.

        Returns:
          One Measurement per row.
        """
        return [r.measurement() for r in self.run(batch, op_group=op_group)]

    def simulate(self, devices: np.ndarray, *, op_group: Sequence[int] | None = None, trace: bool = False) -> SimResult:
        """Simulates one placement ([n_ops] or [n_groups] device indices)."""
        return self.run(np.asarray(devices)[None], op_group=op_group, trace=trace)[0]

    def run(self, batch: np.ndarray, *, op_group: Sequence[int] | None = None, trace: bool = False) -> list[SimResult]:
        """Simulates K placements (see `measure_devices`) in one compiled call (placer.measure.fast),
        returning SimResults; with `trace`, each with its op-level timeline."""
        batch = np.asarray(batch, dtype=np.int64)
        if batch.ndim != 2:
            raise InputError(f"placement batch must be 2-D [K, n], got shape {batch.shape}")
        n = self.graph.num_ops
        grp = self.op_group if op_group is None else np.asarray(op_group, dtype=np.int64)
        if batch.size and (batch.min() < 0 or batch.max() >= self.num_devices):
            raise InputError(
                f"placement names device index {int(batch.max())}, "
                f"but cluster {self.cluster.name!r} has {self.num_devices} devices"
            )
        per_group = batch.shape[1] != n
        if per_group and (grp is None or batch.shape[1] != int(grp.max()) + 1):
            raise InputError(f"placement has {batch.shape[1]} entries for {n} ops of {self.graph.name!r}")
        out: list[SimResult | None] = [None] * len(batch)
        whole = np.zeros(len(batch), dtype=bool)
        if grp is not None and n and self._units_for(grp).acyclic:
            units = self._units_for(grp)
            if per_group:
                gdev = batch
                whole[:] = True
            else:
                first = np.full(int(grp.max()) + 1, -1)
                first[grp[::-1]] = np.arange(n)[::-1]
                gdev = batch[:, first]
                whole = (gdev[:, grp] == batch).all(1)
            self._run_units(grp, gdev[whole][:, units.unit_group], trace, out, np.flatnonzero(whole))
        if not whole.all():
            rest = np.flatnonzero(~whole)
            ops = batch[rest][:, grp] if per_group else batch[rest]
            self._run_units(None, ops, trace, out, rest)
        return out  # type: ignore[return-value]

    # ----- internals ------------------------------------------------------

    def _device_row(self, p: Placement) -> np.ndarray:
        if len(p.devices) != self.graph.num_ops:
            raise InputError(
                f"placement has {len(p.devices)} devices for {self.graph.num_ops} ops of {self.graph.name!r}"
            )
        pos = {name: i for i, name in enumerate(self.cluster.device_names)}
        remap = np.empty(len(p.device_names), dtype=np.int64)
        for i, name in enumerate(p.device_names):
            if name not in pos:
                raise InputError(f"placement names device {name!r}, not in cluster {self.cluster.name!r}")
            remap[i] = pos[name]
        return remap[np.asarray(p.devices, dtype=np.int64)]

    def _units_for(self, grp: np.ndarray | None) -> Units:
        """The unit graph of op-to-group map `grp` (None: op level)."""
        return self._prepared(grp)[0].units

    def _prepared(self, grp: np.ndarray | None) -> tuple[fast.Prepared, np.ndarray]:
        """(the kernel's arrays for `grp`'s unit graph, [S] first op of each colocation set spanning
        several units), built once per map."""
        key = None if grp is None else grp.tobytes()
        if key not in self._units:
            units = contract(self.graph, grp)
            # Colocation sets that span several units, as unit indices.
            cu, cs, cop = [], [], []
            for j, lo in enumerate(self._coloc_start):
                hi = self._coloc_start[j + 1] if j + 1 < len(self._coloc_start) else len(self._coloc_ops)
                members = np.unique(units.op_unit[self._coloc_ops[lo:hi]])
                if len(members) > 1:
                    cs.append(len(cu))
                    cu.extend(members.tolist())
                    cop.append(self._coloc_ops[lo])
            seconds = self.cluster.op_seconds(self.graph, units.op_unit)  # a unit of n ops pays n dispatches
            prepared = fast.prepare(
                units, seconds, self.per_tensor, self.bandwidth, cu, cs, self.cluster.serial_executor
            )
            self._units[key] = (prepared, np.asarray(cop, np.int64))
        return self._units[key]

    def _run_units(self, grp, dev: np.ndarray, trace: bool, out: list, where: np.ndarray) -> None:
        """Simulates [K, U] devices per unit of `grp`'s unit graph, writing row j's SimResult to out[where[j]]."""
        if not len(dev):
            return
        prepared, cop = self._prepared(grp)
        units = prepared.units
        o = fast.run(prepared, dev, trace=trace)
        steps, moved, colocs = o.finish.tolist(), o.moved.tolist(), o.coloc.tolist()
        for i, coloc in enumerate(colocs):
            fail, msg = None, ""
            if o.unsupported[i]:
                bad = np.isnan(prepared.seconds[np.arange(units.num_units), dev[i]])
                fail, msg = UNSUPPORTED, self._unsupported_message(units, dev[i][units.op_unit], bad)
            elif coloc >= 0:
                fail, msg = ERROR, self._colocation_message(cop[coloc])
            else:
                fail, msg = self._oom(o.peak[i])
            extra = sim_trace.op_trace(self, units, dev[i], o, i) if trace else {}
            out[where[i]] = SimResult(
                float("inf") if fail else steps[i], o.busy[i], o.peak[i], moved[i], fail, msg, **extra
            )

    def _oom(self, peak: np.ndarray) -> tuple[str | None, str]:
        over = np.flatnonzero(peak > self.memory)
        if not len(over):
            return None, ""
        d, name = int(over[0]), self.cluster.devices[int(over[0])].name
        return OOM, f"out of memory on {name}: peak {peak[d]:.0f} bytes, has {self.memory[d]:.0f}"

    def _colocation_message(self, op: int) -> str:
        return f"colocation: ops with key {self.graph.colocation[op]!r} are placed on different devices"

    def _unsupported_message(self, units, ops_row, bad_units) -> str:
        g = self.graph
        for op in np.flatnonzero(bad_units[units.op_unit]):
            dev = self.cluster.devices[int(ops_row[op])]
            if np.isnan(g.cost_for(dev.type)[op]):
                return f"op {g.names[op]!r} ({g.types[op]}) has no {dev.type} kernel but is placed on {dev.name}"
        return "unsupported placement"


def simulate(graph: OpGraph, cluster: Cluster, devices: np.ndarray, *, trace: bool = False) -> SimResult:
    """Simulates one op-level placement (see the module docstring for the model).

    Args:
      graph: op graph with costs for the cluster's device types.
      cluster: devices and links.
      devices: [n_ops] int device index per op.
      trace: also return op start/finish times and transfers (for
        `placer.measure.trace.to_chrome_trace`).

    Returns:
      The SimResult: step time (s), per-device busy time (s) and peak memory
      (bytes), bytes moved, failure kind and message.
    """
    return Simulator(graph, cluster).simulate(np.asarray(devices), trace=trace)
