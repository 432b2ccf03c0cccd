"""The README's five-minute start, run as written with bash in an empty directory."""

from __future__ import annotations

import re

from tests.support.cli import call
from tests.support.doc_blocks import NOT_RUN, QUICKSTART, README, quickstart_blocks, run_blocks


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
    # The five-minute start is the README's first section.
    assert re.findall(r"^## .*$", text, re.M)[0] == QUICKSTART
    assert "Python 3.11 or newer" in text[text.index(QUICKSTART) :]


def test_readme_quickstart_runs_as_written(tmp_path):
    blocks = [("README.md", block) for block in quickstart_blocks()]
    with run_blocks(blocks, tmp_path) as run:
        assert run.code == 0, run.report()
        origin, stdout, work = run.origin, run.stdout, run.work
        assert f"agentsvc listening on {origin} (public URL {origin};" in run.log

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
