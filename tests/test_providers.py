"""Both provider protocols against fake servers speaking the providers' literal streams."""

from __future__ import annotations

import time

import aiohttp
import pytest

from agentsvc.config import ProviderSettings
from agentsvc.llm.anthropic import messages_url
from agentsvc.llm.base import (
    Message,
    ModelRequest,
    ProviderError,
    Stop,
    TextDelta,
    ToolCall,
    ToolSpec,
    Usage,
    make_provider,
)
from tests.support.accounts import bearer, new_api_key
from tests.support.fakes import anthropic_server as anth
from tests.support.fakes import openai_server as oai
from tests.support.fakes.llm_common import Reply, split_every

WEATHER = ToolSpec(
    "get_weather",
    "Weather of a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


@pytest.fixture
async def session():
    async with aiohttp.ClientSession() as s:
        yield s


def conf(kind: str, base_url: str, **kw) -> ProviderSettings:
    return ProviderSettings(kind=kind, base_url=base_url, api_key="sk-test", **kw)


def request(**kw) -> ModelRequest:
    base = {
        "model": "m/with:colon",
        "system": "Be brief.",
        "messages": (Message("user", "hi"),),
        "tools": (WEATHER,),
        "temperature": 50,
    }
    return ModelRequest(**{**base, **kw})


async def collect(provider, req=None) -> list:
    return [e async for e in provider.stream(req or request())]


def text_of(events) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def calls_of(events) -> list[ToolCall]:
    return [e for e in events if isinstance(e, ToolCall)]


# ── OpenAI ──────────────────────────────────────────────────────────────────────────────


async def test_openai_text_usage_and_request_shape(session, openai_fake):
    openai_fake.script(oai.stream(oai.text_events(["Hel", "lo", " there"])))
    events = await collect(make_provider(session, conf("openai", openai_fake.base_url)))
    assert text_of(events) == "Hello there"
    assert Usage(12, 7) in events
    assert events[-1] == Stop("end_turn")
    sent = openai_fake.requests[0]
    assert sent["headers"]["Authorization"] == "Bearer sk-test"
    body = sent["json"]
    assert body["model"] == "m/with:colon"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0.5
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert body["tools"][0]["function"]["name"] == "get_weather"
    assert body["tools"][0]["function"]["parameters"] == WEATHER.input_schema


async def test_openai_fragmented_and_parallel_tool_calls(session, openai_fake):
    calls = [
        ("call_a", "get_weather", ['{"ci', 'ty": "Pa', 'ris"}']),
        ("call_b", "get_weather", ["{", '"city"', ': "Oslo"', "}"]),
    ]
    openai_fake.script(oai.stream(oai.tool_events(calls, interleave=True)))
    events = await collect(make_provider(session, conf("openai", openai_fake.base_url)))
    got = calls_of(events)
    assert [(c.id, c.name, c.input) for c in got] == [
        ("call_a", "get_weather", {"city": "Paris"}),
        ("call_b", "get_weather", {"city": "Oslo"}),
    ]
    assert events[-1] == Stop("tool_use")


async def test_openai_tolerates_repeated_ids_whole_calls_and_stop(session, openai_fake):
    # A server repeating id and name on every fragment, and saying "stop" anyway.
    repeated = [
        oai.chunk({"role": "assistant", "content": None}),
        *[
            oai.chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_r",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": frag},
                        }
                    ]
                }
            )
            for frag in ['{"city":', ' "Rome"}']
        ],
        oai.chunk({}, finish="stop"),
        "[DONE]",
    ]
    # A server sending two calls whole in one chunk, without `index`, and no [DONE].
    whole = [
        oai.chunk(
            {
                "tool_calls": [
                    {"id": "w1", "function": {"name": "get_weather", "arguments": '{"city":"A"}'}},
                    {"id": "w2", "function": {"name": "get_weather", "arguments": '{"city":"B"}'}},
                ]
            },
        ),
        oai.chunk({}, finish="tool_calls"),
    ]
    openai_fake.script(oai.stream(repeated), oai.stream(whole))
    provider = make_provider(session, conf("openai", openai_fake.base_url))
    first = calls_of(await collect(provider))
    assert [(c.id, c.input) for c in first] == [("call_r", {"city": "Rome"})]
    second = calls_of(await collect(provider))
    assert [(c.id, c.input) for c in second] == [("w1", {"city": "A"}), ("w2", {"city": "B"})]


async def test_openai_bad_arguments_become_none_input(session, openai_fake):
    openai_fake.script(oai.stream(oai.tool_events([("c1", "get_weather", ['{"city": '])])))
    got = calls_of(await collect(make_provider(session, conf("openai", openai_fake.base_url))))
    assert got[0].input is None and got[0].raw_arguments == '{"city": '


