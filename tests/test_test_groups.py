"""`make test` keeps each test group on one worker (tests/conftest.py): one Ray cluster, module fixtures built once."""

import pytest


def test_under_loadgroup_a_tests_id_carries_its_group(request):
    # pytest-xdist's --dist loadgroup sends tests to workers by the group tag at the end of their id; a pytest
    # that keeps ids where xdist cannot tag them (9.2) splits every group, and two Ray clusters run at once.
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("only under --dist loadgroup (make test)")
    assert request.node.nodeid.endswith("@tests/test_test_groups.py"), (
        f"{request.node.nodeid!r} has no group tag: install the pytest that setup.py pins (pip install -e .[test])"
    )
