"""Helpers shared by the absl binaries: expected errors become one line and exit 2."""

from __future__ import annotations

import sys
from collections.abc import Callable

from placer.core.errors import InputError, one_line


def run_main(main: Callable[[list[str]], None]) -> None:
    """Runs an absl `main`, turning InputError into one stderr line and exit status 2."""
    from absl import app, flags  # noqa: PLC0415

    # TF's checkpointing logs at INFO through absl; show warnings and up unless --verbosity asks.
    flags.FLAGS.set_default("verbosity", -1)
    started = []

    def wrapped(argv):
        started.append(True)
        try:
            main(argv)
        except InputError as e:
            print(f"error: {e}", file=sys.stderr)
            sys.exit(2)

    try:
        app.run(wrapped)
    except InputError as e:  # raised while absl parsed flags (config files)
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except Exception as e:  # a config file that fails to load while flags are parsed
        if started:
            raise
        print(f"error: bad flag or config file: {one_line(e)}", file=sys.stderr)
        sys.exit(2)


def config_error(flag_name: str, exc: BaseException) -> InputError:
    """Wraps a config-file load failure into an InputError naming the flag."""
    return InputError(f"--{flag_name}: {exc}")


def config_or_default(config, graph_path: str | None):
    """The --config given, or the shared defaults when only --graph was given.

    Raises:
      InputError: neither --config nor --graph was given.
    """
    if config is not None:
        return config
    if graph_path is None:
        raise InputError("give --config=configs/MODEL.py or --graph=FILE")
    import ml_collections  # noqa: PLC0415

    from configs import common  # noqa: PLC0415

    return common.attach(ml_collections.ConfigDict())


def load_cluster(spec: str):
    """Loads --cluster: a file, a preset, or "local"; TensorFlow is imported only for "local".

    Raises:
      InputError: as placer.core.cluster.load.
    """
    if spec == "local":
        from graphs import local_cluster  # noqa: PLC0415 (TF, only for this process's devices)

        return local_cluster.discover()
    from placer.core import cluster as cluster_lib  # noqa: PLC0415

    return cluster_lib.load(spec)
