"""Knowledge sources against a site served on 127.0.0.1 (tests/support/site.py): a sitemap
index, robots.txt, conditional requests, canonical addresses and redirects, changed and
removed pages, a crawl of links; bad input ending as clear errors; progress over SSE;
schedules, and a sync a stopped process left, resumed by the next one."""

from __future__ import annotations

import asyncio
import time

import pytest

from agentsvc.api import app_keys
from agentsvc.app import create_app
from agentsvc.llm.sse import SseParser
from tests.support.accounts import bearer, new_api_key
from tests.support.chat import new_agent
from tests.support.errors import assert_error
from tests.support.outbound import StubResolver
from tests.support.settings import make_settings, with_new_database
from tests.support.site import Site, docx_bytes, serve

FAST = {
    "host_delay_seconds": 0,
    "fetch_timeout_seconds": 1,
    "max_page_mb": 1,
    "sweep_seconds": 0.2,
    "lease_seconds": 1,
    "progress_poll_seconds": 0.05,
}


@pytest.fixture
async def site():
    found = Site()
    server = await serve(found)
    yield found
    await server.close()


@pytest.fixture
async def fast(make_client):
    return await make_client(sources=FAST)


@pytest.fixture
async def fast_auth(fast):
    return bearer(await new_api_key(fast))


async def _post(client, auth, path: str, body: dict, status: int = 201) -> dict:
    resp = await client.post(f"/api/v1{path}", json=body, headers=auth)
    assert resp.status == status, await resp.text()
    return await resp.json()


async def _get(client, auth, path: str) -> dict | list:
    resp = await client.get(f"/api/v1{path}", headers=auth)
    assert resp.status == 200, await resp.text()
    return (await resp.json())["data"]


async def _synced(client, auth, source_id: str, seconds: float = 60) -> dict:
    """The source once its sync ended (the bound only matters when it never does: a test
    worker on a busy machine runs niced, behind the browsers)."""
    deadline = time.monotonic() + seconds
    while True:
        found = await _get(client, auth, f"/sources/{source_id}")
        if found["status"] in ("ready", "failed"):
            return found
        assert time.monotonic() < deadline, found
        await asyncio.sleep(0.05)


async def _sync(client, auth, source_id: str) -> dict:
    await _post(client, auth, f"/sources/{source_id}/sync", {}, status=202)
    return await _synced(client, auth, source_id)


async def _pages(client, auth, source_id: str) -> dict[str, dict]:
    found = await _get(client, auth, f"/sources/{source_id}/pages")
    return {p["url"]: p for p in found}


async def _documents(client, auth, agent_id: str) -> dict[str, dict]:
    found = await _get(client, auth, f"/agents/{agent_id}/documents")
    return {d["sourceUrl"]: d for d in found}


def _shop(site: Site) -> None:
    """A shop's site: a sitemap index of two sitemaps, pages of every type, a page robots.txt
    keeps out, a duplicate naming its canonical page, a page that moved."""
    site.page("/refunds", "Refunds", "<h2>Time</h2><p>Refunds take five days.</p>")
    site.page("/shipping", "Shipping", "<p>Parcels ship within a day.</p>")
    site.page("/hours", "Hours", "<p>We open at nine on Saturdays.</p>")
    site.page(
        "/refunds?ref=ad",
        "Refunds again",
        "<p>Refunds take five days.</p>",
        head='<link rel="canonical" href="/refunds">',
    )
    site.page("/private/salaries", "Salaries", "<p>Secret.</p>")
    site.file("/guide.md", "text/markdown", b"# Guide\n\nAssemble the shelf with four screws.\n")
    site.file("/notes.txt", "text/plain", b"Gift wrapping costs two euros.\n")
    site.file(
        "/manual.docx",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        docx_bytes("Warranty", "The warranty lasts two years."),
    )
    site.redirects["/old-hours"] = "/hours"
    site.indexes["/sitemap.xml"] = ["/sitemap-pages.xml", "/sitemap-files.xml"]
    site.sitemaps["/sitemap-pages.xml"] = [
        "/refunds",
        "/shipping",
        "/hours",
        "/refunds?ref=ad",
        "/private/salaries",
        "/old-hours",
        "/refunds#top",
    ]
    site.sitemaps["/sitemap-files.xml"] = ["/guide.md", "/notes.txt", "/manual.docx"]


