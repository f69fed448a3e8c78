"""The graph fingerprint: the hash of names, types and edges, computed once per graph."""

import hashlib

import numpy as np

from placer.core.op_graph import OpGraph


def two_ops(second_type: str = "T") -> OpGraph:
    return OpGraph.create("g", ["a", "b"], ["T", second_type], [("a", "b")], device_types=("GPU",))


def test_hash_of_names_types_and_edges():
    # Worked out by hand: "a" NUL "T" SOH "b" NUL "T" SOH, then the edge a(0) -> b(1) as little-endian
    # int32 source and destination, then its control flag (0).
    expect = hashlib.sha256(
        b"a\x00T\x01b\x00T\x01" + np.array([0], "<i4").tobytes() + np.array([1], "<i4").tobytes() + b"\x00"
    ).hexdigest()[:16]
    g = two_ops()
    assert g.fingerprint() == expect
    assert g.fingerprint() == expect  # the cached value, the same


def test_type_changes_it_and_the_cache_is_per_graph():
    g, h = two_ops(), two_ops("U")
    assert g.fingerprint() != h.fingerprint()
    assert two_ops().fingerprint() == g.fingerprint()