@pytest.mark.parametrize("crlf", [False, True])
@pytest.mark.parametrize("space", [False, True])
async def test_openai_framing_and_json_split_across_writes(session, openai_fake, crlf, space):
    raw = oai.encode(oai.text_events(["Split ", "across ", "writes"]), crlf=crlf, space=space)
    openai_fake.script(Reply(writes=split_every(raw, 7), pause=0.001))
    events = await collect(make_provider(session, conf("openai", openai_fake.base_url)))
    assert text_of(events) == "Split across writes"


async def test_openai_retries_429_honouring_retry_after(session, openai_fake):
    openai_fake.script(oai.rate_limited("1"), oai.stream(oai.text_events(["ok"])))
    started = time.monotonic()
    events = await collect(make_provider(session, conf("openai", openai_fake.base_url)))
    assert text_of(events) == "ok"
    assert time.monotonic() - started >= 0.9
    assert len(openai_fake.requests) == 2


async def test_openai_retries_5xx_then_gives_up(session, openai_fake):
    openai_fake.script(oai.server_error(503), oai.server_error(500), oai.server_error(502))
    provider = make_provider(session, conf("openai", openai_fake.base_url, max_retries=2))
    with pytest.raises(ProviderError) as info:
        await collect(provider)
    assert "502" in info.value.message and "The server had an error" in info.value.message
    assert len(openai_fake.requests) == 3


async def test_openai_4xx_is_not_retried(session, openai_fake):
    openai_fake.script(Reply(status=401, body={"error": {"message": "Incorrect API key"}}))
    with pytest.raises(ProviderError, match="Incorrect API key"):
        await collect(make_provider(session, conf("openai", openai_fake.base_url)))
    assert len(openai_fake.requests) == 1


async def test_openai_429_exhausted_is_rate_limited(session, openai_fake):
    openai_fake.script(oai.rate_limited(), oai.rate_limited())
    provider = make_provider(session, conf("openai", openai_fake.base_url, max_retries=1))
    with pytest.raises(ProviderError) as info:
        await collect(provider)
    assert info.value.code == "RATE_LIMITED"


async def test_openai_error_chunk_mid_stream(session, openai_fake):
    events = oai.text_events(["partial"])[:2] + [{"error": {"message": "model overloaded"}}]
    openai_fake.script(oai.stream(events))
    got = []
    with pytest.raises(ProviderError, match="model overloaded"):
        async for e in make_provider(session, conf("openai", openai_fake.base_url)).stream(
            request()
        ):
            got.append(e)
    assert text_of(got) == "partial"


async def test_openai_dropped_connection_is_an_error_not_retried(session, openai_fake):
    openai_fake.script(oai.stream(oai.text_events(["cut ", "off"])[:3], drop=True))
    with pytest.raises(ProviderError, match="broke off|ended before"):
        await collect(make_provider(session, conf("openai", openai_fake.base_url)))
    assert len(openai_fake.requests) == 1


async def test_openai_unreachable_provider(session):
    provider = make_provider(session, conf("openai", "http://127.0.0.1:9/v1", max_retries=0))
    with pytest.raises(ProviderError, match="cannot reach"):
        await collect(provider)


async def test_openai_tool_history_is_sent_in_its_format(session, openai_fake):
    openai_fake.script(oai.stream(oai.text_events(["done"])))
    call = ToolCall("call_1", "get_weather", {"city": "Paris"}, '{"city": "Paris"}')
    history = (
        Message("user", "weather?"),
        Message("assistant", "", (call,)),
        Message("tool", "sunny", tool_use_id="call_1", tool_name="get_weather"),
    )
    await collect(
        make_provider(session, conf("openai", openai_fake.base_url)), request(messages=history)
    )
    sent = openai_fake.requests[0]["json"]["messages"]
    assert sent[2]["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
    }
    assert sent[3] == {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}


# ── Anthropic ───────────────────────────────────────────────────────────────────────────


