"""The one SSE parser: framings, comments, and events split at every possible byte."""

from __future__ import annotations

from agentsvc.llm.sse import SseEvent, SseParser


def parse_all(chunks: list[bytes]) -> list[SseEvent]:
    parser = SseParser()
    events: list[SseEvent] = []
    for c in chunks:
        events += parser.feed(c)
    return events


STREAM = (
    b": a comment, ignored\n"
    b"event: message_start\n"
    b'data: {"a": 1}\n'
    b"\n"
    b'data:{"no": "space"}\n'
    b"\n"
    b"event:ping\n"
    b"data: first\n"
    b"data: second\n"
    b"\n"
)
EXPECTED = [
    SseEvent("message_start", '{"a": 1}'),
    SseEvent("message", '{"no": "space"}'),
    SseEvent("ping", "first\nsecond"),
]


def test_lf_framing_in_one_read():
    assert parse_all([STREAM]) == EXPECTED


def test_crlf_and_cr_framing():
    assert parse_all([STREAM.replace(b"\n", b"\r\n")]) == EXPECTED
    assert parse_all([STREAM.replace(b"\n", b"\r")]) == EXPECTED


def test_every_split_point_gives_the_same_events():
    for framed in (STREAM, STREAM.replace(b"\n", b"\r\n"), STREAM.replace(b"\n", b"\r")):
        for cut in range(1, len(framed)):
            assert parse_all([framed[:cut], framed[cut:]]) == EXPECTED, (framed, cut)


def test_one_byte_at_a_time():
    framed = STREAM.replace(b"\n", b"\r\n")
    assert parse_all([framed[i : i + 1] for i in range(len(framed))]) == EXPECTED


def test_crlf_split_between_cr_and_lf_is_one_line_end():
    # A CR ending one read and an LF starting the next must not make an empty line.
    events = parse_all([b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"])
    assert events == [SseEvent("message", "a\nb")]


def test_no_line_length_limit():
    big = "x" * 3_000_000
    chunks = [b"data: ", big.encode(), b"\n\n"]
    assert parse_all(chunks) == [SseEvent("message", big)]


def test_multibyte_characters_split_across_reads():
    data = 'data: {"t": "héllo ✓"}\n\n'.encode()
    cut = data.index("✓".encode()) + 1
    assert parse_all([data[:cut], data[cut:]]) == [SseEvent("message", '{"t": "héllo ✓"}')]


def test_unterminated_event_is_not_emitted():
    assert parse_all([b"data: partial\n"]) == []


def test_field_without_colon_and_unknown_fields_are_ignored():
    # `id` is kept (live event streams resume after it); `retry` is not used.
    assert parse_all([b"id: 7\nretry: 100\ndata\ndata: x\n\n"]) == [SseEvent("message", "\nx", "7")]
