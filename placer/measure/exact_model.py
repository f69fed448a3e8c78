"""The CP-SAT model of one training step of a unit graph on a cluster (no TensorFlow).

A relaxation of the simulator's model (`placer.measure.simulator`), so that
every schedule the simulator can produce for any placement is a feasible
solution here, and the solver's proven bound bounds the simulated step time
of every placement of these units:

* placement: a literal per (placement class, device); a class is a set of
  units that must share a device (a group split into units, a colocation
  set); devices whose type has no kernel for a unit are left out;
* compute: per unit a start; per device an optional interval of the unit's
  seconds there (its dispatch included), NoOverlap per device;
* transfers: per unit u and destination device b, present when u is not on b
  and some data consumer of u is: one start and end, and per source device a
  an optional interval on the directed link (a, b) of n * latency + bytes /
  bandwidth, the n tensors and bytes that the simulator sends for the
  consumers placed on b (`placer.measure.units` transfer tables); NoOverlap
  per directed link. The transfer starts after u ends, a consumer on b starts
  after it ends; control edges and same-device edges order the units only;
* memory: each device's persistent bytes within its capacity (activations
  are left out: a relaxation);
* cuts: each unit starts no earlier than its head and the makespan covers
  its tail (`_levels`: chains of predecessors and successors on their
  fastest devices, where the inputs a unit joins either share its device,
  one after another, or pay their cheapest transfer, and the same for the
  outputs it forks); the makespan is at least every device's load and the
  fractional load bound (`placer.measure.bounds.load_bound`);
* symmetry: among interchangeable devices (same kind and links), a device
  is used only once the one before it is, in class order.

Times are integers of `quantum` seconds, each duration rounded down (and a
start rounded down keeps every precedence: floor(a + b) >= floor(a) +
floor(b)), so the relaxation holds; the bound is the solver's bound times the
quantum. The simulator's own list schedule puts the transfers of one link in
the order their producers finish, and starts the ready unit of lowest index:
both are one of the orders this model allows.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from ortools.sat.python import cp_model

from placer.core.op_graph import topological_order
from placer.measure import bounds
from placer.measure.units import Units

_EPS = 1e-6  # ticks: 0.9999999 of a tick is one tick (the float error of x / quantum), not zero


def ticks(seconds, quantum: float) -> np.ndarray:
    """Seconds as integer ticks of `quantum` seconds, rounded down (NaN stays -1)."""
    s = np.asarray(seconds, dtype=np.float64)
    return np.where(np.isnan(s), -1, np.floor(np.nan_to_num(s) / quantum + _EPS)).astype(np.int64)


@dataclasses.dataclass
class Model:
    """A built model and the variables the solver reads back.

    Attributes:
      cp: the CP-SAT model.
      place: per class, {device: literal}.
      start, end: per unit, its start and end (ticks).
      makespan: the step time (ticks).
      cut: the makespan's lower bound from the cuts alone (ticks).
      quantum: seconds per tick.
    """

    cp: cp_model.CpModel
    place: list[dict[int, cp_model.IntVar]]
    start: list
    end: list
    makespan: cp_model.IntVar
    cut: int
    quantum: float


@dataclasses.dataclass(frozen=True)
class Inputs:
    """The placement-independent figures the model is built from.

    Attributes:
      units: the unit graph.
      seconds: [U, D] seconds per unit and device (NaN: no kernel).
      per_tensor: [D, D] seconds per tensor sent over each link.
      bandwidth: [D, D] bytes per second of each link.
      memory: [D] bytes per device.
      unit_class: [U] placement class of each unit (classes numbered 0..C-1).
      symmetric: lists of interchangeable device indices, each sorted.
    """

    units: Units
    seconds: np.ndarray
    per_tensor: np.ndarray
    bandwidth: np.ndarray
    memory: np.ndarray
    unit_class: np.ndarray
    symmetric: tuple[tuple[int, ...], ...]


def size_estimate(inp: Inputs) -> int:
    """Variables and constraint terms the model will hold, roughly (what its memory grows with)."""
    u, dn = inp.seconds.shape
    edges = len(inp.units.succ_unit)
    terms = len(inp.units.pair_cons) + len(inp.units.ent_cons)
    return u * dn * (2 + dn) + edges * (1 + dn) + terms * dn * dn


def build(inp: Inputs, quantum: float) -> Model:
    """Builds the model of the module docstring.

    Args:
      inp: the unit graph and cluster figures.
      quantum: seconds per tick.
    """
    units = inp.units
    u_n, dn = inp.seconds.shape
    sec = ticks(inp.seconds, quantum)
    pt = ticks(inp.per_tensor, quantum)
    cls = inp.unit_class
    c_n = int(cls.max()) + 1 if u_n else 0
    allowed = [sorted(set(range(dn)).intersection(*[np.flatnonzero(sec[u] >= 0) for u in np.flatnonzero(cls == c)]))
               for c in range(c_n)]  # fmt: skip
    horizon = int(np.where(sec >= 0, sec, 0).max(1).sum()) + _transfer_horizon(units, pt, inp.bandwidth, quantum)
    m = cp_model.CpModel()
    place = [{d: m.new_bool_var(f"x{c}_{d}") for d in allowed[c]} for c in range(c_n)]
    for c in range(c_n):
        m.add_exactly_one(place[c].values())
    start = [m.new_int_var(0, horizon, f"s{u}") for u in range(u_n)]
    end = [m.new_int_var(0, horizon, f"e{u}") for u in range(u_n)]
    on_device: list[list] = [[] for _ in range(dn)]
    load: list[list] = [[] for _ in range(dn)]
    for u in range(u_n):
        lits = place[cls[u]]
        m.add(end[u] == start[u] + sum(int(sec[u, d]) * x for d, x in lits.items()))
        for d, x in lits.items():
            on_device[d].append(m.new_optional_fixed_size_interval_var(start[u], int(sec[u, d]), x, f"i{u}_{d}"))
            load[d].append(int(sec[u, d]) * x)
    for d in range(dn):
        m.add_no_overlap(on_device[d])
    makespan = m.new_int_var(0, horizon, "makespan")
    for u in range(u_n):
        m.add(makespan >= end[u])
    _transfers(m, inp, place, start, end, pt, quantum, horizon)
    _memory(m, inp, place)
    cut = _cuts(m, inp, sec, pt, quantum, start, makespan, load)
    _symmetry(m, inp.symmetric, place)
    m.minimize(makespan)
    return Model(m, place, start, end, makespan, cut, quantum)


def _transfer_horizon(units: Units, pt: np.ndarray, bandwidth: np.ndarray, quantum: float) -> int:
    """Ticks that every transfer of the step together can take, at most (each to every device)."""
    tensors = units.pair_count.sum() + len(units.ent_cons)
    nbytes = units.pair_bytes.sum() + units.ent_bytes.sum()
    slowest = 1.0 / bandwidth[np.isfinite(bandwidth) & (bandwidth > 0)].min() if bandwidth.size > 1 else 0.0
    return int(bandwidth.shape[0] * (tensors * max(int(pt.max()), 0) + nbytes * slowest / quantum + tensors + 1))


def _consumer_terms(units: Units) -> dict[int, list[tuple[list[tuple[int, int]], int]]]:
    """Per producing unit, its tensors: ([(consumer unit, bytes)], tensor count).

    A tensor of a single-consumer producer op (summed per consumer unit) is
    sent with its bytes and count when its consumer is on the destination; a
    producer op with several consumer units sends once per device, the
    largest of the edges to the consumers there.
    """
    out: dict[int, list] = {}
    for u, v, b, n in zip(units.pair_unit, units.pair_cons, units.pair_bytes, units.pair_count, strict=True):
        out.setdefault(int(u), []).append(([(int(v), int(b))], int(n)))
    hi = np.r_[units.ent_pstart[1:], len(units.ent_cons)] if len(units.ent_pstart) else []
    for s, (lo, up) in enumerate(zip(units.ent_pstart, hi, strict=True)):
        cons = [(int(v), int(b)) for v, b in zip(units.ent_cons[lo:up], units.ent_bytes[lo:up], strict=True)]
        out.setdefault(int(units.ent_unit[s]), []).append((cons, 1))
    return out


def _transfers(m, inp: Inputs, place, start, end, pt, quantum, horizon) -> None:
    """Adds the transfers of the module docstring: intervals per directed link, NoOverlap per link."""
    cls, dn = inp.unit_class, inp.seconds.shape[1]
    links: dict[tuple[int, int], list] = {}
    units = inp.units
    for u, tensors in _consumer_terms(units).items():
        cu = cls[u]
        dests = sorted({b for cons, _ in tensors for v, _ in cons for b in place[cls[v]]})
        for b in dests:
            on_b = {cls[v]: place[cls[v]][b] for cons, _ in tensors for v, _ in cons if b in place[cls[v]]}
            if set(on_b) == {cu}:
                continue  # every consumer shares u's device: nothing is ever sent
            need = m.new_bool_var(f"n{u}_{b}")  # some consumer of u is on b (and u may be elsewhere)
            m.add_max_equality(need, list(on_b.values()))
            t0, t1 = m.new_int_var(0, horizon, f"ts{u}_{b}"), m.new_int_var(0, horizon, f"te{u}_{b}")
            m.add(t0 >= end[u])
            any_on: dict[int, object] = {}  # per tensor: some consumer of it is on b (shared by every source)
            for a, xa in place[cu].items():
                if a == b:
                    continue
                size = _size(m, tensors, cls, place, a, b, pt, inp.bandwidth, quantum, horizon, any_on)
                present = m.new_bool_var(f"p{u}_{a}_{b}")
                m.add_bool_and([xa, need]).only_enforce_if(present)
                m.add_bool_or([xa.Not(), need.Not(), present])
                links.setdefault((a, b), []).append(m.new_optional_interval_var(t0, size, t1, present, f"t{u}_{a}_{b}"))
            for e in range(units.succ_ptr[u], units.succ_ptr[u + 1]):
                v = int(units.succ_unit[e])
                if units.succ_data[e] and cls[v] != cu and b in place[cls[v]]:
                    cond = [place[cls[v]][b]] + ([place[cu][b].Not()] if b in place[cu] else [])
                    m.add(start[v] >= t1).only_enforce_if(cond)
    for u in range(len(start)):
        for e in range(units.succ_ptr[u], units.succ_ptr[u + 1]):
            m.add(start[int(units.succ_unit[e])] >= end[u])
    for d in range(dn):
        for a in range(dn):
            if links.get((a, d)):
                m.add_no_overlap(links[(a, d)])


def _size(m, tensors, cls, place, a, b, pt, bandwidth, quantum, horizon, any_on):
    """The ticks of u's transfer over link (a, b), an integer variable: n * latency + bytes / bandwidth."""
    terms = []
    for t, (cons, n) in enumerate(tensors):
        lits = [(place[cls[v]][b], int(np.floor(nb / bandwidth[a, b] / quantum + _EPS))) for v, nb in cons
                if b in place[cls[v]]]  # fmt: skip
        if not lits:
            continue
        if len(lits) == 1:
            x, k = lits[0]
            terms.append((n * int(pt[a, b]) + k) * x)
            continue
        if t not in any_on:
            any_on[t] = m.new_bool_var("")
            m.add_max_equality(any_on[t], [x for x, _ in lits])
        if len({k for _, k in lits}) == 1:
            terms.append((int(pt[a, b]) + lits[0][1]) * any_on[t])
        else:  # the largest edge to the consumers on b
            most = m.new_int_var(0, max(k for _, k in lits), "")
            m.add_max_equality(most, [k * x for x, k in lits])
            terms.append(int(pt[a, b]) * any_on[t] + most)
    size = m.new_int_var(0, horizon, "")
    m.add(size == sum(terms))
    return size


