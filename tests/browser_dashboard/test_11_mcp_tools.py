"""The tool editor with an MCP server: address and headers, "Load tools", the checklist of
the server's tools, saving a selection, a test run of one of its tools, and a refresh after
the server changed its list."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.support.dashboard_stack import (
    Tab,
    ensure_owner,
    fill_headers,
    in_owners_team,
    nav,
    owner_key,
    sign_in,
    start_new_tool,
)
from tests.support.fakes.mcp_server import FakeMcpServer

MCP_MS = 20_000  # a step that talks to the MCP server, through our server


def test_owner_adds_an_mcp_server_chooses_its_tools_and_refreshes(browser, stack, shots):
    ensure_owner(stack)
    key = owner_key(stack)
    server = stack.run(FakeMcpServer().start())
    stack.api("PUT", "/secrets/SHOP_TOKEN", key, {"value": "tok-browser"})
    agent = stack.api("POST", "/agents", key, {"name": "MCP shop"})["data"]
    tab = Tab(browser, stack)
    try:
        page = tab.page
        sign_in(page, stack)
        in_owners_team(page)
        page.get_by_label("Agent", exact=True).select_option(agent["id"])
        nav(page, "Tools")
        editor = start_new_tool(page, "shop", "The shop's own MCP server", "mcp")
        expect(editor.get_by_label("Input schema (JSON Schema)")).to_be_hidden()
        editor.get_by_label("Server URL").fill(server.url)
        fill_headers(
            editor, "Headers sent to the server", {"Authorization": "Bearer {{SHOP_TOKEN}}"}
        )
        editor.get_by_role("button", name="Load tools").click()
        # The server asks the MCP server (a session, then its list): on a loaded machine
        # that takes seconds, and the page says "Asking the server…" meanwhile.
        expect(editor.get_by_text("The server lists 7 tools.")).to_be_visible(timeout=MCP_MS)
        checklist = editor.get_by_role("group", name="The server's tools")
        expect(checklist).to_contain_text("the model sees shop__search_docs")
        # Choose two tools instead of all of them.
        editor.get_by_label("Expose every tool").uncheck()
        for name in ("whoami", "fail", "crash", "hang", "huge"):
            checklist.get_by_label(name, exact=False).first.uncheck()
        expect(checklist.locator("input:checked")).to_have_count(2)
        page.screenshot(path=str(shots / "mcp-checklist.png"), full_page=True)
        editor.get_by_role("button", name="Create tool").click()  # lists the server's tools
        expect(page.get_by_role("heading", name="shop")).to_be_visible(timeout=MCP_MS)
        expect(page.get_by_text("MCP server · updated")).to_contain_text(
            "2 tools, listed", timeout=MCP_MS
        )

        stored = stack.api("GET", f"/tools?agentId={agent['id']}", key)
        assert [f["name"] for f in stored[0]["mcpServerTools"]] == [
            "shop__get_order",
            "shop__search_docs",
        ]
        assert stored[0]["mcpHeaders"] == {"Authorization": "Bearer {{SHOP_TOKEN}}"}

        # A test run of one of the server's tools, through the builtin model.
        page.get_by_label("Function to test").select_option("shop__get_order")
        run = page.get_by_role("form", name="Test run")
        run.get_by_label("Input (JSON)").fill('{"id": "B-2"}')
        run.get_by_role("button", name="Run tool").click()
        expect(run.locator(".test-output")).to_contain_text("Order B-2: shipped", timeout=MCP_MS)
        assert server.calls[-1][2] == "Bearer tok-browser"

        # The server drops one of the chosen tools: a refresh shows what is left.
        del server.tools["Search-Docs"]
        page.get_by_role("button", name="Refresh from server").click()
        expect(page.get_by_text("MCP server · updated")).to_contain_text(
            "1 tools, listed", timeout=MCP_MS
        )
        nav(page, "Tools")
        expect(page.get_by_text("MCP server · 1 tools")).to_be_visible()
        page.screenshot(path=str(shots / "mcp-tools-list.png"), full_page=True)
    finally:
        tab.close()
        stack.run(server.close())
