"""Every code block in README.md runs as written (issue 12, item 9).

The rule, also written for authors at the top of README's first code-bearing section:

- a fenced block tagged `sh` or `python` is run, verbatim, in a fresh copy of the
  repository (its tracked and untracked-but-not-ignored files) as the working
  directory, with this interpreter's environment (the venv the tests run in);
  `sh` through `bash -e`, `python` through this interpreter;
- `<!-- readme-test: gpu -->` on the line before a block: it needs a CUDA GPU and is
  skipped without one;
- `<!-- readme-test: skip REASON -->`: not run, and the reason says why (a fresh-venv
  install, the test suite itself); use it only where running is impossible here;
- `<!-- readme-test: installed -->`: the block starts with the install line
  (`python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[...]' && ...`); the
  tests run where that install has been done (.ci/run does exactly it), so that prefix is
  dropped and the rest of the block runs (the test fails if the prefix is not there);
- `<!-- readme-test: cutedsl 4.8 -->`: what it shows holds for those CuTeDSL releases
  only (a reproducer's error text); skipped with another installed release (CI also
  runs the suite with the lowest supported one);
- any other block (output, a command synopsis with placeholders) is tagged something
  else (`text`, or no tag) and is not run.

A block passes when it exits 0 within its time limit and leaves the checkout as it found
it: the copy is a git repository of its own, and `git status --porcelain` after the block
must be what it was before (no tracked file modified, nothing untracked that .gitignore
does not cover: issue 38, a reproducer example that wrote report.md into the root).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
RUN_LANGUAGES = {"sh": ["bash", "-e"], "python": [sys.executable]}
MARKER = re.compile(r"<!--\s*readme-test:\s*(gpu|skip|cutedsl|installed)\b\s*(.*?)\s*-->")
# the install prefix of a block marked `installed`: a fresh venv and the editable install
INSTALL_PREFIX = re.compile(r"\Apython3 -m venv \.venv && \. \.venv/bin/activate && "
                            r"pip install -e '\.\[[a-z,]+\]' &&\s*(\\\n\s*)?")
FENCE = re.compile(r"^(`{3,})(\S*)\s*$")
TIMEOUT_S = 600


@dataclass
class Block:
    line: int  # 1-based line of the opening fence
    language: str
    text: str
    marker: str | None  # "gpu", "skip", "cutedsl", "installed" or None
    reason: str  # what follows the marker: skip's reason, cutedsl's release prefix

    @property
    def id(self) -> str:
        return f"L{self.line}-{self.language}"


def readme_blocks(text: str) -> list[Block]:
    """The fenced blocks of `text`, each with the marker comment on the line before it."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        ticks, language, start = fence.group(1), fence.group(2), i
        j = i + 1
        while j < len(lines) and lines[j].strip() != ticks:
            j += 1
        previous = lines[start - 1] if start > 0 else ""
        marker = MARKER.search(previous)
        blocks.append(Block(start + 1, language, "\n".join(lines[start + 1 : j]) + "\n",
                            marker.group(1) if marker else None, marker.group(2) if marker else ""))
        i = j + 1
    return blocks


def cutedsl_version() -> str:
    import importlib.metadata

    return importlib.metadata.version("nvidia-cutlass-dsl")


def _release_matches(prefix: str) -> bool:
    version = cutedsl_version()
    return version == prefix or version.startswith(prefix.rstrip(".") + ".")


def has_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return shutil.which("nvidia-smi") is not None and subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True).returncode == 0
    return torch.cuda.is_available()