def _memory(m, inp: Inputs, place) -> None:
    """Each device's persistent bytes within its memory."""
    per_class = np.bincount(inp.unit_class, weights=inp.units.persistent, minlength=len(place))
    for d, cap in enumerate(inp.memory):
        terms = [int(per_class[c]) * place[c][d] for c in range(len(place)) if d in place[c] and per_class[c] > 0]
        if terms:
            m.add(sum(terms) <= int(cap))


def _cuts(m, inp: Inputs, sec, pt, quantum, start, makespan, load) -> int:
    """Adds the redundant cuts of the module docstring; returns their bound on the makespan (ticks)."""
    u_n = len(start)
    fast = np.where(sec >= 0, sec, np.iinfo(np.int64).max).min(1) if u_n else np.zeros(0, np.int64)
    head, tail = _levels(inp, fast, pt, quantum) if u_n else (fast, fast)
    for u in range(u_n):
        if head[u]:
            m.add(start[u] >= int(head[u]))
        m.add(makespan >= start[u] + int(tail[u]))
    for d in range(len(load)):
        if load[d]:
            m.add(makespan >= sum(load[d]))
    lp = bounds.load_bound(np.where(sec >= 0, sec, np.nan).astype(np.float64)) if u_n else 0.0
    cut = int(max((head + tail).max(initial=0), np.ceil(lp - 1e-6)))
    m.add(makespan >= cut)
    return cut


