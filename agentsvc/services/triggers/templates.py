"""Ready-made trigger templates: every trigger type and every action, as starting points."""

from __future__ import annotations

from typing import Any

# `show_form` templates carry an empty `toolId`: the caller fills in one of its form tools.
TEMPLATES: tuple[dict[str, Any], ...] = (
    {
        "id": "welcome-after-30-seconds",
        "name": "Welcome after 30 seconds",
        "description": "Open the chat with a greeting once a visitor has stayed 30 seconds.",
        "triggerType": "time_on_page",
        "conditions": {"timeOnPage": 30},
        "actionType": "open_chat",
        "actionConfig": {"greeting": "Hi! Can I help you find anything?"},
    },
    {
        "id": "engaged-reader-bubble",
        "name": "Engaged reader",
        "description": "Show a bubble when a visitor has read 75% of the page.",
        "triggerType": "scroll_depth",
        "conditions": {"scrollDepth": 75},
        "actionType": "show_bubble",
        "actionConfig": {"message": "Enjoying this? Ask me anything about it.", "duration": 8},
    },
    {
        "id": "exit-intent-offer",
        "name": "Exit intent",
        "description": "Offer help when the mouse leaves the window, before the visitor goes.",
        "triggerType": "exit_intent",
        "conditions": {},
        "actionType": "show_bubble",
        "actionConfig": {"message": "Before you go: any questions we can answer?", "duration": 10},
    },
    {
        "id": "exit-intent-lead-form",
        "name": "Exit intent lead form",
        "description": "Show a form (set toolId to one of your form tools) when a visitor leaves.",
        "triggerType": "exit_intent",
        "conditions": {},
        "actionType": "show_form",
        "actionConfig": {"toolId": ""},
    },
    {
        "id": "pricing-page-help",
        "name": "Pricing page help",
        "description": "Open the chat on the pricing page.",
        "triggerType": "page_view",
        "conditions": {"page": "/pricing"},
        "actionType": "open_chat",
        "actionConfig": {"message": "Questions about plans? I can help you choose."},
    },
    {
        "id": "docs-assistant",
        "name": "Docs assistant",
        "description": "Show a bubble on any documentation page.",
        "triggerType": "page_view",
        "conditions": {"page": "/docs/**"},
        "actionType": "show_bubble",
        "actionConfig": {"message": "Searching the docs? Ask me instead.", "duration": 6},
    },
    {
        "id": "big-cart-contact-form",
        "name": "Big cart contact form",
        "description": "Show a contact form (set toolId) when the cart total passes 500.",
        "triggerType": "custom_event",
        "conditions": {"event": "cart_updated", "eventData": {"total": {"$gte": 500}}},
        "actionType": "show_form",
        "actionConfig": {"toolId": ""},
    },
    {
        "id": "signup-welcome",
        "name": "Welcome new sign-ups",
        "description": 'Open the chat after a "signup" event from a paid plan.',
        "triggerType": "custom_event",
        "conditions": {"event": "signup", "eventData": {"plan": {"$in": ["starter", "pro"]}}},
        "actionType": "open_chat",
        "actionConfig": {"message": "Welcome aboard! Want a quick tour?"},
    },
)


def list_templates() -> list[dict[str, Any]]:
    """Return the trigger templates."""
    return [dict(t) for t in TEMPLATES]
