"""Guardrails' redaction and matching, on their own: the corpus of personal data that must
be replaced (cards, IBANs, phone numbers, e-mail addresses, in the forms people write them)
and of what a shop's chat is full of that must not be (order numbers, dates, prices,
tracking numbers, versions); the checksums; words and patterns; the streamed answer's
hold-back."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from agentsvc.services.guardrails import answers, detectors, rules, screening, settings
from tests.support.guardrails import ALL_KINDS, CORPUS

EVERY_KIND = settings.guardrails_of({"redact": {"kinds": ALL_KINDS, "patterns": []}})


@pytest.mark.parametrize("item", CORPUS["redact"], ids=lambda i: i["text"][:40])
def test_personal_data_is_redacted_in_every_form(item):
    found = EVERY_KIND.redact(item["text"])
    placeholder = detectors.PLACEHOLDERS[item["kind"]]
    assert found.text == item["text"].replace(item["found"], placeholder)
    assert dict(found.counts) == {item["kind"]: 1}


def test_the_corpus_has_ten_forms_of_each_kind_that_matters():
    kinds = [item["kind"] for item in CORPUS["redact"]]
    assert kinds.count("card") >= 10 and kinds.count("phone") >= 10 and kinds.count("iban") >= 6
    assert len(CORPUS["keep"]) >= 40


@pytest.mark.parametrize("text", CORPUS["keep"])
def test_order_numbers_dates_prices_tracking_and_versions_are_kept(text):
    found = EVERY_KIND.redact(text)
    assert (found.text, dict(found.counts)) == (text, {})


def test_the_whole_corpus_at_once():
    text = "\n".join([i["text"] for i in CORPUS["redact"]] + CORPUS["keep"])
    found = EVERY_KIND.redact(text)
    assert sum(found.counts.values()) == len(CORPUS["redact"])
    for kept in CORPUS["keep"]:
        assert kept in found.text


def test_checksums():
    assert detectors.luhn_ok("4111111111111111") and not detectors.luhn_ok("4111111111111112")
    assert detectors.iban_ok("GB29NWBK60161331926819")
    assert not detectors.iban_ok("GB29NWBK60161331926818")
    assert not detectors.iban_ok("GB29")  # too short for any country
    near = "4111 1111 1111 1112 and DE89 3704 0044 0532 0130 01"  # one digit off each
    assert EVERY_KIND.redact(near).text == near


def test_only_the_kinds_asked_for_and_custom_patterns_by_name():
    found = settings.guardrails_of(
        {
            "redact": {
                "kinds": ["email"],
                "patterns": [{"name": "customer number", "pattern": r"\bCU-\d{6}\b"}],
            }
        }
    ).redact("CU-123456 wrote from a@b.io, card 4111 1111 1111 1111")
    assert found.text == "[customer number] wrote from [email], card 4111 1111 1111 1111"
    assert dict(found.counts) == {"pattern": 1, "email": 1}


def test_an_iban_is_not_also_read_as_a_phone_number():
    found = EVERY_KIND.redact("IBAN DE89 3704 0044 0532 0130 00, phone +44 20 7946 0958")
    assert found.text == "IBAN [iban], phone [phone]"


def test_words_match_whole_in_any_case_and_patterns_as_written():
    rules_ = settings.guardrails_of(
        {
            "blockedTopics": [
                {
                    "name": "legal",
                    "words": ["lawsuit", "small claims"],
                    "patterns": [],
                    "reply": "x",
                },
                {"name": "rivals", "words": [], "patterns": [r"\bAcme\s+Bikes?\b"], "reply": "y"},
            ]
        }
    )
    assert rules_.blocked("I will file a LAWSUIT.")[1].word == "lawsuit"
    assert rules_.blocked("off to Small  Claims court")[1].word == "small claims"
    assert rules_.blocked("lawsuits are costly") is None  # a whole word only
    topic, hit = rules_.blocked("Is Acme Bikes cheaper?")
    assert (topic.rule.name, hit.pattern) == ("rivals", r"\bAcme\s+Bikes?\b")
    assert rules_.blocked("is acme bikes cheaper?") is None  # patterns keep their case
    assert rules_.blocked("Überweisung") is None


def _streamed(guardrails: dict, text: str, piece: int = 3) -> tuple[str, answers.AnswerGuard]:
    rules_ = settings.guardrails_of(guardrails)
    guard = answers.AnswerGuard(screening._screen(rules_, "hi", True))
    shown = "".join(guard.feed(text[i : i + piece]) for i in range(0, len(text), piece))
    return shown + guard.flush(), guard


MUST = {
    "mustNotSay": {"words": ["guaranteed refund"], "patterns": [r"\bfree\b"], "fallback": "No."}
}


def test_a_streamed_answer_shows_nothing_of_a_forbidden_phrase():
    text = "Good news: " + "you are welcome to return it. " * 10 + "It is a guaranteed refund!"
    shown, guard = _streamed(MUST, text)
    assert guard.hit is not None and guard.hit.word == "guaranteed refund"
    assert "guaranteed" not in shown and text.startswith(shown)
    assert len(shown) <= text.index("guaranteed")
    settled = guard.settled(text, [])
    assert settled.content == "No." and settled.trace.flag and guard.replaced
    assert settled.trace.hits == {"mustNotSay": 1}


def test_a_clean_answer_streams_whole_and_a_match_at_the_very_end_is_caught():
    clean = "We open at nine. " * 20
    shown, guard = _streamed(MUST, clean)
    assert (shown, guard.hit) == (clean, None)
    shown, guard = _streamed(MUST, "Shipping is free")  # \b at the end of the text
    assert guard.hit is not None and shown == ""


def test_without_must_not_say_nothing_is_held_back():
    rules_ = settings.guardrails_of({"redact": {"kinds": ["email"], "patterns": []}})
    guard = answers.AnswerGuard(screening._screen(rules_, "hi", True))
    assert guard.feed("Write to a@b.io") == "Write to a@b.io"
    settled = guard.settled("Write to a@b.io", [{"input": {"to": "a@b.io"}, "output": "sent"}])
    assert settled.content == "Write to [email]"
    assert settled.tool_calls == [{"input": {"to": "[email]"}, "output": "sent"}]
    assert settled.trace.hits == {"email": 2} and not settled.trace.flag


def test_the_guardrails_together_have_a_budget():
    many = [
        {"name": f"t{n}", "words": [f"w{n}x{i}" * 12 for i in range(100)], "reply": "no"}
        for n in range(20)
    ]
    with pytest.raises(rules.TooComplex):
        rules._compile(
            settings.settings_of({"blockedTopics": [settings._checked_topic(0, t) for t in many]})
        )


def test_no_python_re_runs_on_what_tenants_and_visitors_send():
    folder = Path(settings.__file__).parent
    for path in folder.glob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names
        } | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert "re" not in imported, path
