"""A progress bar on standard error for long runs, drawn only on a terminal.

The API reports progress through a plain callback, ``(files done, files in all)``, so it stays
free of any output concern; this module turns those calls into one redrawn line. It draws
nothing for short runs (under ``MIN_FILES`` files, a bar would only flicker) and nothing when
standard error is not a terminal (a log file or CI must not fill with carriage returns).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Optional, TextIO

ProgressCallback = Callable[[int, int], None]

# "Several hundred files": below this a run takes a second or two and needs no bar.
MIN_FILES = 200
_WIDTH = 30


class ProgressBar:
    """``devlint [#########           ] 120/400 files``, redrawn in place with a carriage return.

    It redraws only when the whole percentage changes, so a run of 50,000 files writes about a
    hundred lines, not 50,000.
    """

    def __init__(self, stream: TextIO, min_files: int = MIN_FILES) -> None:
        self._stream = stream
        self._min_files = min_files
        self._shown_percent = -1
        self._drawn_width = 0

    def __call__(self, done: int, total: int) -> None:
        if total < self._min_files or total <= 0:
            return
        percent = done * 100 // total
        if percent == self._shown_percent:
            return
        self._shown_percent = percent
        filled = done * _WIDTH // total
        line = f"devlint [{'#' * filled}{' ' * (_WIDTH - filled)}] {done}/{total} files"
        self._stream.write("\r" + line)
        self._stream.flush()
        self._drawn_width = max(self._drawn_width, len(line))

    def close(self) -> None:
        """Erase the bar, so that what is printed next starts on a clean line."""
        if self._drawn_width:
            self._stream.write("\r" + " " * self._drawn_width + "\r")
            self._stream.flush()
            self._drawn_width = 0


@contextmanager
def progress_bar(
    enabled: bool = True,
    stream: Optional[TextIO] = None,
    force: bool = False,
    min_files: int = MIN_FILES,
) -> Iterator[Optional[ProgressCallback]]:
    """A progress callback for the API, or None when no bar is wanted.

    ``force`` draws the bar even when ``stream`` is not a terminal (for tests and demos).
    """
    out = stream if stream is not None else sys.stderr
    if not enabled or not (force or _is_terminal(out)):
        yield None
        return
    bar = ProgressBar(out, min_files)
    try:
        yield bar
    finally:
        bar.close()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream
        return False
