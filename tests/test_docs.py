"""The user guide (README.md, docs/*.md, mkdocs.yml): its examples run, its links resolve,
and it builds.

The fences, one convention for every page:

    ```python    runnable: this file runs the block and it must pass (it asserts what it shows)
    ```py        Python shown, not run: generated code, a fragment of a file, a file a command reads
    ```text      output, messages, diagrams
    ```console   a command and what it prints (`$ ` before the command)
    ```sh        commands, not run (```bash too)
    ```yaml      configuration

Each ```python block is a test of its own, named `page:line`: it is written to a file (so
`gradgen.grad` can read the source of the functions it defines) and run as a fresh module
with `runpy`, in a temporary folder that holds a copy of `examples/`, with `examples/` on
`sys.path`, as `PYTHONPATH=examples python` from the repository root has it. gradgen's cache
goes into that folder too, and a block's subprocesses import this checkout's gradgen.
"""

import importlib.util
import os
import re
import runpy
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

import gradgen  # noqa: F401  (this checkout's, imported before any block changes the folder)

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCES = {"python", "py", "text", "console", "sh", "bash", "yaml"}
README_LINES = 300

_OPEN = re.compile(r"^( *)```(\S*)\s*$")


def fenced_blocks(text):
    """(language, first line of the code, code) for every fenced block of a page."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        opened = _OPEN.match(lines[i])
        if opened is None:
            i += 1
            continue
        indent, language, start = opened.group(1), opened.group(2), i + 1
        i += 1
        while i < len(lines) and lines[i].rstrip() != indent + "```":
            i += 1
        assert i < len(lines), f"a fence opened at line {start} is never closed"
        code = "\n".join(line[len(indent):] for line in lines[start:i]) + "\n"
        blocks.append((language, start + 1, code))
        i += 1
    return blocks


def _name(page):
    return page.relative_to(ROOT).as_posix()


def runnable():
    return [pytest.param(page, line, code, id=f"{_name(page)}:{line}")
            for page in PAGES for language, line, code in fenced_blocks(page.read_text(encoding="utf-8"))
            if language == "python"]


@pytest.mark.parametrize("page, line, code", runnable())
def test_the_example_runs(page, line, code, tmp_path, monkeypatch):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path / "examples"))  # (restores all of sys.path afterwards)
    monkeypatch.setenv("GRADGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), str(tmp_path / "examples")]))
    block = tmp_path / f"{page.stem.lower().replace('-', '_')}_{line}.py"
    block.write_text(code, encoding="utf-8")
    before = set(sys.modules)
    try:
        runpy.run_path(str(block), run_name="docs_example")
    finally:  # the examples this block imported are its own: the next block imports its copy
        for name in set(sys.modules) - before:
            if str(getattr(sys.modules[name], "__file__", None) or "").startswith(str(tmp_path)):
                del sys.modules[name]


def test_every_fence_follows_the_convention():
    for page in PAGES:
        languages = [language for language, _, _ in fenced_blocks(page.read_text(encoding="utf-8"))]
        assert set(languages) <= FENCES, f"{_name(page)}: fences {sorted(set(languages) - FENCES)}"
    assert len(runnable()) >= 20


def test_the_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_LINES, f"README.md has {len(lines)} lines; move the detail into docs/"


def test_the_readme_shows_the_committed_backward_pass():
    """The README's generated code is generated/seed_net_grad.py's loss_grad, line for line
    (its docstring shortened)."""
    shown = [code for language, _, code in fenced_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
             if language == "py" and code.startswith("def loss_grad(")]
    [shown] = shown
    generated = (ROOT / "generated" / "seed_net_grad.py").read_text(encoding="utf-8")
    function = generated[generated.index("def loss_grad("):].split("\n\n\n")[0]
    body = [line for line in function.splitlines() if line.strip()]
    lines = [line for line in shown.splitlines() if line.strip() and "..." not in line]
    assert lines[0] == body[0] and lines[1:] == body[-len(lines) + 1:]


# ---- links ------------------------------------------------------------------------------------

_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading):
    """The anchor Python-Markdown's toc extension (MkDocs) gives a heading."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", text).strip().lower())


def anchors(page):
    text = re.sub(r"^ *```.*?^ *```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    return {slug(line.lstrip("#").strip()) for line in text.splitlines() if re.match(r"#{1,6} ", line)}


def relative_links(page):
    text = re.sub(r"^ *```.*?^ *```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return [target for target in _LINK.findall(text) if not re.match(r"[a-z][a-z+.-]*:", target)]


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_relative_link_resolves(page):
    """A link to a file reaches one, and a link to a heading reaches one (mkdocs build
    --strict checks the files of docs/; this checks README.md's too, and every anchor)."""
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        assert file.is_file(), f"{_name(page)}: {target} is not a file"
        if anchor:
            assert file.suffix == ".md" and anchor in anchors(file), f"{_name(page)}: no heading for {target}"


def test_the_readme_links_into_the_guide():
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in relative_links(ROOT / "README.md")}
    assert {ROOT / "docs" / "subset.md", ROOT / "docs" / "how-it-works.md"} <= linked


# ---- the build --------------------------------------------------------------------------------

def test_the_guide_builds_strictly(tmp_path):
    """`mkdocs build --strict`: every page in the nav, every link and image found."""
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]')")
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                             str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "site" / "how-it-works" / "index.html").is_file()
