"""This machine's memory for --cluster=local: read, or refused; never guessed."""

import builtins
import os

import pytest

from graphs import local_cluster
from placer.core.errors import InputError


def test_memory_is_read_from_meminfo(monkeypatch, tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 100 kB\nMemAvailable: 48 kB\n")
    real_open = builtins.open
    monkeypatch.setattr(builtins, "open", lambda p, *a, **k: real_open(meminfo if p == "/proc/meminfo" else p, *a, **k))
    assert local_cluster.available_memory_bytes() == 48 * 1024


def test_unreadable_memory_is_refused_in_one_line(monkeypatch):
    real_open = builtins.open

    def no_meminfo(p, *a, **k):
        if p == "/proc/meminfo":
            raise OSError("no such file")
        return real_open(p, *a, **k)

    def no_sysconf(name):
        raise ValueError(name)

    monkeypatch.setattr(builtins, "open", no_meminfo)
    monkeypatch.setattr(os, "sysconf", no_sysconf)
    with pytest.raises(InputError, match="cannot read this machine's available memory") as e:
        local_cluster.available_memory_bytes()
    assert "\n" not in str(e.value)


def test_local_n_is_n_logical_cpus_and_bad_n_is_refused():
    from placer.core import cluster as cluster_lib

    three = local_cluster.load("local:3")
    assert [d.name for d in three.devices if d.type == "CPU"] == [f"/device:CPU:{i}" for i in range(3)]
    assert cluster_lib.local_cpus("local") is None and cluster_lib.local_cpus("local:2") == 2
    for bad in ("local:0", "local:x", "local:"):
        with pytest.raises(InputError, match="a local cluster is 'local' or 'local:N'"):
            local_cluster.load(bad)
