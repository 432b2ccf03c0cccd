"""A shop with realistic data for the dashboard's page tour: a named agent with knowledge, a
few conversations, a contact form with a submission, an HTTP tool, a trigger and a webhook."""

from __future__ import annotations

from dataclasses import dataclass

from tests.support.dashboard_stack import Stack, chat_as_key, owner_key, public_post, wait_for

PROMPT = "You are the friendly assistant of Harbour Coffee, a roastery in Bristol."
HOURS = "## Opening hours\nThe shop opens at eight and closes at six, Monday to Saturday.\n"
# Visitors the shop's site signed in (an API key vouches for their names and e-mails).
QUESTIONS = (
    ("When does the shop open on Saturday?", "u-101", "Ada Byron", "ada@example.org"),
    ("Do you ship beans to Ireland?", "u-102", "Niall Murphy", "niall@example.ie"),
    ("Can I change the grind of my order?", "u-103", "Grace Hopper", "grace@example.com"),
)
CONTACT_FORM = {
    "fields": [
        {"name": "name", "label": "Your name", "type": "text"},
        {
            "name": "email",
            "label": "E-mail",
            "type": "email",
            "validation": {"required": {"value": True}},
        },
        {
            "name": "topic",
            "label": "Topic",
            "type": "select",
            "options": [
                {"label": "An order", "value": "order"},
                {"label": "Wholesale", "value": "wholesale"},
            ],
        },
        {"name": "message", "label": "Message", "type": "textarea"},
    ],
    "submitLabel": "Send",
}


@dataclass(frozen=True)
class Shop:
    """The ids of what the tour visits."""

    agent: str
    document: str
    conversation: str
    form: str
    tool: str
    trigger: str
    webhook: str
    submission: str


def _made(stack: Stack, key: str, path: str, body: dict) -> str:
    """POST through the API; the new item's id (enveloped answers and bare ones alike)."""
    answer = stack.api("POST", path, key, body)
    return (answer["data"] if "error" in answer else answer)["id"]


def open_shop(stack: Stack) -> Shop:
    """Create the shop through the API, as its owner would have over a first week."""
    key = owner_key(stack)
    agent = _made(
        stack, key, "/agents", {"name": "Harbour Coffee assistant", "systemPrompt": PROMPT}
    )
    document = _made(
        stack, key, f"/agents/{agent}/documents", {"title": "Opening hours", "content": HOURS}
    )
    # First, so that the conversations below are delivered to it.
    webhook = _made(
        stack,
        key,
        "/webhooks",
        {"url": stack.receiver_url + "/crm", "events": ["conversation.created"]},
    )
    for question, user_id, name, email in QUESTIONS:
        chat_as_key(stack, key, agent, question, user={"id": user_id, "name": name, "email": email})
    conversation = stack.api("GET", f"/conversations?agentId={agent}", key)["data"][0]["id"]
    form = _made(stack, key, "/tools", _contact_form(agent, stack.receiver_url))
    stack.api("PUT", "/secrets/STOCK_API_KEY", key, {"value": "stock-key-for-the-tour"})
    tool = _made(stack, key, "/tools", _stock_tool(agent))
    submitted = public_post(
        stack,
        "/form-submissions/submit",
        {
            "toolId": form,
            "formData": {"name": "Ada", "email": "ada@example.org", "topic": "wholesale"},
            "fieldsCompleted": ["name", "email", "topic"],
        },
    )
    submission = submitted["submissionId"]
    sent = f"/form-submissions/{submission}"
    wait_for(lambda: stack.api("GET", sent, key).get("status", "pending") != "pending")
    trigger = _made(
        stack,
        key,
        f"/triggers?agentId={agent}",
        {
            "name": "Help on the pricing page",
            "triggerType": "time_on_page",
            "conditions": {"timeOnPage": 20},
            "actionType": "open_chat",
            "actionConfig": {"message": "Choosing beans? I can help."},
        },
    )
    return Shop(agent, document, conversation, form, tool, trigger, webhook, submission)


def _contact_form(agent: str, receiver: str) -> dict:
    return {
        "agentId": agent,
        "name": "contact_us",
        "description": "Take a visitor's question for the team",
        "executionType": "form",
        "inputSchema": {"type": "object", "properties": {}},
        "formSchema": CONTACT_FORM,
        "formExecutionMode": "webhook",
        "formWebhookUrl": receiver + "/contact",
    }


def _stock_tool(agent: str) -> dict:
    return {
        "agentId": agent,
        "name": "check_stock",
        "description": "Whether a coffee is in stock",
        "executionType": "http",
        "inputSchema": {
            "type": "object",
            "properties": {"coffee": {"type": "string", "description": "The coffee's name"}},
            "required": ["coffee"],
        },
        "httpUrl": "https://api.harbour-coffee.example/stock/{coffee}",
        "httpMethod": "POST",
        "httpHeaders": {"Authorization": "Bearer {{STOCK_API_KEY}}", "Accept": "application/json"},
    }
