"""Helpers shared by the absl binaries: expected errors become one line and exit 2.

Every binary starts in `run_main`, which also keeps TensorFlow quiet unless
`--verbosity` (`-v`) of 0 or more asks for its logs: TF's C++ log level is
set before TF is first imported, and the lines its libraries print while they
load (before absl's C++ logging is initialised, so no log level reaches them)
are discarded.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import logging
import os
import re
import sys
import warnings
from collections.abc import Callable

from absl import flags

from placer.core import atomic, checks, locks, printable, stop
from placer.core.errors import InputError, RunStopped, one_line

# Shared by every binary: the cap on one JSON input's text after gzip (placer/core/checks.py).
_MAX_INPUT_MIB = flags.DEFINE_integer(
    "max_input_mib",
    checks.DEFAULT_MAX_INPUT_MIB,
    "Largest JSON text one input file (graph, cluster, placement) may hold after gzip, in MiB; a file over it "
    "is refused before it is read whole.",
    lower_bound=1,
)

# Shared by every binary: the caps on the counts an input may hold (placer/core/checks.py, docs/limits.md).
_MAX_COUNTS = {
    kind: flags.DEFINE_integer(
        f"max_{kind}", default, f"Most {what} an input may hold; more is refused at once.", lower_bound=1
    )
    for kind, default, what in (
        ("ops", checks.DEFAULT_CAPS["ops"], "ops a graph"),
        ("devices", checks.DEFAULT_CAPS["devices"], "devices a cluster"),
        ("rows", checks.DEFAULT_CAPS["rows"], "rows a trace CSV"),
        ("jobs", checks.DEFAULT_CAPS["jobs"], "jobs a trace or jobs file"),
    )
}


HELP_FLAGS = ("-h", "--help", "--helpshort", "--helpfull", "--helpxml", "-?")


def verbosity_asked(argv: list[str]) -> bool:
    """True when the command line sets absl's --verbosity (or -v) to 0 (info) or more."""
    value = None
    for i, arg in enumerate(argv[1:], start=1):
        m = re.fullmatch(r"--?(?:verbosity|v)(?:=(.*))?", arg)
        if m:
            value = m.group(1) if m.group(1) is not None else (argv[i + 1] if i + 1 < len(argv) else None)
    try:
        return value is not None and int(value) >= 0
    except ValueError:
        return False


@contextlib.contextmanager
def _stderr_discarded():
    """Points file descriptor 2 at /dev/null for the duration (native libraries write there)."""
    sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    os.close(null)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


class _QuietLoader(importlib.abc.Loader):
    """Runs a package's own loader with stderr discarded, then keeps TF's Python logger to errors.

    TF's deprecation notices (about TF's and Keras's own internals, which a
    user of this toolkit cannot act on) go through the "tensorflow" logger at
    WARNING.
    """

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        with _stderr_discarded():
            self._loader.exec_module(module)
        logging.getLogger("tensorflow").setLevel(logging.ERROR)


class _QuietTensorFlowImport(importlib.abc.MetaPathFinder):
    """Finds `tensorflow` as usual, but imports it with stderr discarded."""

    def find_spec(self, name, path, target=None):
        if name != "tensorflow":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _QuietLoader(spec.loader)
        return spec