async def test_a_sitemap_index_is_indexed_then_kept_in_step(fast, fast_auth, site):
    client, auth = fast, fast_auth
    _shop(site)
    agent = await new_agent(client, auth)
    body = {"type": "sitemap", "url": site.url("/sitemap.xml"), "schedule": "off"}
    created = (await _post(client, auth, f"/agents/{agent['id']}/sources", body))["data"]
    assert created["id"].startswith("src_") and created["status"] == "queued"
    assert created["pages"] == {"found": 0, "fetched": 0, "changed": 0, "failed": 0, "removed": 0}
    first = await _synced(client, auth, created["id"])
    assert first["status"] == "ready" and first["error"] is None, first
    assert first["lastSyncAt"] and first["nextSyncAt"] is None
    # The fragment dropped (one page), robots.txt obeyed, the duplicate and the redirect
    # pointing at pages the sitemap has.
    assert first["pages"] == {"found": 8, "fetched": 8, "changed": 6, "failed": 0, "removed": 0}
    assert site.hits["/private/salaries"] == 0
    pages = await _pages(client, auth, created["id"])
    assert pages[site.url("/refunds?ref=ad")]["status"] == "duplicate"
    assert pages[site.url("/refunds?ref=ad")]["error"] == f"the same page as {site.url('/refunds')}"
    assert pages[site.url("/old-hours")]["error"] == f"redirects to {site.url('/hours')}"
    docs = await _documents(client, auth, agent["id"])
    assert set(docs) == {
        site.url(p)
        for p in ("/refunds", "/shipping", "/hours", "/guide.md", "/notes.txt", "/manual.docx")
    }
    assert all(d["sourceId"] == created["id"] and d["status"] == "ready" for d in docs.values())
    refunds = await _get(client, auth, f"/documents/{docs[site.url('/refunds')]['id']}")
    assert refunds["title"] == "Refunds" and refunds["format"] == "html"
    assert "## Time" in refunds["content"] and "© Test shop" not in refunds["content"]
    manual = await _get(client, auth, f"/documents/{docs[site.url('/manual.docx')]['id']}")
    assert manual["content"].startswith("# Warranty") and "two years" in manual["content"]

    # Twice more, unchanged: conditional requests only, the same documents and passages.
    for _ in range(2):
        before = dict(site.conditional)
        again = await _sync(client, auth, created["id"])
        assert again["pages"] == {**first["pages"], "changed": 0}, again
        assert await _documents(client, auth, agent["id"]) == docs
        assert site.conditional["/refunds"] == before.get("/refunds", 0) + 1

    # A page changes, one leaves the sitemap, one is gone (404).
    site.page("/refunds", "Refunds", "<p>Refunds take ten days.</p>")
    site.sitemaps["/sitemap-files.xml"] = ["/guide.md", "/manual.docx"]
    del site.pages["/shipping"]
    changed = await _sync(client, auth, created["id"])
    assert changed["pages"]["changed"] == 1 and changed["pages"]["removed"] == 2, changed
    now = await _documents(client, auth, agent["id"])
    assert site.url("/notes.txt") not in now and site.url("/shipping") not in now
    assert now[site.url("/refunds")]["id"] == docs[site.url("/refunds")]["id"]
    assert now[site.url("/hours")] == docs[site.url("/hours")]
    refunds = await _get(client, auth, f"/documents/{now[site.url('/refunds')]['id']}")
    assert "ten days" in refunds["content"]
    assert site.url("/shipping") not in await _pages(client, auth, created["id"])


