"""Whether an answer passes a case: its words (by stem, in the agent's language) and, with
a judge model, the judge's verdict on it against the expected answer.

Without a judge: every `mustInclude` entry's words are in the answer, no `mustNotInclude`
entry's words all are, and a case that gives only `expected` needs EXPECTED_SHARE of the
expected answer's words (stop words aside). With a judge, the judge reads the question,
the expected answer and the answer, and replies in JSON (`{"pass", "reason"}`) by the
rubric below; a reply that is not such a verdict, or no reply, fails the case with a
reason, never the run.
"""

from __future__ import annotations

import re

import orjson

from agentsvc.language import stems
from agentsvc.llm.base import Message, ModelRequest, ProviderError, Providers
from agentsvc.services.evals.answering import Completed, complete
from agentsvc.store.evals import EvalCase

EXPECTED_SHARE = 0.8
MAX_WORDS = 5_000  # an answer's distinct words looked at (bounded work per case)
MAX_REASON_CHARS = 500
RUBRIC = (
    "You grade a support assistant's answer against the answer its team expects.\n"
    "Pass it when it gives the facts of the expected answer and contradicts none of them;"
    " wording, length, order and politeness do not matter. Fail it when it leaves out a fact"
    " the expected answer gives, states something the expected answer contradicts, or says"
    " it does not know.\n"
    'Reply with one JSON object and nothing else: {"pass": true or false, "reason": "one'
    ' short sentence saying why"}.'
)
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def _quoted(texts: list[str]) -> str:
    return ", ".join(f'"{t}"' for t in texts)


def word_checks(answer: str, case: EvalCase, language: str) -> list[str]:
    """What the answer fails of the case's word checks (empty: it passes them)."""
    found = stems(answer, language, MAX_WORDS)
    problems = []
    missing = [t for t in case.must_include if not stems(t, language) <= found]
    if missing:
        problems.append(f"it does not say {_quoted(missing)}")
    said = [t for t in case.must_not_include if (words := stems(t, language)) and words <= found]
    if said:
        problems.append(f"it says {_quoted(said)}, which it must not")
    if case.expected and not case.must_include and not case.must_not_include:
        wanted = stems(case.expected, language, MAX_WORDS)
        share = len(wanted & found) / len(wanted) if wanted else 1.0
        if share < EXPECTED_SHARE:
            problems.append(
                f"it holds {share:.0%} of the expected answer's words ({EXPECTED_SHARE:.0%} needed)"
            )
    return problems


async def judge(
    providers: Providers, judge_model: str, case: EvalCase, answer: str
) -> tuple[bool, str, Completed | None]:
    """The judge model's verdict on the answer: (passed, reason, its reply to count)."""
    text = (
        f"Question: {case.question}\n\nExpected answer: {case.expected}\n\n"
        f"Answer to grade: {answer}"
    )
    _, model_name = providers.resolve(judge_model)
    request = ModelRequest(
        model=model_name,
        system=RUBRIC,
        messages=(Message("user", text),),
        temperature=0,
    )
    try:
        reply = await complete(providers, judge_model, request)
    except ProviderError as exc:
        return False, f"The judge could not be asked: {exc}"[:MAX_REASON_CHARS], None
    return *verdict(reply.text), reply


def verdict(reply: str) -> tuple[bool, str]:
    """A judge's reply read as `{"pass": bool, "reason": str}`; anything else fails."""
    match = _OBJECT.search(reply)
    parsed = None
    if match is not None:
        try:
            parsed = orjson.loads(match.group(0))
        except orjson.JSONDecodeError:
            parsed = None
    if (
        not isinstance(parsed, dict)
        or not isinstance(parsed.get("pass"), bool)
        or not isinstance(parsed.get("reason"), str)
    ):
        shown = " ".join(reply.split())[:200]
        return False, f"The judge's reply was not a verdict: {shown!r}"
    reason = " ".join(parsed["reason"].split())[:MAX_REASON_CHARS] or "(no reason given)"
    return parsed["pass"], f"The judge: {reason}"
