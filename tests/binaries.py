"""Runs a binary's `run()` in this process, the way its console script does.

`run` takes the arguments of tests.cli.run_module and returns the same kind
of result; tests of flags, refusals and exit statuses use it, and keep a
fresh process for what needs one (kill -9, signals, resource limits, what
TensorFlow prints when it is first imported).

Every binary defines its absl flags on import, in the one global
`flags.FLAGS`, and several share names (--config, --workdir, --seed), so two
binaries cannot simply be imported side by side. `run` takes the project's
flags out of FLAGS, imports the binary afresh (its flags defined anew, at
their defaults), runs it with `sys.argv` set as a shell would set it, and
puts FLAGS back as it was, so that every call starts from a clean slate.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import subprocess
import sys
import tempfile

from absl import app, flags
from absl import logging as _absl_logging  # noqa: F401  (defines --verbosity and the other logging flags now)

import placer.cli  # noqa: F401  (defines the flags every binary shares, before any call takes a snapshot)
from tests.cli import ROOT

# absl.app defines its flags on import and --help and its kin on the first app.run: define them all now,
# outside any isolated block, so that they stay.
app.define_help_flags()

# FlagValues keeps its state in these entries of its __dict__ (absl/flags/_flagvalues.py).
_STATE = ("__flags", "__hiddenflags", "__flags_by_module", "__flags_by_module_id", "__key_flags_by_module")
_STATUS = ("__flags_parsed", "__unparse_flags_called")


def _copy(value):
    if isinstance(value, dict):
        return {k: list(v) if isinstance(v, list) else v for k, v in value.items()}
    return set(value)


@contextlib.contextmanager
def isolated_flags():
    """Within the block FLAGS holds only absl's own flags, unparsed; afterwards it is as before."""
    fv = flags.FLAGS
    state = {key: _copy(fv.__dict__[key]) for key in _STATE}
    status = {key: fv.__dict__[key] for key in _STATUS}
    values = {id(flag): (flag, dict(flag.__dict__)) for flag in fv._flags().values()}
    argv = list(sys.argv)
    for name in list(fv):
        module = fv.find_module_defining_flag(name)
        if module is None or not (module.startswith("absl") or module == "placer.cli"):  # placer.cli's: every binary's
            delattr(fv, name)
    fv.unparse_flags()
    try:
        yield
    finally:
        sys.argv[:] = argv
        for key, value in state.items():
            fv.__dict__[key] = value
        fv.__dict__.update(status)
        for flag, saved in values.values():
            flag.__dict__.clear()
            flag.__dict__.update(saved)


@contextlib.contextmanager
def _captured(result: dict):
    """Sends file descriptors 1 and 2 and sys.stdout/sys.stderr to files; puts their text in `result`."""
    files = {"out": tempfile.TemporaryFile(), "err": tempfile.TemporaryFile()}
    streams = sys.stdout, sys.stderr
    for stream in streams:
        stream.flush()
    saved = os.dup(1), os.dup(2)
    os.dup2(files["out"].fileno(), 1)
    os.dup2(files["err"].fileno(), 2)
    sys.stdout, sys.stderr = (open(fd, "w", closefd=False, errors="backslashreplace") for fd in (1, 2))  # noqa: SIM115
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.close()
        sys.stdout, sys.stderr = streams
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)
        for key, f in files.items():
            f.seek(0)
            result[key] = f.read().decode(errors="backslashreplace")
            f.close()


def run(module_name: str, *args: str, cwd: str = ROOT, timeout: float | None = None, program: str | None = None, **env):
    """Runs `module_name`'s `run()` (its console script's entry) in this process, `args` its arguments.

    A drop-in for tests.cli.run_module: the same arguments, the same kind of
    result, without the seconds a fresh process spends importing TensorFlow.

    Args:
      module_name: e.g. "placer.train_main".
      args: the command-line arguments, without the program name.
      cwd: working directory during the run.
      timeout: accepted for run_module's callers; a run in this process is not cut short.
      program: sys.argv[0] (default: the module name).
      env: environment variables set during the run.

    Returns:
      subprocess.CompletedProcess: the exit status (0 for a normal return) and what was printed.
    """
    del timeout
    saved_env = {key: os.environ.get(key) for key in env}
    here = os.getcwd()
    main = sys.modules["__main__"]
    main_doc = main.__doc__  # placer.cli.own_flags_in_help gives __main__ the binary's docstring for --help
    result, code = {}, 0
    with isolated_flags(), _captured(result):
        os.environ.update(env)
        os.chdir(cwd)
        sys.modules.pop(module_name, None)
        try:
            # Set before the import, as a console script has it: a config flag's default is loaded when
            # the flag is defined, and ml_collections reads its --config.x overrides from sys.argv then.
            sys.argv[:] = [program or module_name, *args]
            module = importlib.import_module(module_name)
            module.run()
        except SystemExit as e:
            code = 0 if e.code is None else e.code if isinstance(e.code, int) else 1
        finally:
            sys.modules.pop(module_name, None)
            main.__doc__ = main_doc
            os.chdir(here)
            for key, value in saved_env.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    return subprocess.CompletedProcess([module_name, *args], code, result["out"], result["err"])


def call(module_name: str, *args: str) -> int:
    """Runs `module_name`'s `run()` in this process, its output left to the test's own capture (capsys).

    Args:
      module_name: e.g. "placer.train_main".
      args: the command-line arguments, without the program name.

    Returns:
      The exit status (0 for a normal return).
    """
    with isolated_flags():
        sys.modules.pop(module_name, None)
        try:
            sys.argv[:] = [module_name, *args]  # before the import, as in run()
            importlib.import_module(module_name).run()
        except SystemExit as e:
            return 0 if e.code is None else e.code if isinstance(e.code, int) else 1
        finally:
            sys.modules.pop(module_name, None)
    return 0


def own_flags(module_name: str) -> list[str]:
    """The names of the flags `module_name` defines itself (those its --help lists under it)."""
    with isolated_flags():
        sys.modules.pop(module_name, None)
        sys.argv[:] = [module_name]
        try:
            importlib.import_module(module_name)
            return [f.name for f in flags.FLAGS.flags_by_module_dict().get(module_name, [])]
        finally:
            sys.modules.pop(module_name, None)
