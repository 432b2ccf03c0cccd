"""The channel types: those a conversation can name, and those a channel can be created
with today."""

from __future__ import annotations

# Every type the conversations can name: "web" is the widget (and /chat, MCP `ask`).
CONVERSATION_CHANNELS = ("web", "api", "telegram", "whatsapp", "slack", "email")
# The types a channel can be created with in this version.
AVAILABLE_TYPES = ("api", "telegram", "whatsapp", "slack", "email")