async def test_a_crawl_follows_the_sites_links_within_its_patterns(fast, fast_auth, site):
    client, auth = fast, fast_auth
    site.page(
        "/", "Home", "<p>Welcome to the shop.</p>", "/help/a", "/blog/1", "http://example.com/x"
    )
    site.page("/help/a", "A", "<p>Answer A.</p>", "/help/b", "/help/secret")
    site.page("/help/b", "B", "<p>Answer B.</p>", "/")
    site.page("/help/secret", "Secret", "<p>Not this one.</p>")
    site.page("/blog/1", "Blog", "<p>Not this either.</p>")
    agent = await new_agent(client, auth)
    body = {
        "type": "crawl",
        "url": site.url("/"),
        "include": ["/", "/help/**"],
        "exclude": ["/help/secret"],
        "schedule": "off",
    }
    created = (await _post(client, auth, f"/agents/{agent['id']}/sources", body))["data"]
    first = await _synced(client, auth, created["id"])
    assert first["pages"] == {"found": 3, "fetched": 3, "changed": 3, "failed": 0, "removed": 0}
    assert site.hits["/help/secret"] == 0 and site.hits["/blog/1"] == 0
    # Unchanged pages answer 304; their links, kept from before, are followed again.
    again = await _sync(client, auth, created["id"])
    assert again["pages"] == {**first["pages"], "changed": 0}
    assert site.conditional["/help/b"] == 1
    # A page no longer linked is removed at the end of the sync.
    site.page("/help/a", "A", "<p>Answer A, shorter.</p>")
    third = await _sync(client, auth, created["id"])
    assert (third["pages"]["found"], third["pages"]["removed"]) == (2, 1), third
    urls = set(await _documents(client, auth, agent["id"]))
    assert urls == {site.url("/"), site.url("/help/a")}
    # maxPages caps what a sync finds.
    patched = await client.patch(
        f"/api/v1/sources/{created['id']}", json={"maxPages": 1}, headers=auth
    )
    assert (await patched.json())["data"]["maxPages"] == 1
    capped = await _sync(client, auth, created["id"])
    assert capped["pages"]["found"] == 1


async def test_each_bad_input_ends_as_a_clear_error(fast, fast_auth, site):
    client, auth = fast, fast_auth
    site.page("/ok", "Fine", "<p>This page is fine.</p>")
    site.redirects["/loop-a"] = "/loop-b"
    site.redirects["/loop-b"] = "/loop-a"
    site.redirects["/away"] = "http://example.com/"
    site.slow.add("/slow")
    site.huge.add("/huge")
    site.raw["/broken"] = (500, "text/html", b"oops")
    site.raw["/picture"] = (200, "image/png", b"\x89PNG")
    site.raw["/not-a-sitemap.xml"] = (200, "text/html", b"<html><body>Hello")
    site.sitemaps["/sitemap.xml"] = [
        "/ok",
        "/loop-a",
        "/away",
        "/slow",
        "/huge",
        "/broken",
        "/picture",
    ]
    agent = await new_agent(client, auth)
    body = {"type": "sitemap", "url": site.url("/sitemap.xml"), "schedule": "off"}
    created = (await _post(client, auth, f"/agents/{agent['id']}/sources", body))["data"]
    started = time.monotonic()
    done = await _synced(client, auth, created["id"])
    assert time.monotonic() - started < 15
    assert done["status"] == "ready" and done["pages"]["failed"] == 6, done
    errors = {url: p["error"] for url, p in (await _pages(client, auth, created["id"])).items()}
    assert errors == {
        site.url("/ok"): None,
        site.url("/loop-a"): "a redirect loop",
        site.url("/away"): "redirected off the site, to example.com (not followed)",
        site.url("/slow"): "the site did not answer within 1 s",
        site.url("/huge"): "the page is over 1 MB",
        site.url("/broken"): "the site answered 500",
        site.url("/picture"): "unsupported type image/png",
    }

    # A sitemap that is not XML fails the source, saying why.
    body["url"] = site.url("/not-a-sitemap.xml")
    bad = (await _post(client, auth, f"/agents/{agent['id']}/sources", body))["data"]
    failed = await _synced(client, auth, bad["id"])
    assert failed["status"] == "failed"
    assert failed["error"].startswith(
        f"url: {site.url('/not-a-sitemap.xml')}: the sitemap is not XML ("
    ), failed
    # A site whose robots.txt answers 500 is not fetched at all (RFC 9309).
    site.robots_status = 500
    hits = site.hits["/ok"]
    again = await _sync(client, auth, created["id"])
    assert again["status"] == "failed" and site.hits["/ok"] == hits
    assert again["error"] == (
        "robots.txt: the site answered 500; nothing is fetched until it answers"
    )