def repository_copy(destination: Path) -> Path:
    """The files a checkout has (tracked, and untracked but not ignored), copied; without
    git (an unpacked archive), everything but the venv and build outputs."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                                cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        ignore = shutil.ignore_patterns(".venv", ".git", "__pycache__", "Output", "*.egg-info")
        shutil.copytree(REPO, destination, ignore=ignore)
        _commit_all(destination)
        return destination
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    _commit_all(destination)
    return destination


def _git(work: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="readme-test", GIT_AUTHOR_EMAIL="readme-test@localhost",
               GIT_COMMITTER_NAME="readme-test", GIT_COMMITTER_EMAIL="readme-test@localhost")
    return subprocess.run(["git", *args], cwd=work, capture_output=True, text=True, check=True, env=env).stdout


def _commit_all(work: Path) -> None:
    """The copy as a fresh clone would be: every file committed, so that `git status` shows
    what a README block changes in it."""
    _git(work, "init", "-q")
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "--no-verify", "-m", "the checkout under test")


def checkout_changes(work: Path) -> str:
    """`git status --porcelain` of the copy: tracked files modified, untracked ones not ignored."""
    return _git(work, "status", "--porcelain", "--untracked-files=all")


BLOCKS = [b for b in readme_blocks(README.read_text(encoding="utf-8")) if b.language in RUN_LANGUAGES]


def test_the_rule_finds_blocks_and_markers():
    """The extraction itself, on a known text (so the test cannot pass by finding nothing)."""
    text = ("# t\n```sh\necho one\n```\n<!-- readme-test: gpu -->\n```python\nprint(2)\n```\n"
            "<!-- readme-test: skip installs a venv -->\n````sh\npip install x\n````\n```\nout\n```\n"
            "<!-- readme-test: cutedsl 4.8 -->\n```sh\nx\n```\n")
    installed = "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' && \\\n  lowering-opt x\n"
    assert INSTALL_PREFIX.sub("", installed, count=1) == "lowering-opt x\n"
    found = readme_blocks(text)
    assert [(b.line, b.language, b.marker) for b in found] == [
        (2, "sh", None), (6, "python", "gpu"), (10, "sh", "skip"), (13, "", None), (17, "sh", "cutedsl")]
    assert found[0].text == "echo one\n" and found[2].reason == "installs a venv" and found[4].reason == "4.8"
    assert len(BLOCKS) >= 5, "README.md has fewer runnable blocks than it had when this test was written"


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_readme_block_runs(block: Block, tmp_path: Path):
    if block.marker == "skip":
        pytest.skip(f"README.md:{block.line}: {block.reason or 'marked skip'}")
    if block.marker == "gpu" and not has_gpu():
        pytest.skip(f"README.md:{block.line}: needs a CUDA GPU")
    if block.marker == "cutedsl" and not _release_matches(block.reason):
        pytest.skip(f"README.md:{block.line}: shows CuTeDSL {block.reason}'s behaviour, this is {cutedsl_version()}")
    text = block.text
    if block.marker == "installed":
        installed = INSTALL_PREFIX.sub("", text, count=1)
        assert installed != text, f"README.md:{block.line}: marked 'installed' but does not start with the install line"
        text = installed
    work = repository_copy(tmp_path / "repo")
    script = tmp_path / f"readme-block-{block.line}"  # outside the checkout: it must stay clean
    script.write_text(text, encoding="utf-8")
    before = checkout_changes(work)
    # our package as installed (cute_lowering: the editable install of this checkout), not the copy's folders
    proc = subprocess.run([*RUN_LANGUAGES[block.language], str(script)], cwd=work, capture_output=True,
                          text=True, timeout=TIMEOUT_S)
    assert proc.returncode == 0, (
        f"README.md:{block.line} ({block.language}) exited {proc.returncode}\n--- block\n{block.text}"
        f"--- stdout (tail)\n{proc.stdout[-3000:]}\n--- stderr (tail)\n{proc.stderr[-3000:]}")
    changed = checkout_changes(work)
    assert changed == before, (
        f"README.md:{block.line} ({block.language}) changed the checkout it ran in (git status --porcelain):\n"
        f"{changed}--- block\n{block.text}")


def test_checkout_changes_sees_what_a_block_leaves(tmp_path):
    """The check itself: a file written into the copy, or a tracked one modified, shows."""
    work = tmp_path / "repo"
    work.mkdir()
    (work / "README.md").write_text("x\n")
    (work / ".gitignore").write_text("ignored/\n")
    _commit_all(work)
    assert checkout_changes(work) == ""
    (work / "ignored").mkdir()
    (work / "ignored" / "out.txt").write_text("fine\n")
    assert checkout_changes(work) == ""
    (work / "report.md").write_text("new\n")
    (work / "README.md").write_text("changed\n")
    assert checkout_changes(work).splitlines() == [" M README.md", "?? report.md"]
