"""What TensorFlow's op names say about an op (no TensorFlow): gradient and update ops, scopes.

Shared by the grouping (gradient ops join their forward op; with a scope
depth, ops of different scopes never share a group) and the expert placement
(gradient ops go where their forward op went).
"""

from __future__ import annotations

import re

import numpy as np

# TF names the ops of tf.gradients "gradients[_k]/<forward op>_grad/...".
GRADIENT_SCOPE = re.compile(r"^gradients(?:_\d+)?/")


def is_gradient(name: str) -> bool:
    """Whether `name` lies in a tf.gradients scope."""
    return bool(GRADIENT_SCOPE.match(name))


def forward_op_for(name: str, index: dict[str, int]) -> int | None:
    """Finds the forward op a gradient or optimizer-update op belongs to, by name.

    "gradients/enc/MatMul_grad/MatMul_1" -> "enc/MatMul" (TF names gradient ops
    "gradients[_k]/<forward op>_grad/..."); "Adam/update_enc/w/ResourceApplyAdam"
    -> "enc/w" (TF's optimizers name update ops "<opt>/update_<variable>/...").
    The longest matching prefix wins; gradient ops never match.

    Args:
      name: the op's name.
      index: op name -> op index.

    Returns:
      The forward op's index, or None when the name matches no op.
    """
    m = GRADIENT_SCOPE.match(name)
    if m:
        parts = name[m.end() :].split("/")
    else:
        pos = name.find("/update_")
        if pos < 0 and not name.startswith("update_"):
            return None
        rest = name[pos + 1 :] if pos >= 0 else name
        parts = rest[len("update_") :].split("/")
    # The last part is the op's own name inside the gradient/update scope.
    for k in range(len(parts) - 1, 0, -1):
        cand = "/".join(parts[:k])
        for c in (cand[:-5], cand) if cand.endswith("_grad") else (cand,):
            i = index.get(c)
            if i is not None and not GRADIENT_SCOPE.match(c):
                return i
    return None


_UPDATE_SCOPE = re.compile(r"^(?:[^/]+/)?update_")


def scope_of(name: str, depth: int) -> str:
    """The first `depth` name scopes of the op, or of the op it differentiates or updates.

    A gradient op counts in the scope of its forward op and an update op in
    that of its variable: "gradients/encoder/layer_0/t_3/MatMul_grad/MatMul"
    (forward op "encoder/layer_0/t_3/MatMul") and
    "SGD/update_encoder/layer_0/kernel/ResourceApplyGradientDescent" (variable
    "encoder/layer_0/kernel") both give "encoder/layer_0" at depth 2. An op's
    own name is never part of its scope; "" for an op outside any scope.

    Args:
      name: the op's name.
      depth: how many leading scopes to keep (at least 1).
    """
    parts = name.split("/")
    if GRADIENT_SCOPE.match(name):
        parts = parts[1:]
        grad = next((k for k, p in enumerate(parts[:-1]) if p.endswith("_grad")), None)
        parts = parts[: grad + 1] if grad is not None else parts  # up to the forward op's own name
    elif _UPDATE_SCOPE.match(name):
        parts = _UPDATE_SCOPE.sub("", name, count=1).split("/")[:-1]  # the variable's name
    return "/".join(parts[:-1][:depth])


def scope_colors(graph, depth: int) -> np.ndarray:
    """[n_ops] a colour per name scope at `depth` (`scope_of`); -1 outside any scope.

    Keeping scopes apart keeps a model's structure expressible group by group:
    the NMT encoder's two layers stay separate groups however far coarsening
    goes, so a placement can put one layer per GPU (our choice; the scopes are
    TF's, as the model builder named them). The ops of one colocation set
    take the colour of its first op, so that colocated ops may still merge.

    Args:
      graph: an OpGraph (its names and colocation keys are read).
      depth: scope depth (at least 1).

    Returns:
      [n_ops] int64 colours, numbered by sorted scope name.
    """
    labels = [scope_of(n, depth) for n in graph.names.tolist()]
    ids = {s: i for i, s in enumerate(sorted(set(labels) - {""}))}
    colors = np.array([ids.get(s, -1) for s in labels], dtype=np.int64)
    first: dict[str, int] = {}
    for i, key in enumerate(graph.colocation.tolist()):
        if key:
            colors[i] = colors[first.setdefault(key, i)]
    return colors


def combine_colors(a: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    """One colour per distinct pair of colours (-1 where both are -1); `a` itself when `b` is None."""
    if b is None:
        return a
    pairs = np.stack([a, np.asarray(b, dtype=np.int64)], axis=1)
    _, ids = np.unique(pairs, axis=0, return_inverse=True)
    return np.where((pairs < 0).all(axis=1), -1, ids.reshape(-1))
