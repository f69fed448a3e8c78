"""User-facing errors shared by every package (no TensorFlow import)."""


class InputError(ValueError):
    """Bad input a user can act on: a missing file, a bad field, an unknown op.

    The message is one line that names the file, field or op. Binaries turn it
    into that line on stderr and exit status 2, without a traceback.
    """


def one_line(exc: BaseException) -> str:
    """Returns the exception's type and message on one line."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"
