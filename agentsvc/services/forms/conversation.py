"""Forms filled in the conversation, where no widget can show them (a channel).

The model is offered the form as a function whose arguments are the form's fields, asks
the user for them in the conversation, and calls it once it has the required ones. The
values are then submitted exactly as the submissions API submits them (`FormsService`:
the same checks, files quota, deliveries, post actions, analytics and event webhooks),
linked to the conversation. Refused values store nothing; the model reads the problems
and asks again.

A file cannot be sent in a chat: a form's optional file fields are left out, and a form
with a required one cannot be completed here (its description and its output say so). A
client handler runs in the visitor's browser, which a channel does not have: it never
runs; the webhook and the post actions do, and the submission is stored as the widget's
would be (its `clientResult` stays null).
"""

from __future__ import annotations

from typing import Any

from agentsvc.errors import DomainError
from agentsvc.llm.base import ToolSpec
from agentsvc.services.forms.service import FormsService
from agentsvc.services.forms.submit import SubmitInput
from agentsvc.services.forms.values import FILE_TYPES, FormInvalid
from agentsvc.store.conversations import Conversation
from agentsvc.store.submissions import Submission
from agentsvc.store.tools import Tool

HOW_TO_FILL = (
    "This is a form, and there is no form to show the user here: ask the user for its"
    " fields in the conversation, one or two at a time, and call this tool only once you"
    " have every required field ({required}). Never invent a value. The tool's output says"
    " whether the form was received, or which values to ask for again."
)
# JSON Schema keywords the model is shown for a field's rules (the check itself is
# `check_form`'s, on submit).
_BOUNDS = {"minLength": "minLength", "maxLength": "maxLength", "min": "minimum", "max": "maximum"}
_HINTS = {
    "email": "an e-mail address",
    "tel": "a telephone number",
    "date": "a date, YYYY-MM-DD",
    "datetime": "a date and time, YYYY-MM-DDTHH:MM",
}


def _required(field: dict) -> bool:
    return bool(((field.get("validation") or {}).get("required") or {}).get("value"))


def _fields(tool: Tool) -> list[dict]:
    return list((tool.form_schema or {}).get("fields", []))


def _required_file(tool: Tool) -> dict | None:
    """The first required file field: the form cannot be completed in a chat."""
    return next((f for f in _fields(tool) if f["type"] in FILE_TYPES and _required(f)), None)


def _needs_file(field: dict) -> str:
    label = field.get("label") or field["name"]
    return (
        f'This form needs a file ("{label}"), and files cannot be sent in this conversation:'
        " the form cannot be completed here; the user can fill it in on the website."
    )


def _property(field: dict) -> dict[str, Any]:
    """A field as a JSON Schema property the model reads: type, choices, bounds, and its
    label and description as the property's description."""
    kind = field["type"]
    about = [field.get("label") or field["name"]]
    if field.get("description"):
        about.append(field["description"])
    if kind in ("select", "multiselect"):
        options = field.get("options") or []
        choice: dict[str, Any] = {"enum": [o["value"] for o in options]}
        prop = choice if kind == "select" else {"type": "array", "items": choice}
        about.append("Choices: " + ", ".join(f"{o['value']} ({o['label']})" for o in options))
    else:
        prop = {"type": "number" if kind == "number" else "string"}
        if kind in _HINTS:
            about.append(_HINTS[kind])
    for rule, keyword in _BOUNDS.items():
        bound = ((field.get("validation") or {}).get(rule) or {}).get("value")
        if bound is not None:
            prop[keyword] = bound
    prop["description"] = ". ".join(about)
    return prop


def _received(sub: Submission, schema: dict) -> str:
    text = f'The form "{sub.tool_name}" was received (submission {sub.id}).'
    if schema.get("successMessage"):
        text += f" Its message for the user: {schema['successMessage']}"
    return text + " Tell the user it was received."


def _ask_again(tool: Tool, problems: list[str]) -> str:
    """The refused values as lines the model can turn into questions."""
    lines = [p.removeprefix("formData.") for p in problems]
    return (
        "The form was not submitted and nothing was stored; these values are not valid:\n"
        + "\n".join(f"- {line}" for line in lines)
        + f"\nAsk the user for them again, then call {tool.name} again with every value."
    )


class ConversationForms:
    """Form tools offered and submitted in the conversation (one instance for the app)."""

    def __init__(self, forms: FormsService):
        self._forms = forms

    def spec(self, tool: Tool) -> ToolSpec:
        """The form as a function of its fields (its file fields left out)."""
        blocked = _required_file(tool)
        if blocked is not None:
            text = f"{tool.description}\n\n{_needs_file(blocked)} Do not ask for its fields."
            return ToolSpec(tool.name, text, {"type": "object", "properties": {}})
        fields = [f for f in _fields(tool) if f["type"] not in FILE_TYPES]
        required = [f["name"] for f in fields if _required(f)]
        schema = {
            "type": "object",
            "properties": {f["name"]: _property(f) for f in fields},
            "required": required,
            "additionalProperties": False,
        }
        how = HOW_TO_FILL.format(required=", ".join(required) or "none")
        return ToolSpec(tool.name, f"{tool.description}\n\n{how}", schema)

    async def fill(self, tool: Tool, conv: Conversation, values: dict) -> tuple[str, bool]:
        """Submit the values the model gathered; the model's text and whether it failed."""
        blocked = _required_file(tool)
        if blocked is not None:
            return f"{_needs_file(blocked)} Nothing was submitted.", True
        kinds = {f["name"]: f["type"] for f in _fields(tool)}
        files = [n for n, v in values.items() if kinds.get(n) in FILE_TYPES and v is not None]
        if files:
            return _ask_again(tool, [f"{n}: a file cannot be sent here" for n in files]), True
        given = [n for n, v in values.items() if n in kinds and v not in (None, "", [])]
        data = SubmitInput(
            tool_id=tool.id,
            conversation_id=conv.id,
            session_id=conv.session_id,
            team_id=conv.team_id,  # the conversation's own team: the server submits for it
            form_data=values,
            fields_completed=given,
            impression_at=None,
            started_at=None,
            trigger_id=conv.trigger_id,
        )
        try:
            stored = await self._forms.store_submission(data)
        except FormInvalid as exc:
            return _ask_again(tool, exc.problems), True
        except DomainError as exc:  # disabled or deleted meanwhile, the files quota
            return f"The form could not be submitted: {exc.message}", True
        result = await self._forms.deliver_first(stored)
        return _received(result.submission, tool.form_schema or {}), False
