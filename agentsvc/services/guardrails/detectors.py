"""The built-in kinds of personal data a guardrail redacts: e-mail addresses, phone
numbers, payment card numbers and IBANs.

Each kind is an RE2 pattern that finds candidates in linear time, then a check in Python
that keeps only what really is one: a card number passes the Luhn checksum and starts as
card numbers do, an IBAN passes ISO 13616's mod-97 checksum, a phone number is written as
people write them (international with `+` or `00`, a national number with its leading 0,
or the North American 3-3-4 form) and has 8 to 15 digits. So order numbers, dates, prices,
tracking numbers and version strings stay as they are (tests/data/guardrails has the
corpus of both sides).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False

KINDS = ("email", "phone", "card", "iban")
# Where two finds overlap, the first kind here wins: an IBAN's or a card's digit groups
# also read as a phone number.
PRIORITY = ("iban", "card", "email", "phone")
PLACEHOLDERS = {"email": "[email]", "phone": "[phone]", "card": "[card]", "iban": "[iban]"}

_EMAIL = re2.compile(
    r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,24}\b", _OPTIONS
)
# 13 to 19 digits: solid, in groups of four (the last group shorter), or as 4-6-5 and
# 4-6-4 (American Express, Diners), with spaces or dashes.
_CARD = re2.compile(
    r"\b(?:\d{4}[ \-]\d{4}[ \-]\d{4}[ \-]\d{4}[ \-]\d{3}"
    r"|\d{4}[ \-]\d{4}[ \-]\d{4}[ \-]\d{1,4}"
    r"|\d{4}[ \-]\d{6}[ \-]\d{4,5}"
    r"|\d{13,19})\b",
    _OPTIONS,
)
# Two letters, two check digits, then up to 30 letters and digits, in groups of four with
# single spaces or solid. Checked (and shortened, when a word was taken along) below.
_IBAN = re2.compile(r"(?i)\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{1,4}){3,8}\b", _OPTIONS)
_PHONE = re2.compile(
    # international: +CC or 00CC, then groups (one may be in parentheses: "+44 (0)20 ...")
    r"(?:\+|\b00)[1-9]\d{0,2}(?:[ .\-]?(?:\(\d{1,4}\)|\d{1,5})){1,7}\b"
    # national, with the trunk prefix 0: "020 7946 0958", "06 12 34 56 78", "0151/1234567"
    r"|\b0[1-9]\d{0,4}(?:[ .\-/]?\d{2,8}){0,5}\b"
    # North American: "(555) 123-4567", "555-123-4567", "555.123.4567", "1-800-555-0199"
    r"|(?:\b1[ .\-])?(?:\(\d{3}\) ?|\b\d{3}[.\-])\d{3}[.\-]\d{4}\b",
    _OPTIONS,
)
# A card number's first digits: Visa 4, Mastercard 2 and 5, American Express and Diners
# and JCB 3, Discover and UnionPay 6 (issuer ranges beyond that change too often to list).
_CARD_FIRST_DIGITS = frozenset("23456")


# A number right after one of these words is what the word says, not a card or a phone
# ("EAN 5901234123457", "order #4111111111111111", "tracking: 555-123-4567").
_LABELS = frozenset(
    "order invoice tracking sku ean gtin upc isbn ref reference ticket case booking serial"
    " part model".split()
)
_GAP = " \t\n:#.-"


def _labelled(text: str, start: int) -> bool:
    """Whether the number at `start` follows "#" or a word that names it (_LABELS)."""
    before = text[max(0, start - 32) : start]
    head = before.rstrip(_GAP)
    if "#" in before[len(head) :]:
        return True
    words = head.split()
    word = words[-1].casefold() if words else ""
    return word in _LABELS or word.rstrip("s") in _LABELS


def luhn_ok(digits: str) -> bool:
    """Whether a string of digits passes the Luhn checksum."""
    total = 0
    for i, char in enumerate(reversed(digits)):
        d = ord(char) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def iban_ok(compact: str) -> bool:
    """Whether an IBAN without spaces passes ISO 13616's mod-97 check (and is 15 to 34
    characters, the lengths countries use)."""
    if not 15 <= len(compact) <= 34:
        return False
    moved = (compact[4:] + compact[:4]).upper()
    number = "".join(str(int(c, 36)) for c in moved)
    return int(number) % 97 == 1


def _joins(two: str) -> bool:
    """Whether two characters next to a number (the nearer first) join it to more digits."""
    return len(two) == 2 and two[0] in " -" and two[1].isdigit()


def _is_card(text: str, start: int, end: int) -> bool:
    # After a "+" (a phone number), or part of a longer run of digit groups ("9400 1000
    # 0000 0000 0000 00", a tracking number): not a card.
    before = text[max(0, start - 2) : start]
    after = text[end : end + 2]
    if before.endswith("+") or _joins(before[::-1]) or _joins(after):
        return False
    candidate = text[start:end]
    separators = {c for c in candidate if not c.isdigit()}
    digits = candidate.replace(" ", "").replace("-", "")
    return (
        not _labelled(text, start)
        and len(separators) <= 1
        and 13 <= len(digits) <= 19
        and digits[0] in _CARD_FIRST_DIGITS
        and luhn_ok(digits)
    )


def _iban_end(text: str, start: int, end: int) -> int | None:
    """Where the IBAN starting at `start` ends: the candidate, or the longest of its
    leading groups that passes the check (a word after it may have been taken along)."""
    groups = text[start:end].split(" ")
    for count in range(len(groups), 0, -1):
        compact = "".join(groups[:count])
        if iban_ok(compact):
            return start + len(" ".join(groups[:count]))
    return None


def _is_phone(text: str, start: int, end: int) -> bool:
    candidate = text[start:end]
    digits = sum(c.isdigit() for c in candidate)
    if not 8 <= digits <= 15 or _labelled(text, start):
        return False
    if candidate[0] != "+" and _joins(text[max(0, start - 2) : start][::-1]):
        return False  # the end of a longer run of groups ("DE89 3704 0044 0532 ...")
    if candidate[0] in "+(" or candidate.startswith("00") or "(" in candidate:
        return True
    separators = {c for c in candidate if not c.isdigit()}
    if candidate[0] == "0":
        # A national number uses one kind of separator ("01-02-2024 10" is a date and a
        # time) and has at least nine digits (dates written 01.02.2024 have eight).
        return len(separators) <= 1 and digits >= 9
    return len(separators) == 1  # 555-123-4567, not 555-123.4567


def _spans_of(pattern: object, text: str, accept: Callable[[str, int, int], int | None]):
    for match in pattern.finditer(text):  # type: ignore[attr-defined]
        start, end = match.span()
        found = accept(text, start, end)
        if found:
            yield start, found


def _card(text: str, start: int, end: int) -> int | None:
    return end if _is_card(text, start, end) else None


def _phone(text: str, start: int, end: int) -> int | None:
    return end if _is_phone(text, start, end) else None


def _email(text: str, start: int, end: int) -> int | None:
    return end


def find(kind: str, text: str) -> Iterator[tuple[int, int]]:
    """The (start, end) of each `kind` found in the text, in order."""
    if kind == "email":
        if "@" in text:
            yield from _spans_of(_EMAIL, text, _email)
    elif kind == "card":
        yield from _spans_of(_CARD, text, _card)
    elif kind == "iban":
        yield from _spans_of(_IBAN, text, _iban_end)
    elif kind == "phone":
        yield from _spans_of(_PHONE, text, _phone)
