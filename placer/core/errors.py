"""User-facing errors shared by every package (no TensorFlow import)."""


class InputError(ValueError):
    """Bad input a user can act on: a missing file, a bad field, an unknown op.

    The message is one line that names the file, field or op. Binaries turn it
    into that line on stderr and exit status 2, without a traceback.
    """


def one_line(exc: BaseException) -> str:
    """Returns the exception's type and message on one line."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


class RunStopped(Exception):  # noqa: N818 (a state the run ended in, not a programming error)
    """A run stopped by something outside its input (e.g. every measurement worker lost).

    The message is one line saying what happened and where the run's files
    stand; binaries print it and exit with status 1, without a traceback.
    """
