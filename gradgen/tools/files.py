"""Files: read a source safely, write a generated module atomically, never clobber.

`compile_file` is `api.compile_source` plus this: the source is read as bytes from a
regular file of bounded size (a pipe or a device could block or never end), the module is
written beside its final name and renamed into place, and a file gradgen did not write, or
one edited since it did, is kept unless `--force`.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from pathlib import Path

from gradgen.analysis.stated import symbolic_shapes
from gradgen.api import compile_source
from gradgen.codegen import array_api, freshness
from gradgen.codegen import numba_jit as jits
from gradgen.codegen.derivatives import parse_kinds
from gradgen.errors import CompileError
from gradgen.frontend.source import read_source
from gradgen.verify.usercode import load_inputs

HEADER_MARK = freshness.HEADER_MARK
_EMIT_RECORDED = re.compile(rb"# Do not edit: run `gradgen compile .* --emit (?P<name>[a-z,]+)[ `]")
_WRT_RECORDED = re.compile(rb"# Do not edit: run `gradgen compile .* --wrt (?P<name>[^\s`]+)[ `]")
_SHAPES_RECORDED = re.compile(rb"# Shapes assumed \(--shapes (?P<name>[^\s)]+)\):")
_CHECKPOINT_RECORDED = re.compile(rb"# Do not edit: run `gradgen compile .* --checkpoint (?P<name>[^\s`]+)[ `]")
_MEMORY_RECORDED = re.compile(rb"# Do not edit: run `gradgen compile .* --memory (?P<name>[^\s`]+)[ `]")


def output_path(path, out_dir="generated"):
    return Path(out_dir) / f"{Path(path).stem}_grad.py"


def compile_file(path, out_dir="generated", functions=None, wrt=None, force=False, emit_kinds=None,
                 backend=None, jit=None, shapes_from=None, checkpoint=None, memory=None):
    """Compile the file at `path`; write `<out_dir>/<stem>_grad.py` atomically.

    Returns (output path, CompiledModule). Nothing is written if compilation fails, and an
    existing file that gradgen did not write is kept unless `force`. `backend` None keeps
    the backend of the module it replaces (numpy for a new one): compiling again, by hand
    or by the pre-commit hook, never changes it; nor does `jit` None (gradgen/codegen/numba_jit.py), nor
    `shapes_from` None (the `--shapes FILE:FUNC` the module was written for), nor `wrt` None (its
    `--wrt`), nor `checkpoint` None (its `--checkpoint K`, or `auto` and its `--memory`; "none"
    drops it), nor `functions` None:
    the module's `--function` names again, or the whole file, where each function the module
    has must compile again (its header lists them: a refusal of one is an error, not a skip).
    """
    data = read_source(path)
    target = output_path(path, out_dir)
    if backend is None:
        backend = array_api.recorded(target) or "numpy"
    if jit is None:
        jit = jits.recorded(target) or "none"
    if shapes_from is None:
        shapes_from = freshness.recorded_option(target, _SHAPES_RECORDED, None)
    if emit_kinds is None:
        kinds = freshness.recorded_option(target, _EMIT_RECORDED, None)
        emit_kinds = parse_kinds(kinds) if kinds else ("grad",)
    if wrt is None:  # the parameters the module was written for (a plain recompile keeps its shape)
        recorded = freshness.recorded_option(target, _WRT_RECORDED, None)
        wrt = recorded.split(",") if recorded else None
    if checkpoint is None:  # (the module's --checkpoint, and with auto its --memory)
        checkpoint = freshness.recorded_option(target, _CHECKPOINT_RECORDED, None)
        if checkpoint == "auto" and memory is None:
            memory = freshness.recorded_option(target, _MEMORY_RECORDED, None)
    keep = ()
    if functions is None:
        functions, keep = freshness.recorded_functions(target)
    shapes = None
    if shapes_from == "none":  # `--shapes none`: for any shapes again
        shapes_from = None
    if shapes_from:
        shapes = symbolic_shapes(load_inputs(shapes_from, str(path)))  # lengths as letters: a partial batch is no other shape

    compiled = compile_source(data, str(path), functions, wrt, emit_kinds, backend, jit, shapes, shapes_from,
                              keep=keep or (), checkpoint=checkpoint, memory=memory)
    _refuse_foreign(target, force)
    write_atomically(target, compiled.text)
    return target, compiled


def _refuse_foreign(target, force):
    """Refuse to replace anything but a regular file that starts with gradgen's header
    (`--force` replaces any regular file; a directory or a device is never replaced)."""
    folder = Path(target).parent
    if folder.exists() and not folder.is_dir():
        raise CompileError("the output folder is not a folder", str(folder))
    try:
        info = os.stat(target)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise CompileError(f"cannot write {target}: {exc.strerror or exc}", str(target)) from None
    if stat.S_ISDIR(info.st_mode):
        raise CompileError("a directory is in the way of the generated file", str(target))
    if not stat.S_ISREG(info.st_mode):
        raise CompileError("not a regular file; gradgen will not replace it", str(target))
    if force:
        return
    try:
        with open(target, "rb") as f:  # the header only, however large the file
            head = f.read(len(HEADER_MARK.encode("utf-8")))
    except OSError as exc:
        raise CompileError(f"cannot read the file in the way: {exc.strerror}; use --force to replace it",
                           str(target)) from None
    if head != HEADER_MARK.encode("utf-8"):
        raise CompileError("this file was not written by gradgen; use --force to overwrite it", str(target))
    if freshness.edited(target):
        raise CompileError("this file was edited since gradgen wrote it (see `gradgen status`); use --force "
                           "to overwrite it and lose the edits", str(target))


def write_atomically(target, text):
    """Write to a temporary file beside `target`, then rename: readers never see half a file,
    a failure leaves the old file as it was and no temporary file behind, and two gradgen
    runs writing the same file at once leave one of their (complete) results."""
    target = Path(target)
    data = text.encode("utf-8")
    tmp = None
    try:
        if target.parent.exists() and not target.parent.is_dir():
            raise CompileError("the output folder is not a folder", str(target.parent))
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _file_mode(target))
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        raise CompileError(f"cannot write {target}: {exc.strerror or exc}", str(target)) from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _file_mode(target):
    """The permissions a new file gets (mkstemp's are owner-only), or the replaced file's."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        umask = os.umask(0o022)
        os.umask(umask)
        return 0o666 & ~umask
