"""bench/dispatch.py's section (bench/dispatch_constants.py) says whether the figures it measured are the CPU constants the library uses."""

from bench import dispatch_constants
from placer.core import cluster


def test_the_section_says_whether_its_figures_are_the_library_constants():
    same = dispatch_constants.constants_line(cluster.LOCAL_CPU_DISPATCH, cluster.LOCAL_CPU_TRANSFER_COST)
    assert same.startswith("These figures are the CPU `dispatch`")
    # The constants are written to 3 significant figures: a run within that rounding is still them.
    assert (
        dispatch_constants.constants_line(cluster.LOCAL_CPU_DISPATCH, cluster.LOCAL_CPU_TRANSFER_COST * 1.0002) == same
    )
    other = dispatch_constants.constants_line(cluster.LOCAL_CPU_DISPATCH * 2 / 3, cluster.LOCAL_CPU_TRANSFER_COST)
    assert other.startswith("These figures are not the CPU `dispatch`")
    assert (
        f"those are {cluster.LOCAL_CPU_DISPATCH * 1e9:.0f} ns and {cluster.LOCAL_CPU_TRANSFER_COST * 1e9:.0f} ns"
        in other
    )
