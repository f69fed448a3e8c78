"""Control characters escaped in everything the binaries print (no TensorFlow).

Names come from users' files: an op, graph or device name holding a terminal
escape sequence (ESC ] 0 ; title BEL sets the window title; others move the
cursor or rewrite the screen) must reach the terminal as visible text. The
binaries print through `EscapingStream`, which passes every line through
`escape_controls`, so each print path is covered by this one helper.
"""

from __future__ import annotations

import re
from typing import TextIO

# C0 controls except tab and newline, DEL, and the C1 controls (U+0080..U+009F, which some
# terminals obey as escapes too). A carriage return is kept only where a progress bar
# uses one: at the start of a write (rewriting the line) or before a newline.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|\r(?!\n|$)")


def _escaped(m: re.Match) -> str:
    return f"\\x{ord(m.group()):02x}"


def escape_controls(text: str) -> str:
    """Returns `text` with control characters written as \\xNN, e.g. "\\x1b]0;t\\x07" for ESC ] 0 ; t BEL.

    Tab and newline stay, and so does a carriage return at the start of
    `text` or before a newline (progress bars rewrite their line with one).
    """
    head = "\r" if text.startswith("\r") else ""
    return head + _CONTROL.sub(_escaped, text[len(head) :])


class EscapingStream:
    """A text stream that writes to `stream` with control characters escaped (`escape_controls`).

    Everything else (isatty, fileno, encoding, flush) is the wrapped stream's.
    """

    def __init__(self, stream: TextIO):
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(escape_controls(text))
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str):
        return getattr(self.stream, name)
