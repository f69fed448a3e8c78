"""Disjoint sets: merges by hand, and the root that names a merged set."""

from placer.core.disjoint import DisjointSets


def test_union_keeps_the_root_of_its_first_argument():
    s = DisjointSets(["a", "b", "c", "d"])
    assert s.union("a", "b") == ("a", "b")
    assert s.union("c", "b") == ("c", "a")  # b's set (root a) joins c's
    assert s.union("a", "c") is None  # already one set
    assert {s.find(x) for x in "abc"} == {"c"} and s.find("d") == "d"


def test_find_adds_a_new_item_as_its_own_set():
    s = DisjointSets()
    assert "x" not in s
    assert s.find("x") == "x" and "x" in s
    s.add("x")
    assert s.find("x") == "x"