async def test_anthropic_text_usage_and_request_shape(session, anthropic_fake):
    anthropic_fake.script(anth.stream(anth.text_events(["Hel", "lo"])))
    provider = make_provider(session, conf("anthropic", anthropic_fake.base_url, max_tokens=321))
    events = await collect(provider, request(temperature=100))
    assert text_of(events) == "Hello"
    assert Usage(25, 15) in events
    assert events[-1] == Stop("end_turn")
    sent = anthropic_fake.requests[0]
    assert sent["headers"]["x-api-key"] == "sk-test"
    assert sent["headers"]["anthropic-version"] == "2023-06-01"
    body = sent["json"]
    assert body["max_tokens"] == 321 and body["temperature"] == 1.0
    assert body["system"] == "Be brief." and body["stream"] is True
    assert body["tools"][0]["input_schema"] == WEATHER.input_schema
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
async def test_anthropic_base_url_with_or_without_v1(session, anthropic_fake, suffix):
    """Item 14: what ANTHROPIC_BASE_URL holds (no /v1) works, as does our /v1 spelling."""
    anthropic_fake.script(anth.stream(anth.text_events(["Hi"])))
    base_url = anthropic_fake.url + suffix
    events = await collect(make_provider(session, conf("anthropic", base_url)))
    assert text_of(events) == "Hi"
    assert [r["path"] for r in anthropic_fake.requests] == ["/v1/messages"]


async def test_chat_through_an_anthropic_provider_configured_sdk_style(make_client, anthropic_fake):
    """The address as the Anthropic SDK takes it, in the service's configuration."""
    client = await make_client(
        providers={"claude": {"kind": "anthropic", "base_url": anthropic_fake.url, "api_key": "k"}}
    )
    auth = bearer(await new_api_key(client))
    resp = await client.post(
        "/api/v1/agents", json={"name": "A", "model": "claude/claude-fake-1"}, headers=auth
    )
    agent_id = (await resp.json())["data"]["id"]
    anthropic_fake.script(anth.stream(anth.text_events(["Bonjour"])))
    body = {"agentId": agent_id, "messages": [{"role": "user", "content": "hi"}]}
    resp = await client.post("/api/v1/chat", json=body, headers=auth)
    assert resp.status == 200 and "Bonjour" in await resp.text()
    assert anthropic_fake.requests[0]["path"] == "/v1/messages"


def test_anthropic_messages_url_keeps_a_gateway_prefix():
    assert messages_url("https://api.anthropic.com") == "https://api.anthropic.com/v1/messages"
    assert messages_url("https://api.anthropic.com/v1") == "https://api.anthropic.com/v1/messages"
    assert (
        messages_url("https://gw.example/anthropic") == "https://gw.example/anthropic/v1/messages"
    )
    assert messages_url("https://gw.example/anthropic/V1/") == (
        "https://gw.example/anthropic/V1/messages"
    )


async def test_openai_base_url_is_what_openai_base_url_holds(session, openai_fake):
    """The openai kind takes OPENAI_BASE_URL's value (with /v1) and adds /chat/completions."""
    assert openai_fake.base_url.endswith("/v1")
    openai_fake.script(oai.stream(oai.text_events(["Hi"])))
    events = await collect(make_provider(session, conf("openai", openai_fake.base_url + "/")))
    assert text_of(events) == "Hi"
    assert [r["path"] for r in openai_fake.requests] == ["/v1/chat/completions"]


async def test_anthropic_text_then_parallel_tool_calls(session, anthropic_fake):
    calls = [
        ("toolu_1", "get_weather", ['{"city"', ': "Par', 'is"}']),
        ("toolu_2", "get_weather", ["", '{"city": "Oslo"}']),
    ]
    anthropic_fake.script(anth.stream(anth.tool_events(calls, text="Let me check.")))
    events = await collect(make_provider(session, conf("anthropic", anthropic_fake.base_url)))
    assert text_of(events) == "Let me check."
    assert [(c.id, c.input) for c in calls_of(events)] == [
        ("toolu_1", {"city": "Paris"}),
        ("toolu_2", {"city": "Oslo"}),
    ]
    assert events[-1] == Stop("tool_use")


async def test_anthropic_tool_call_without_arguments(session, anthropic_fake):
    anthropic_fake.script(anth.stream(anth.tool_events([("toolu_x", "get_weather", [])])))
    got = calls_of(
        await collect(make_provider(session, conf("anthropic", anthropic_fake.base_url)))
    )
    assert got[0].input == {}


@pytest.mark.parametrize("crlf", [False, True])
async def test_anthropic_crlf_and_split_json(session, anthropic_fake, crlf):
    raw = anth.encode(anth.tool_events([("toolu_1", "get_weather", ['{"city": "Nice"}'])]), crlf)
    anthropic_fake.script(Reply(writes=split_every(raw, 5), pause=0.0005))
    got = calls_of(
        await collect(make_provider(session, conf("anthropic", anthropic_fake.base_url)))
    )
    assert got[0].input == {"city": "Nice"}


async def test_anthropic_error_event_mid_stream(session, anthropic_fake):
    events = [anth.message_start(), *anth.text_block(0, ["Half"])[:3], anth.error_event()]
    anthropic_fake.script(anth.stream(events))
    got = []
    with pytest.raises(ProviderError, match="Overloaded"):
        async for e in make_provider(session, conf("anthropic", anthropic_fake.base_url)).stream(
            request()
        ):
            got.append(e)
    assert text_of(got) == "Half"


