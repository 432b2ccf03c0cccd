"""The shell blocks of the docs that run as written: the README's five-minute start, and the
blocks of docs/ pages marked `<!-- runnable -->` (docs/contributors/docs.md)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.cli import free_port

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
QUICKSTART = "## Five-minute start"
MARKER = "<!-- runnable -->"

# The install lines are shown to readers but not run here: the code under test is this
# checkout, put on PATH as `agentsvc` below (a fresh venv install takes minutes).
NOT_RUN = ("python3 -m venv .venv && . .venv/bin/activate", "pip install -e .")

SH_BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def quickstart_blocks() -> list[str]:
    """The fenced sh blocks of the README's five-minute start, in order."""
    text = README.read_text(encoding="utf-8")
    start = text.index(QUICKSTART + "\n")
    end = text.index("\n## ", start + len(QUICKSTART))
    return SH_BLOCK.findall(text[start:end])


def doc_pages() -> list[Path]:
    """Every Markdown page under docs/, in the order of their paths."""
    return sorted(DOCS.rglob("*.md"))


def runnable_blocks() -> list[tuple[str, str]]:
    """(page, block) of every sh block of docs/ whose fence follows the runnable marker."""
    found = []
    marked = re.compile(rf"^{re.escape(MARKER)}\n```sh\n(.*?)^```$", re.DOTALL | re.MULTILINE)
    for page in doc_pages():
        text = page.read_text(encoding="utf-8")
        found.extend((str(page.relative_to(ROOT)), b) for b in marked.findall(text))
    return found


@dataclass
class ScriptRun:
    """What a run of doc blocks left: its exit code, output, working directory and address."""

    code: int
    stdout: str
    stderr: str
    work: Path
    origin: str

    @property
    def log(self) -> str:
        path = self.work / "agentsvc.log"
        return path.read_text() if path.exists() else ""

    def report(self) -> str:
        return f"exit {self.code}\nstdout:\n{self.stdout}\nstderr:\n{self.stderr}\nlog:\n{self.log}"


def _bin_dir(tmp_path: Path) -> Path:
    """`agentsvc` and `python3` of this checkout and this interpreter, first on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "agentsvc"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m agentsvc "$@"\n')
    shim.chmod(0o755)
    (bin_dir / "python3").symlink_to(sys.executable)
    return bin_dir


def _script(blocks: list[tuple[str, str]]) -> str:
    """One bash script of the blocks, in order, that stops at the first failing command."""
    script = "set -eu -o pipefail\ntrap 'echo \"failed: $BASH_COMMAND\" >&2' ERR\n"
    for where, block in blocks:
        lines = [line for line in block.splitlines() if line not in NOT_RUN]
        script += f"echo '== {where}' >&2\n" + "\n".join(lines) + "\n"
    return script


@contextlib.contextmanager
def run_blocks(blocks: list[tuple[str, str]], tmp_path: Path) -> Iterator[ScriptRun]:
    """Run the blocks with bash in an empty directory; the server they start lives until exit."""
    work = tmp_path / "work"
    work.mkdir()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTSVC_")}
    env.update(
        PATH=f"{_bin_dir(tmp_path)}{os.pathsep}{env['PATH']}",
        PYTHONPATH=str(ROOT),
        PORT=str(port),
        HOME=str(tmp_path),
    )
    out_path, err_path = tmp_path / "stdout", tmp_path / "stderr"
    with out_path.open("w") as out, err_path.open("w") as err:
        # Its own session: the server it starts in the background is ended with it below.
        proc = subprocess.Popen(
            ["bash", "-c", _script(blocks)],
            cwd=work,
            env=env,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
    try:
        code = proc.wait(timeout=120)
        yield ScriptRun(
            code, out_path.read_text(), err_path.read_text(), work, f"http://127.0.0.1:{port}"
        )
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
