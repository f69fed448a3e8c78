"""What TensorFlow's op names say about an op (no TensorFlow): gradient and optimizer-update ops.

Shared by the grouping (gradient ops join their forward op) and the expert
placement (gradient ops go where their forward op went).
"""

from __future__ import annotations

import re

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