def quiet_tensorflow(argv: list[str]) -> None:
    """Keeps TensorFlow's C++ logs off unless `argv` sets --verbosity to 0 or more.

    Must run before TensorFlow is first imported. A TF_CPP_MIN_LOG_LEVEL the
    user set is kept.
    """
    if verbosity_asked(argv) or "tensorflow" in sys.modules:
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    # tf_keras warns of its own deprecated APIs that TF itself calls (`tf.keras.backend...`).
    warnings.filterwarnings("ignore", message=r"`tf\.keras\.", category=UserWarning)
    if not any(isinstance(f, _QuietTensorFlowImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _QuietTensorFlowImport())


def own_flags_in_help(main: Callable) -> None:
    """Makes absl's --help list the flags of `main`'s module and print its docstring.

    absl's --help lists the flags of the module named by sys.argv[0]; an
    installed console script (placer-train) is not that module.
    """
    module = sys.modules.get(main.__module__)
    if module is None or main.__module__ == "__main__":
        return
    by_module = flags.FLAGS.flags_by_module_dict()
    for flag in [*by_module.get(main.__module__, []), *by_module.get(__name__, [])]:
        flags.FLAGS.register_key_flag_for_module(sys.argv[0], flag)
    entry = sys.modules.get("__main__")
    if entry is not None and module.__doc__:
        entry.__doc__ = module.__doc__


def run_main(main: Callable[[list[str]], None]) -> None:
    """Runs an absl `main`, turning InputError into one stderr line and exit status 2
    (RunStopped: one line and exit status 1).

    Bad flag values (an enum value not offered, a number under its bound, a
    config file that is missing or fails to load) are one line and exit
    status 2 as well, before any work starts. Everything printed has its
    control characters escaped (placer/core/printable.py), and workdir locks
    are released on the way out.
    """
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = printable.EscapingStream(sys.stdout), printable.EscapingStream(sys.stderr)
    try:
        _run_main(main)
    finally:
        sys.stdout, sys.stderr = saved
        locks.release_all()


def _run_main(main: Callable[[list[str]], None]) -> None:
    from absl import app  # noqa: PLC0415
    from absl import logging as absl_logging  # noqa: PLC0415

    quiet_tensorflow(sys.argv)
    own_flags_in_help(main)
    started = []

    def wrapped(argv):
        started.append(True)
        if not verbosity_asked(sys.argv):
            # absl raises an unset --verbosity to INFO once flags are parsed; TF's checkpointing
            # logs at INFO through absl, so keep warnings and up unless --verbosity asks.
            absl_logging.set_verbosity(absl_logging.WARNING)
        try:
            checks.set_max_input_bytes(_MAX_INPUT_MIB.value << 20)
            for kind, flag in _MAX_COUNTS.items():
                checks.set_cap(kind, flag.value)
            main(argv)
        except InputError as e:
            _fail(str(e))
        except OSError as e:  # a full disk or quota met outside the atomic writes (a folder, a log)
            full = atomic.full_disk_error(e.filename or "an output", e)
            if full is None:
                raise
            _fail(full)
        except stop.Stopped as e:
            print(stop.stopped_line(e.step), file=sys.stderr)
            sys.exit(e.exit_code)
        except KeyboardInterrupt:  # Ctrl-C outside a loop that stops at the end of its step
            print("interrupted", file=sys.stderr)
            sys.exit(130)
        except RunStopped as e:
            print(f"error: {e}", file=sys.stderr)
            sys.exit(1)
        finally:
            checks.reset_caps()

    try:
        app.run(wrapped, flags_parser=parse_flags)
    except InputError as e:  # raised while absl parsed flags (config files)
        _fail(str(e))
    except Exception as e:  # a config file that fails to load while flags are parsed
        if started:
            raise
        _fail(f"bad flag or config file: {one_line(e)}")


def parse_flags(argv: list[str]) -> list[str]:
    """absl's flag parsing, with every bad value one line on stderr and exit status 2.

    Config-file flags (ml_collections) defer a failed load until first use;
    they are loaded here, so a missing file or a bad variant is reported now.
    """
    from ml_collections.config_flags import config_flags  # noqa: PLC0415

    argv = resolve_config_args(argv)
    words = argv[: argv.index("--")] if "--" in argv else argv
    if "-h" in words:
        argv = ["--help" if a == "-h" else a for a in words] + argv[len(words) :]
    try:
        rest = flags.FLAGS(argv)
    except flags.Error as e:
        _fail(_flag_error(str(e)))
    except SystemExit as e:  # absl exits 1 after printing the help a user asked for
        if e.code == 1 and any(a.split("=")[0] in HELP_FLAGS for a in words):
            sys.exit(0)
        raise
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


def resolve_config_args(argv: list[str]) -> list[str]:
    """`argv` with every config-file flag's path resolved (placer.core.configs_util.resolve).

    Config files given as `configs/...` name the installed ones when the
    current folder has no such file, so the README's commands run from any
    folder.
    """
    from absl import flags  # noqa: PLC0415
    from ml_collections.config_flags import config_flags  # noqa: PLC0415

    from placer.core import configs_util  # noqa: PLC0415

    names = {
        f"--{name}"
        for name in list(flags.FLAGS)
        if isinstance(flags.FLAGS[name].parser, config_flags.ConfigFileFlagParser)
    }
    out = list(argv)
    for i, arg in enumerate(out):
        if arg == "--":
            break
        key, eq, value = arg.partition("=")
        if key in names and eq:
            out[i] = f"{key}={configs_util.resolve_spec(value)}"
        elif arg in names and i + 1 < len(out):
            out[i + 1] = configs_util.resolve_spec(out[i + 1])
    return out


def exit_if_stopped(request: stop.StopRequest, step: int) -> None:
    """After a run that a signal stopped (and that saved its state): the one line and exit 130/143."""
    if request.signum is not None:
        raise stop.Stopped(step, request.exit_code)


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


def config_file(holder) -> str | None:
    """The file a config flag (a FlagHolder) names, without its ":variant", or None when not given."""
    flag = flags.FLAGS[holder.name]
    if not flag.present:
        return None
    return str(flag.serialize()).partition("=")[2].partition(":")[0] or None


def config_or_default(config, graph_path: str | None):
    """The config to train with: --config, or configs/common.py's defaults (no model) for --graph.

    Args:
      config: the parsed --config (its default is configs/common.py, so that
        `--config.placer...` overrides work without --config), or None.
      graph_path: --graph, or None.

    Raises:
      InputError: no model config and no --graph.
    """
    if config is None:
        from configs import common  # noqa: PLC0415

        config = common.get_config()
    if graph_path is None and "model" not in config:
        raise InputError("give --config=configs/MODEL.py or --graph=FILE")
    return config


def load_cluster(spec: str):
    """Loads --cluster: a file, a preset, "local" or "local:N"; TensorFlow is imported only for these two.

    Raises:
      InputError: as placer.core.cluster.load.
    """
    from placer.core import cluster as cluster_lib  # noqa: PLC0415

    if cluster_lib.is_local(spec):
        from graphs import local_cluster  # noqa: PLC0415 (TF, only for this process's devices)

        return local_cluster.load(spec)
    return cluster_lib.load(spec)