async def test_anthropic_529_and_429_retried(session, anthropic_fake):
    anthropic_fake.script(
        anth.overloaded(), anth.rate_limited("0"), anth.stream(anth.text_events(["ok"]))
    )
    events = await collect(make_provider(session, conf("anthropic", anthropic_fake.base_url)))
    assert text_of(events) == "ok" and len(anthropic_fake.requests) == 3


async def test_anthropic_dropped_connection(session, anthropic_fake):
    anthropic_fake.script(anth.stream(anth.text_events(["a", "b"])[:4], drop=True))
    with pytest.raises(ProviderError, match="broke off|ended before"):
        await collect(make_provider(session, conf("anthropic", anthropic_fake.base_url)))


async def test_anthropic_merges_turns_and_sends_tool_results(session, anthropic_fake):
    anthropic_fake.script(anth.stream(anth.text_events(["fine"])))
    a = ToolCall("toolu_a", "get_weather", {"city": "A"})
    b = ToolCall("toolu_b", "get_weather", {"city": "B"})
    history = (
        Message("user", "one"),
        Message("user", "two"),
        Message("assistant", "checking", (a, b)),
        Message("tool", "sunny", tool_use_id="toolu_a", tool_name="get_weather"),
        Message("tool", "boom", tool_use_id="toolu_b", tool_name="get_weather", is_error=True),
    )
    await collect(
        make_provider(session, conf("anthropic", anthropic_fake.base_url)),
        request(messages=history),
    )
    sent = anthropic_fake.requests[0]["json"]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert len(sent[0]["content"]) == 2
    assert sent[1]["content"][1] == {
        "type": "tool_use",
        "id": "toolu_a",
        "name": "get_weather",
        "input": {"city": "A"},
    }
    assert sent[2]["content"][1] == {
        "type": "tool_result",
        "tool_use_id": "toolu_b",
        "content": "boom",
        "is_error": True,
    }


# ── The fakes are faithful: the official SDKs read them ─────────────────────────────────


async def test_official_openai_sdk_reads_the_fake(openai_fake):
    import openai

    calls = [
        ("call_a", "get_weather", ['{"ci', 'ty": "Paris"}']),
        ("call_b", "get_weather", ['{"city": "Oslo"}']),
    ]
    openai_fake.script(
        oai.stream(oai.text_events(["Hello", " world"])),
        oai.stream(oai.tool_events(calls, interleave=True)),
    )
    client = openai.AsyncOpenAI(base_url=openai_fake.base_url, api_key="sk-test", max_retries=0)
    try:
        text, usage = [], None
        stream = await client.chat.completions.create(
            model=oai.MODEL,
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        async for chunk in stream:
            if chunk.usage is not None:
                usage = chunk.usage
            for choice in chunk.choices:
                text.append(choice.delta.content or "")
        assert "".join(text) == "Hello world"
        assert usage is not None and usage.prompt_tokens == 12

        args: dict[int, str] = {}
        names: dict[int, str] = {}
        stream = await client.chat.completions.create(
            model=oai.MODEL, messages=[{"role": "user", "content": "weather"}], stream=True
        )
        async for chunk in stream:
            for choice in chunk.choices:
                for tc in choice.delta.tool_calls or ():
                    if tc.function and tc.function.name:
                        names[tc.index] = tc.function.name
                    args[tc.index] = args.get(tc.index, "") + (tc.function.arguments or "")
        assert names == {0: "get_weather", 1: "get_weather"}
        assert args == {0: '{"city": "Paris"}', 1: '{"city": "Oslo"}'}
    finally:
        await client.close()


async def test_official_anthropic_sdk_reads_the_fake(anthropic_fake):
    import anthropic

    anthropic_fake.script(
        anth.stream(
            anth.tool_events([("toolu_1", "get_weather", ['{"ci', 'ty": "Paris"}'])], "Ok.")
        )
    )
    client = anthropic.AsyncAnthropic(base_url=anthropic_fake.url, api_key="sk-test", max_retries=0)
    try:
        async with client.messages.stream(
            model=anth.MODEL, max_tokens=100, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            message = await stream.get_final_message()
        assert message.stop_reason == "tool_use"
        assert message.content[0].type == "text" and message.content[0].text == "Ok."
        assert message.content[1].type == "tool_use"
        assert message.content[1].input == {"city": "Paris"}
        assert message.usage.output_tokens == 40
    finally:
        await client.close()
