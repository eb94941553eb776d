"""Reading the file to compile: a regular file of bounded size, read as bytes (a pipe or a
device could block or never end). `compile`, `check` and `--inputs FILE:FUNC` all read
their files here, so each refuses the same things with the same message."""

from __future__ import annotations

import os
import stat

from gradgen.errors import CompileError
from gradgen.frontend import parse


def read_source(path):
    """The bytes of the file at `path`, which must be a regular file (a pipe or a device
    could block or never end) no larger than gradgen accepts."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # opening a pipe does not wait
    except OSError as exc:
        raise CompileError(f"cannot read: {exc.strerror or exc}", str(path)) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        what = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise CompileError(f"cannot read: {what}", str(path))
    if info.st_size > parse.MAX_SOURCE_BYTES:
        os.close(fd)
        raise CompileError(f"file too large ({info.st_size:,} bytes); gradgen reads at most "
                           f"{parse.MAX_SOURCE_BYTES:,}", str(path))
    with os.fdopen(fd, "rb") as f:
        try:
            return f.read(parse.MAX_SOURCE_BYTES + 1)
        except OSError as exc:
            raise CompileError(f"cannot read: {exc.strerror or exc}", str(path)) from None