async def test_patterns_that_do_not_compile_and_limits_are_refused(fast, fast_auth, site):
    client, auth = fast, fast_auth
    agent = await new_agent(client, auth)
    path = f"/api/v1/agents/{agent['id']}/sources"
    cases = [
        ({"include": ["[a-"]}, "include: the pattern [a- does not compile ([ is not closed)"),
        ({"exclude": ["/x/[z-a]"]}, "exclude: the pattern /x/[z-a] does not compile"),
        ({"url": "ftp://example.com/"}, "url: give an http or https address of a page of the site"),
        ({"maxPages": 20_000}, "maxPages: at most 10000 pages a source on your plan"),
    ]
    for extra, message in cases:
        body = {"type": "crawl", "url": site.url("/"), "schedule": "off", **extra}
        resp = await client.post(path, json=body, headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", message)
    body = {"type": "crawl", "url": site.url("/"), "schedule": "off"}
    created = (await _post(client, auth, f"/agents/{agent['id']}/sources", body))["data"]
    resp = await client.patch(
        f"/api/v1/sources/{created['id']}", json={"exclude": ["[a-"]}, headers=auth
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "exclude: the pattern [a- does not compile")
    resp = await client.get("/api/v1/sources/src_nope", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")


async def test_a_plan_caps_the_pages_of_a_source(make_client, site):
    client = await make_client(sources=FAST, plans={"tiny": {"source_pages": 2}})
    auth = bearer(await new_api_key(client, plan="tiny"))
    for n in range(5):
        site.page(f"/p{n}", f"Page {n}", f"<p>Page number {n}.</p>")
    site.sitemaps["/sitemap.xml"] = [f"/p{n}" for n in range(5)]
    agent = await new_agent(client, auth)
    body = {"type": "sitemap", "url": site.url("/sitemap.xml"), "schedule": "off"}
    created = (await _post(client, auth, f"/agents/{agent['id']}/sources", body))["data"]
    assert created["maxPages"] == 2
    done = await _synced(client, auth, created["id"])
    assert done["pages"]["found"] == 2
    body["maxPages"] = 3
    resp = await client.post(f"/api/v1/agents/{agent['id']}/sources", json=body, headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "maxPages: at most 2 pages a source")


async def test_private_addresses_are_refused_without_allow_private(aiohttp_client, tmp_path, site):
    settings = with_new_database(
        make_settings(tmp_path, sources=FAST, outbound={"allow_private": False})
    )
    app = create_app(settings)
    # A public-looking name that resolves to loopback: refused when connecting.
    app[app_keys.outbound_resolver_key] = StubResolver("127.0.0.1")
    client = await aiohttp_client(app)
    if True:
        auth = bearer(await new_api_key(client))
        agent = await new_agent(client, auth)
        path = f"/api/v1/agents/{agent['id']}/sources"
        resp = await client.post(path, json={"type": "url", "url": site.url("/")}, headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", "url: 127.0.0.1 is a private address")
        body = {"type": "url", "url": "http://shop.example/refunds"}
        created = (await _post(client, auth, f"/agents/{agent['id']}/sources", body))["data"]
        done = await _synced(client, auth, created["id"])
        assert done["status"] == "failed"
        assert done["error"] == (
            "url: refused: shop.example resolves to 127.0.0.1, which is loopback"
        ), done


async def test_progress_streams_and_deleting_removes_the_documents(fast, fast_auth, site):
    client, auth = fast, fast_auth
    for n in range(3):
        site.page(f"/p{n}", f"Page {n}", f"<p>Page number {n}.</p>")
    site.sitemaps["/sitemap.xml"] = [f"/p{n}" for n in range(3)]
    agent = await new_agent(client, auth)
    body = {"type": "sitemap", "url": site.url("/sitemap.xml"), "schedule": "off"}
    created = (await _post(client, auth, f"/agents/{agent['id']}/sources", body))["data"]
    resp = await client.get(f"/api/v1/sources/{created['id']}/events", headers=auth)
    assert resp.status == 200 and resp.content_type == "text/event-stream"
    events = [(e.event, e.data) for e in SseParser().feed(await resp.read())]
    assert events[-1][0] == "end" and {n for n, _ in events[:-1]} == {"progress"}
    assert '"status":"ready"' in events[-1][1] and '"changed":3' in events[-1][1]
    listed = await _get(client, auth, f"/agents/{agent['id']}/sources")
    assert [s["id"] for s in listed] == [created["id"]]
    assert len(await _documents(client, auth, agent["id"])) == 3
    resp = await client.delete(f"/api/v1/sources/{created['id']}", headers=auth)
    assert resp.status == 200
    assert await _documents(client, auth, agent["id"]) == {}
    resp = await client.get(f"/api/v1/sources/{created['id']}", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")
    # Deleting the agent deletes its sources.
    again = (await _post(client, auth, f"/agents/{agent['id']}/sources", body))["data"]
    await _synced(client, auth, again["id"])
    await client.delete(f"/api/v1/agents/{agent['id']}", headers=auth)
    resp = await client.get(f"/api/v1/sources/{again['id']}", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")


async def test_schedules_sync_again_and_a_stopped_sync_resumes(make_client, tmp_path, site):
    settings = with_new_database(make_settings(tmp_path, sources={**FAST, "hourly_seconds": 0.5}))
    for n in range(6):
        site.page(f"/p{n}", f"Page {n}", f"<p>Page number {n}.</p>")
    site.sitemaps["/sitemap.xml"] = [f"/p{n}" for n in range(6)]
    site.slow.add("/p4")  # the first process stops while this one hangs
    client = await make_client(settings)
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth)
    body = {"type": "sitemap", "url": site.url("/sitemap.xml"), "schedule": "off"}
    created = (await _post(client, auth, f"/agents/{agent['id']}/sources", body))["data"]
    deadline = time.monotonic() + 10
    while (
        site.hits["/p4"] == 0
        or (await _get(client, auth, f"/sources/{created['id']}"))["pages"]["fetched"] < 5
    ):  # every page recorded but the one hanging
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    await client.close()  # the sync is left to its lease
    site.slow.clear()
    hits = dict(site.hits)
    client = await make_client(settings)
    done = await _synced(client, auth, created["id"])
    assert done["status"] == "ready" and done["pages"]["found"] == 6, done
    assert done["pages"]["changed"] == 6
    # Only the page left hanging was fetched again.
    assert {p: site.hits[p] - hits.get(p, 0) for p in (f"/p{n}" for n in range(6))} == {
        f"/p{n}": int(n == 4) for n in range(6)
    }
    # An hourly schedule (half a second here) syncs again by itself.
    resp = await client.patch(
        f"/api/v1/sources/{created['id']}", json={"schedule": "hourly"}, headers=auth
    )
    assert (await resp.json())["data"]["nextSyncAt"]
    before = site.conditional["/p0"]
    deadline = time.monotonic() + 10
    while site.conditional["/p0"] == before:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)


async def test_a_url_source_follows_its_page_where_it_moved(fast, fast_auth, site):
    client, auth = fast, fast_auth
    site.page("/new-faq", "FAQ", "<p>Ask us anything.</p>")
    site.redirects["/faq"] = "/new-faq"
    agent = await new_agent(client, auth)
    body = {"type": "url", "url": site.url("/faq"), "schedule": "weekly"}
    created = (await _post(client, auth, f"/agents/{agent['id']}/sources", body))["data"]
    assert created["maxPages"] == 1
    done = await _synced(client, auth, created["id"])
    assert done["status"] == "ready" and done["nextSyncAt"] > done["lastSyncAt"], done
    assert set(await _documents(client, auth, agent["id"])) == {site.url("/new-faq")}, await _pages(
        client, auth, created["id"]
    )