def _levels(inp: Inputs, fast: np.ndarray, pt: np.ndarray, quantum: float) -> tuple[np.ndarray, np.ndarray]:
    """Each unit's head (earliest start) and tail (its own time and the least after it), in ticks.

    A unit v starts after its predecessors: some share its device and run one
    after another there (released at their heads, `fast` ticks each), the
    others end and send their tensors for v (at least `_edge_ticks`). The
    head is the least, over which predecessors share v's device, of the
    later of the two; it suffices to try, for each k, the k whose remote
    arrival is latest. Tails are heads in the reversed graph, plus the unit's
    own time.
    """
    units, u_n = inp.units, len(fast)
    cost = _edge_ticks(units, pt, inp.bandwidth, quantum)
    src = np.repeat(np.arange(u_n), np.diff(units.succ_ptr)).tolist()
    dst, data = units.succ_unit.tolist(), units.succ_data.tolist()
    into: list[list] = [[] for _ in range(u_n)]
    out: list[list] = [[] for _ in range(u_n)]
    for u, v, d in zip(src, dst, data, strict=True):
        c = cost.get((u, v), 0) if d else 0
        into[v].append((u, c))
        out[u].append((v, c))
    order = topological_order(u_n, np.asarray(src, np.int64), np.asarray(dst, np.int64)).tolist()
    head, after = np.zeros(u_n, np.int64), np.zeros(u_n, np.int64)
    for level, seq, edges in ((head, order, into), (after, order[::-1], out)):
        for v in seq:
            if edges[v]:
                level[v] = _join(np.array([level[u] for u, _ in edges[v]]), fast[[u for u, _ in edges[v]]],
                                 np.array([c for _, c in edges[v]]))  # fmt: skip
    return head, after + fast


