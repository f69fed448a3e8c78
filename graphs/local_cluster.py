"""The devices of this machine as a Cluster (for the session backend).

On a CPU-only machine a placement study needs several devices: this module
can split the CPU into N logical CPU devices. Two TF mechanisms exist and both
are set by `configure_logical_cpus`:

  * the eager context's logical devices (`tf.config.set_logical_device_configuration`),
    which TF fixes when it first initialises its devices, so the call must
    come before any TF device use in the process (a later call raises
    RuntimeError); tf.function code sees these devices;
  * `ConfigProto.device_count["CPU"]`, which is what a `tf.compat.v1.Session`
    uses (in TF 2.21 a Session ignores the eager logical configuration);
    `discover` and placer/measure/session.py pass it, so sessions get the
    same N devices at any time.

Memory: a GPU reports its own limit; logical CPU devices share the
machine's RAM (MemAvailable in /proc/meminfo, else the available pages that
sysconf reports), each given an equal share. When neither can be read,
`--cluster=local` is refused rather than given a guessed size.
"""

from __future__ import annotations

import os

import tensorflow as tf
from tensorflow.python.client import device_lib

from placer.core import cluster as cluster_lib
from placer.core.errors import InputError

_num_cpus = 1
# TF's default link for the local machine: a memcpy, about 10 GB/s.
LOCAL_BANDWIDTH = 1e10


def configure_logical_cpus(n: int) -> None:
    """Splits the CPU into `n` logical devices "/device:CPU:0".."/device:CPU:n-1".

    Call before TF initialises its devices (before any op runs or device is
    listed in this process).

    Raises:
      RuntimeError: TF already initialised its devices with another count.
    """
    global _num_cpus
    n = int(n)
    if n < 1:
        raise ValueError(f"configure_logical_cpus: need at least 1 device, got {n}")
    cpus = tf.config.list_physical_devices("CPU")
    current = tf.config.get_logical_device_configuration(cpus[0])
    if current is None or len(current) != n:
        try:
            tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * n)
        except RuntimeError as e:
            raise RuntimeError(
                f"configure_logical_cpus({n}) must run before TensorFlow initialises its devices: {e}"
            ) from None
    _num_cpus = n


def available_memory_bytes() -> int:
    """MemAvailable from /proc/meminfo in bytes (psutil-free), else sysconf's available pages.

    Raises:
      InputError: neither source can be read.
    """
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    except (ValueError, OSError):
        raise InputError(
            "--cluster=local: cannot read this machine's available memory (/proc/meminfo, sysconf); "
            "give a cluster file with each device's memory_bytes instead"
        ) from None


def discover(num_cpus: int | None = None) -> cluster_lib.Cluster:
    """Returns the devices this process has: CPUs first, then GPUs.

    Args:
      num_cpus: CPU devices to report; default the count set by
        `configure_logical_cpus` (1 if never called).

    Returns:
      A Cluster named "local" with speed 1 devices and a uniform link; CPUs
      carry the dispatch and transfer costs bench/dispatch.py measured, GPUs
      the published dispatch (placer.core.cluster); the devices share one
      executor thread when this process runs TF with one inter-op thread.
    """
    n = _num_cpus if num_cpus is None else int(num_cpus)
    config = tf.compat.v1.ConfigProto()
    config.device_count["CPU"] = n
    local = device_lib.list_local_devices(config)
    cpu_share = max(available_memory_bytes() // max(n, 1), 1)
    devices = []
    for d in sorted(local, key=lambda d: (d.device_type != "CPU", d.device_type, int(d.name.rsplit(":", 1)[1]))):
        if d.device_type not in ("CPU", "GPU"):
            continue
        name = d.name.split("/device:")[-1]
        memory = cpu_share if d.device_type == "CPU" else int(d.memory_limit)
        cpu = d.device_type == "CPU"
        devices.append(
            cluster_lib.Device(
                name=f"/device:{name}",
                type=d.device_type,
                memory_bytes=memory,
                dispatch=cluster_lib.LOCAL_CPU_DISPATCH if cpu else cluster_lib.GPU_DISPATCH,
                transfer_cost=cluster_lib.LOCAL_CPU_TRANSFER_COST if cpu else 0.0,
            )
        )
    return cluster_lib.make("local", devices, bandwidth=LOCAL_BANDWIDTH, serial_executor=one_inter_op_thread())


def one_inter_op_thread() -> bool:
    """True when this process's TF sessions get one inter-op thread (TF_NUM_INTEROP_THREADS or tf.config)."""
    return (
        os.environ.get("TF_NUM_INTEROP_THREADS") == "1" or tf.config.threading.get_inter_op_parallelism_threads() == 1
    )


def load(spec: str) -> cluster_lib.Cluster:
    """Loads a cluster by file path, preset name, "local" (this process's devices) or
    "local:N" (this machine with N logical CPU devices, whatever this process configured).

    Raises:
      InputError: as placer.core.cluster.load and placer.core.cluster.local_cpus.
    """
    return discover(cluster_lib.local_cpus(spec)) if cluster_lib.is_local(spec) else cluster_lib.load(spec)
