"""The models behind the learned annealing methods (placer.rl.learn_anneal): numpy only.

Both read the same per-tie-class facts: each class's compute seconds on each
device and the bytes it exchanges with the other classes.
"""

from __future__ import annotations

import numpy as np

from baselines.search import Space
from placer.core.cluster import Cluster
from placer.core.errors import InputError


class ClassFacts:
    """Per tie class (baselines.search.Space's order): compute seconds per device and the bytes between classes.

    Attributes:
      seconds: [L, D] compute seconds per step of each class on each device (0 where it has no kernel).
      src, dst, bytes: [E] the edges between distinct classes and their bytes per step.
      adjacency: [L, L] bytes exchanged between two classes per step, both directions summed.
      bandwidth: a typical link's bytes per second (the median over device pairs).
    """

    def __init__(self, space: Space, problem, cluster: Cluster):
        groups = space.groups
        cls = groups.leader_index()
        L = groups.num_leaders
        self.seconds = np.nan_to_num(np.asarray(problem.seconds, np.float64)[groups.leaders()], nan=0.0)
        src, dst = cls[np.asarray(groups.edge_src)], cls[np.asarray(groups.edge_dst)]
        keep = src != dst
        self.src, self.dst = src[keep], dst[keep]
        self.bytes = np.asarray(groups.edge_bytes, np.float64)[keep]
        self.adjacency = np.zeros((L, L))
        np.add.at(self.adjacency, (self.src, self.dst), self.bytes)
        self.adjacency += self.adjacency.T
        d = cluster.num_devices
        off = cluster.bandwidth[~np.eye(d, dtype=bool)]
        self.bandwidth = float(np.median(off)) if off.size else 1e10

    def loads(self, placements: np.ndarray) -> np.ndarray:
        """[M, D] compute seconds each device runs under each of `placements` [M, L]."""
        m, n = placements.shape
        d = self.seconds.shape[1]
        index = placements + d * np.arange(m)[:, None]
        return np.bincount(index.ravel(), self.seconds[np.arange(n), placements].ravel(), m * d).reshape(m, d)

    def traffic(self, placements: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """([M, D] bytes each device sends plus receives across devices, [M] bytes crossing devices) per step."""
        m = len(placements)
        d = self.seconds.shape[1]
        a, b = placements[:, self.src], placements[:, self.dst]
        cut = (a != b) * self.bytes  # [M, E]
        rows = d * np.arange(m)[:, None]
        both = np.concatenate([(a + rows).ravel(), (b + rows).ravel()])
        per_device = np.bincount(both, np.concatenate([cut.ravel(), cut.ravel()]), m * d).reshape(m, d)
        return per_device, cut.sum(axis=1)


class MoveModel:
    """A log-linear distribution over annealing's moves (class c to device d), learned by cross-entropy.

    p(c) is a softmax over the classes that can move of b[c] + w_c . psi(c), and
    p(d | c) a softmax over c's other allowed devices of B[c, d] + w_d . phi(c, d),
    both mixed with the uniform distribution (weight `explore`) so that every move
    stays possible. With all weights zero it is annealing's uniform move.

    Args:
      space: the tie classes and their allowed devices.
      problem: the placer.rl.problem.Problem (compute seconds, edges).
      cluster: the devices.
      rate: step size of the per-class and per-(class, device) logits (our choice).
      feature_rate: step size of the shared feature weights (our choice).
      explore: weight of the uniform distribution in the mixture (our choice).
    """

    def __init__(self, space: Space, problem, cluster: Cluster, rate=0.3, feature_rate=0.05, explore=0.25):
        self.facts = ClassFacts(space, problem, cluster)
        self.allowed = space.allowed
        L, D = self.allowed.shape
        self.b, self.B = np.zeros(L), np.zeros((L, D))
        self.wc, self.wd = np.zeros(3), np.zeros(3)
        self.rate, self.feature_rate, self.explore = rate, feature_rate, explore
        self.movable = self.allowed.sum(axis=1) > 1
        self._last = None

    def features(self, cur: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(psi [L, 3], phi [L, D, 3]): the class and move features under placement `cur` [L].

        psi: the share of the class's bytes that cross devices; its device's load over the
        busiest device's; its share of its device's load. phi: the bytes it would exchange
        with device d's classes minus with its own device's, over all its bytes; the log of
        its compute time on d over on its device; d's load minus its device's, over the
        busiest device's.
        """
        f = self.facts
        L, D = self.allowed.shape
        rows = np.arange(L)
        aff = f.adjacency @ (cur[:, None] == np.arange(D))  # [L, D] bytes with each device's classes
        total = f.adjacency.sum(axis=1) + 1.0
        own = aff[rows, cur]
        s_cur = f.seconds[rows, cur]
        load = f.loads(cur[None])[0]
        peak = load.max() + 1e-12
        tiny = 1e-9 + 1e-3 * f.seconds.mean()
        psi = np.stack([(total - 1.0 - own) / total, load[cur] / peak, s_cur / (load[cur] + tiny)], axis=1)
        phi = np.stack(
            [
                (aff - own[:, None]) / total[:, None],
                np.clip(np.log((f.seconds + tiny) / (s_cur[:, None] + tiny)), -5.0, 5.0),
                (load[None, :] - load[cur][:, None]) / peak,
            ],
            axis=2,
        )
        return psi, phi

    def _distributions(self, cur: np.ndarray, psi: np.ndarray, phi: np.ndarray):
        """(p(c) [L], p(d | c) [L, D]) of the model alone (no exploration)."""
        L, D = self.allowed.shape
        can = self.allowed & (np.arange(D)[None] != cur[:, None])
        pc = _softmax(np.where(self.movable, self.b + psi @ self.wc, -np.inf))
        pd = _softmax(np.where(can, self.B + phi @ self.wd, -np.inf), axis=1)
        return pc, np.nan_to_num(pd)

    def sample(self, rng: np.random.Generator, cur: np.ndarray, k: int) -> np.ndarray:
        """[k, L] neighbours of `cur`, each moving one class drawn from the mixture."""
        psi, phi = self.features(cur)
        pc, pd = self._distributions(cur, psi, phi)
        D = self.allowed.shape[1]
        can = self.allowed & (np.arange(D)[None] != cur[:, None])
        uc = self.movable / self.movable.sum()
        ud = can / np.maximum(can.sum(axis=1, keepdims=True), 1)
        mc = (1 - self.explore) * pc + self.explore * uc
        md = (1 - self.explore) * pd + self.explore * ud
        which = rng.choice(len(mc), size=k, p=mc / mc.sum())
        cdf = np.cumsum(md[which], axis=1)
        dev = np.minimum((rng.random(k)[:, None] * cdf[:, -1:] > cdf).sum(axis=1), D - 1)
        cand = np.repeat(cur[None], k, axis=0)
        cand[np.arange(k), which] = dev
        self._last = (cur.copy(), which, dev, psi, phi, pc, pd)
        return cand

    def learn(self, cur: np.ndarray, cand: np.ndarray, improved: np.ndarray) -> None:
        """One cross-entropy step on the moves of the last `sample` that made the placement faster.

        Args:
          cur: [L] the placement they moved from.
          cand: [k, L] the neighbours measured (a prefix of the last sample's).
          improved: [k] bool, measured faster than `cur`.
        """
        if self._last is None or not np.array_equal(self._last[0], cur) or not improved.any():
            return
        _, which, dev, psi, phi, pc, pd = self._last
        idx = np.flatnonzero(improved[: len(which)])
        for i in idx:
            c, d = which[i], dev[i]
            gb = -pc.copy()
            gb[c] += 1.0
            self.b += self.rate * gb
            self.wc += self.feature_rate * (psi[c] - pc @ psi)
            gB = -pd[c].copy()
            gB[d] += 1.0
            self.B[c] += self.rate * gB
            self.wd += self.feature_rate * (phi[c, d] - pd[c] @ phi[c])
        for w in (self.b, self.B, self.wc, self.wd):
            np.clip(w, -5.0, 5.0, out=w)

    def state(self) -> dict:
        return {"b": self.b.tolist(), "B": self.B.tolist(), "wc": self.wc.tolist(), "wd": self.wd.tolist()}

    def load_state(self, state: dict) -> None:
        for key in ("b", "B", "wc", "wd"):
            setattr(self, key, np.asarray(state[key], np.float64))

    def load_shared(self, state: dict) -> None:
        """Starts from another search's feature weights (any graph); the per-class logits stay zero.

        Raises:
          InputError: the state holds no feature weights of this model's size.
        """
        try:
            wc, wd = np.asarray(state["wc"], np.float64), np.asarray(state["wd"], np.float64)
        except (KeyError, TypeError, ValueError):
            raise InputError("init_from: the learner's state holds no learned_moves feature weights") from None
        if wc.shape != self.wc.shape or wd.shape != self.wd.shape:
            raise InputError(f"init_from: feature weights of shape {wc.shape}, {wd.shape}; expected {self.wc.shape}")
        self.wc, self.wd = wc, wd


class StepTimeModel:
    """A ridge regression of measured step time on features of a placement, refitted as measurements arrive.

    Features (each standardised): the compute seconds of every device, the largest,
    the cross-device bytes over a typical link's bandwidth, the largest and the
    summed per-device compute-plus-transfer seconds, and their sum of squares over
    their sum (larger when the devices are unevenly loaded).

    Args:
      space, problem, cluster: as for MoveModel.
      window: the most recent measured placements it is fitted to (our choice).
      ridge: the L2 penalty on the standardised weights (our choice).
    """

    def __init__(self, space: Space, problem, cluster: Cluster, window: int = 2048, ridge: float = 1e-3):
        self.facts = ClassFacts(space, problem, cluster)
        self.window, self.ridge = int(window), float(ridge)
        self.X = np.zeros((0, cluster.num_devices + 5))
        self.t = np.zeros(0)
        self.w = None

    @property
    def fitted(self) -> bool:
        return self.w is not None

    def features(self, placements: np.ndarray) -> np.ndarray:
        """[M, F] the features of `placements` [M, L]."""
        f = self.facts
        loads = f.loads(placements)
        traffic, cross = f.traffic(placements)
        busy = loads + traffic / f.bandwidth
        spread = (busy**2).sum(1, keepdims=True) / (busy.sum(1, keepdims=True) + 1e-12)  # high when unbalanced
        return np.concatenate([loads, loads.max(1, keepdims=True), cross[:, None] / f.bandwidth,
                               busy.max(1, keepdims=True), busy.sum(1, keepdims=True), spread], axis=1)  # fmt: skip

    def add(self, placements: np.ndarray, times: np.ndarray) -> None:
        """Adds measured placements [M, L] and their step times [M] (s; inf = failed, left out) and refits."""
        ok = np.isfinite(times)
        if not ok.any():
            return
        self.X = np.concatenate([self.X, self.features(placements[ok])])[-self.window :]
        self.t = np.concatenate([self.t, times[ok]])[-self.window :]
        self._fit()

    def _fit(self) -> None:
        n, f = self.X.shape
        if n < 2 * f:
            return
        self.mu, self.sd = self.X.mean(0), self.X.std(0) + 1e-12
        Z = (self.X - self.mu) / self.sd
        self.t0 = self.t.mean()
        self.w = np.linalg.solve(Z.T @ Z + self.ridge * n * np.eye(f), Z.T @ (self.t - self.t0))

    def predict(self, placements: np.ndarray) -> np.ndarray:
        """[M] predicted step times (s) of `placements` [M, L]."""
        return self.t0 + ((self.features(placements) - self.mu) / self.sd) @ self.w

    def state(self) -> dict:
        return {"X": self.X.tolist(), "t": self.t.tolist()}

    def load_state(self, state: dict) -> None:
        self.X = np.asarray(state["X"], np.float64).reshape(-1, self.X.shape[1])
        self.t = np.asarray(state["t"], np.float64)
        self._fit()


def _softmax(logits: np.ndarray, axis: int = -1) -> np.ndarray:
    z = logits - np.max(np.where(np.isfinite(logits), logits, -np.inf), axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)