def _join(release: np.ndarray, length: np.ndarray, transfer: np.ndarray) -> int:
    """The earliest start of a unit after inputs released at `release` taking `length`, each either run
    before it on its device (one at a time) or sent over `transfer` ticks."""
    arrival = release + length + transfer
    by_arrival = np.argsort(-arrival, kind="stable")
    best = int(arrival[by_arrival[0]])
    for k in range(1, len(by_arrival) + 1):
        local = by_arrival[:k]
        t = 0
        for u in local[np.argsort(release[local], kind="stable")]:
            t = max(t, int(release[u])) + int(length[u])
        if t >= best:
            break
        best = min(best, max(t, int(arrival[by_arrival[k]]) if k < len(by_arrival) else 0))
    return best


def _edge_ticks(units: Units, pt: np.ndarray, bandwidth: np.ndarray, quantum: float) -> dict[tuple[int, int], int]:
    """Per data edge (u, v) of the unit graph, the fewest ticks u's tensors for v take on any link: the
    terms of `_size` for v's tensors alone, on the cheapest pair of distinct devices."""
    dn = len(bandwidth)
    off = ~np.eye(dn, dtype=bool)
    per_tensor, bw = pt[off], bandwidth[off]
    total: dict[tuple[int, int], np.ndarray] = {}
    for u, tensors in _consumer_terms(units).items():
        for cons, n in tensors:
            for v, nb in cons:
                link = n * per_tensor + np.floor(nb / bw / quantum + _EPS).astype(np.int64)
                total[(u, v)] = total.get((u, v), 0) + link
    return {e: int(t.min()) for e, t in total.items()}


def _symmetry(m, symmetric, place) -> None:
    """Among interchangeable devices d1 < d2 < ..., class c may use d_k only if a class before it uses d_(k-1)."""
    for devs in symmetric:
        used_before = {d: None for d in devs}  # literal: some class before this one is on d
        for c in range(len(place)):
            now = {}
            for k, d in enumerate(devs):
                x = place[c].get(d)
                if x is not None and k > 0:
                    prev = used_before[devs[k - 1]]
                    if prev is None:
                        m.add(x == 0)
                    else:
                        m.add_implication(x, prev)
                if x is None:
                    now[d] = used_before[d]
                elif used_before[d] is None:
                    now[d] = x
                else:
                    y = m.new_bool_var("")
                    m.add_max_equality(y, [used_before[d], x])
                    now[d] = y
            used_before = now


def interchangeable(devices, per_tensor: np.ndarray, bandwidth: np.ndarray) -> tuple[tuple[int, ...], ...]:
    """Sets of devices (2 or more, sorted) that any placement may swap without changing its step time.

    Two devices are interchangeable when they have the same type, speed,
    memory, dispatch and transfer cost, and swapping them leaves every
    link's latency and bandwidth as it was.
    """
    dn = len(devices)
    key = [(d.type, d.speed, d.memory_bytes, d.dispatch, d.transfer_cost) for d in devices]
    out: list[list[int]] = []
    for i in range(dn):
        for s in out:
            j = s[0]
            perm = np.arange(dn)
            perm[[i, j]] = perm[[j, i]]
            same = all((mat[np.ix_(perm, perm)] == mat).all() for mat in (per_tensor, bandwidth))
            if key[i] == key[j] and same:
                s.append(i)
                break
        else:
            out.append([i])
    return tuple(tuple(s) for s in out if len(s) > 1)


def canonical(class_dev: np.ndarray, symmetric) -> np.ndarray:
    """A placement per class with interchangeable devices renamed in order of first use (what `_symmetry` allows)."""
    out = np.asarray(class_dev).copy()
    for devs in symmetric:
        first = [d for d in dict.fromkeys(out.tolist()) if d in devs]
        rename = dict(zip(first, devs, strict=False))
        out = np.array([rename.get(d, d) for d in out.tolist()], dtype=out.dtype)
    return out
