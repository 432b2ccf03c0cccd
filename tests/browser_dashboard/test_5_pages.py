"""Screenshots of every main page, checked for a rendered, non-empty layout."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.support.dashboard_stack import (
    PAGES,
    ensure_owner,
    image_stats,
    nav,
    sign_in,
    slug,
)


def test_every_main_page_renders_a_non_empty_layout(tab, stack, shots):
    ensure_owner(stack)
    page = tab.page
    sign_in(page, stack)
    for name in PAGES:
        nav(page, name)
        if name == "Widget":  # the live preview frame is part of that page's layout
            frame = page.frame_locator("iframe[title='Widget preview']")
            expect(frame.get_by_role("button", name="Open chat")).to_be_visible()
        main = page.locator("main")
        expect(main.get_by_role("heading", level=1)).to_be_visible()
        text = main.inner_text()
        assert len(text.strip()) > 40, (name, text)
        assert "could not" not in text.lower(), (name, text)
        assert main.locator(".form-error").count() == 0, (name, text)
        box = main.bounding_box()
        assert box and box["width"] > 600 and box["height"] > 150, (name, box)
        png = page.screenshot(full_page=True)
        (shots / f"{slug(name)}.png").write_bytes(png)
        stats = image_stats(page, png)
        assert stats["width"] == 1280, stats
        assert stats["colours"] >= 12, (name, stats)
        assert stats["dominant"] < 0.97, (name, stats)
    for view in ("signin", "setup"):
        assert not (shots / f"{view}.png").exists()
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    png = page.screenshot()
    (shots / "signin.png").write_bytes(png)
    assert image_stats(page, png)["colours"] >= 8
