"""The README's five-minute start, run as written with bash in an empty directory."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from tests.support.cli import call, free_port

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SECTION = "## Five-minute start"

# The install lines are shown to readers but not run here: the code under test is this
# checkout, put on PATH as `agentsvc` below (a fresh venv install takes minutes).
NOT_RUN = ("python3 -m venv .venv && . .venv/bin/activate", "pip install -e .")


def quickstart_blocks() -> list[str]:
    """The fenced sh blocks of the README's five-minute start, in order."""
    text = README.read_text(encoding="utf-8")
    start = text.index(SECTION + "\n")
    end = text.index("\n## ", start + len(SECTION))
    return re.findall(r"^```sh\n(.*?)^```$", text[start:end], re.DOTALL | re.MULTILINE)


def test_readme_quickstart_is_found_and_shows_the_steps():
    script = "\n".join(quickstart_blocks())
    for line in NOT_RUN:
        assert line in script.splitlines()
    for step in (
        "agentsvc serve --port $PORT",
        "agentsvc apikey create --email",
        "agentsvc login-link --email",
        "/api/v1/agents",
        "/documents",
        "/api/v1/chat",
        "/widget.js",
    ):
        assert step in script, step
    text = README.read_text(encoding="utf-8")
    assert text.index(SECTION) < text.index("## Command line")
    assert "Python 3.11 or newer" in text[text.index(SECTION) :]


def _bin_dir(tmp_path: Path) -> Path:
    """`agentsvc` and `python3` of this checkout and this interpreter, first on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "agentsvc"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m agentsvc "$@"\n')
    shim.chmod(0o755)
    (bin_dir / "python3").symlink_to(sys.executable)
    return bin_dir


def test_readme_quickstart_runs_as_written(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    lines = [
        line for block in quickstart_blocks() for line in block.splitlines() if line not in NOT_RUN
    ]
    script = "set -eu -o pipefail\ntrap 'echo \"failed: $BASH_COMMAND\" >&2' ERR\n"
    script += "\n".join(lines) + "\n"
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
            ["bash", "-c", script],
            cwd=work,
            env=env,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
    try:
        code = proc.wait(timeout=120)
        stdout, stderr = out_path.read_text(), err_path.read_text()
        log = (work / "agentsvc.log").read_text() if (work / "agentsvc.log").exists() else ""
        assert code == 0, f"exit {code}\nstdout:\n{stdout}\nstderr:\n{stderr}\nlog:\n{log}"
        origin = f"http://127.0.0.1:{port}"
        assert f"agentsvc listening on {origin} (public URL {origin};" in log

        # The sign-in link signs the owner in on the port the README chose.
        link = re.search(rf"^{re.escape(origin)}/api/v1/auth/magic-link/verify\S+$", stdout, re.M)
        assert link, stdout
        status, headers, _ = call(link.group(0))
        assert status == 303 and "agentsvc_session=" in headers["Set-Cookie"]

        # The knowledge page was indexed and the agent answered from it.
        assert '"status":"ready"' in stdout.replace(" ", ""), stdout
        deltas = re.findall(r'"text_delta","text":"([^"]*)"', stdout.replace(": ", ":"))
        assert "30 days" in "".join(deltas), stdout
        assert "event: message_stop" in stdout

        # The widget page names the agent and loads the running instance's script.
        page = (work / "page.html").read_text()
        agent = re.search(r'agentId: "(agt_[\w-]+)"', page)
        assert agent, page
        assert f'src="{origin}/widget.js"' in page
        assert call(f"{origin}/widget.js")[0] == 200
        assert call(f"{origin}/widget/demo?agentId={agent.group(1)}")[0] == 200
        assert (work / "data" / "agentsvc.db").is_file()
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
