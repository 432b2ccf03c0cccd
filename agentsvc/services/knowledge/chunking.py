"""Split a document's text into passages along its headings and paragraphs.

A passage never spans two sections. Within a section, paragraphs are packed up to
`TARGET_WORDS`; a paragraph longer than `MAX_WORDS` is cut between sentences; each passage
after the first of a section starts with the last sentence(s) of the one before (up to
`OVERLAP_WORDS`), so an answer that straddles a cut is still found whole in one passage.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

TARGET_WORDS = 200
MAX_WORDS = 300
OVERLAP_WORDS = 40
HEADING_SEPARATOR = " › "

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+")


@dataclass(frozen=True, slots=True)
class Chunk:
    heading: str
    text: str


@dataclass(slots=True)
class _Section:
    path: list[str]
    paragraphs: list[str]


def _sections(text: str) -> Iterator[_Section]:
    """Walk the text: Markdown headings open sections; blank lines end paragraphs."""
    path: list[tuple[int, str]] = []
    section = _Section([], [])
    lines: list[str] = []
    fenced = False

    def end_paragraph() -> None:
        if lines:
            paragraph = "\n".join(lines).strip()
            if paragraph:
                section.paragraphs.append(paragraph)
            lines.clear()

    for line in text.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
            lines.append(line)
            continue
        heading = None if fenced else _HEADING.match(line)
        if heading:
            end_paragraph()
            if section.paragraphs:
                yield section
            level = len(heading.group(1))
            path = [(lvl, title) for lvl, title in path if lvl < level]
            path.append((level, heading.group(2).strip()))
            section = _Section([title for _, title in path], [])
        elif not line.strip() and not fenced:
            end_paragraph()
        else:
            lines.append(line)
    end_paragraph()
    if section.paragraphs:
        yield section


def _sentences(paragraph: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(paragraph) if s.strip()]


def _pieces(paragraph: str) -> Iterator[str]:
    """The paragraph itself, or sentence groups of at most MAX_WORDS when it is longer."""
    if len(paragraph.split()) <= MAX_WORDS:
        yield paragraph
        return
    group: list[str] = []
    size = 0
    for sentence in _sentences(paragraph):
        words = sentence.split()
        if len(words) > MAX_WORDS:
            # A "sentence" this long has no punctuation to cut at: cut between words.
            if group:
                yield " ".join(group)
                group, size = [], 0
            for start in range(0, len(words), TARGET_WORDS):
                yield " ".join(words[start : start + TARGET_WORDS])
            continue
        if size + len(words) > TARGET_WORDS and group:
            yield " ".join(group)
            group, size = [], 0
        group.append(sentence)
        size += len(words)
    if group:
        yield " ".join(group)


def _tail(text: str) -> str:
    """The last sentence(s) of a passage, up to OVERLAP_WORDS, for the next one to repeat."""
    picked: list[str] = []
    size = 0
    for sentence in reversed(_sentences(text)):
        n = len(sentence.split())
        if size + n > OVERLAP_WORDS:
            break
        picked.insert(0, sentence)
        size += n
    if not picked:
        return " ".join(text.split()[-OVERLAP_WORDS:])
    return " ".join(picked)


def _pack(paragraphs: list[str]) -> Iterator[str]:
    pieces = [piece for p in paragraphs for piece in _pieces(p)]
    current: list[str] = []
    size = 0
    for piece in pieces:
        n = len(piece.split())
        if current and size + n > TARGET_WORDS:
            passage = "\n\n".join(current)
            yield passage
            overlap = _tail(passage)
            current, size = [overlap], len(overlap.split())
        current.append(piece)
        size += n
    if current:
        yield "\n\n".join(current)


def chunk(text: str, title: str = "") -> list[Chunk]:
    """Split text into passages; each carries its heading path, led by the document title."""
    chunks: list[Chunk] = []
    for section in _sections(text):
        path = [h for h in section.path if h.casefold() != title.casefold()]
        heading = HEADING_SEPARATOR.join([title, *path] if title else path)
        chunks.extend(Chunk(heading, passage) for passage in _pack(section.paragraphs))
    return chunks
