"""Helpers shared by the absl binaries: expected errors become one line and exit 2."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from placer.core.errors import InputError, one_line


def run_main(main: Callable[[list[str]], None]) -> None:
    """Runs an absl `main`, turning InputError into one stderr line and exit status 2.

    Bad flag values (an enum value not offered, a number under its bound, a
    config file that is missing or fails to load) are one line and exit
    status 2 as well, before any work starts.
    """
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
        app.run(wrapped, flags_parser=parse_flags)
    except InputError as e:  # raised while absl parsed flags (config files)
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except Exception as e:  # a config file that fails to load while flags are parsed
        if started:
            raise
        print(f"error: bad flag or config file: {one_line(e)}", file=sys.stderr)
        sys.exit(2)


def parse_flags(argv: list[str]) -> list[str]:
    """absl's flag parsing, with every bad value one line on stderr and exit status 2.

    Config-file flags (ml_collections) defer a failed load until first use;
    they are loaded here, so a missing file or a bad variant is reported now.
    """
    from absl import flags  # noqa: PLC0415
    from ml_collections.config_flags import config_flags  # noqa: PLC0415

    try:
        rest = flags.FLAGS(argv)
    except flags.Error as e:
        _fail(_flag_error(str(e)))
    for name in list(flags.FLAGS):
        flag = flags.FLAGS[name]
        if flag.name != name or not flag.present or not isinstance(flag.parser, config_flags.ConfigFileFlagParser):
            continue
        try:
            "model" in flag.value  # noqa: B015  (a config that failed to load raises here)
        except Exception as e:  # noqa: BLE001 (any failure of a user's config file is bad input)
            path = str(flag.serialize()).partition("=")[2].partition(":")[0]
            if path and not os.path.exists(path):
                _fail(f"--{name}: {path}: no such config file")
            _fail(f"--{name}: {one_line(e)}")
    return rest


def _flag_error(text: str) -> str:
    """absl's message for a bad flag on one line; a config file's traceback cut to its last line."""
    if "Traceback (most recent call last)" in text:
        head = text.split("Traceback")[0].rstrip(": \n")
        last = text.strip().splitlines()[-1].strip()
        kind, sep, message = last.partition(": ")
        last = message if sep and kind.replace(".", "").replace("_", "").isalnum() else last
        text = f"{head}: {last}"
    return " ".join(text.split())


def _fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
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
