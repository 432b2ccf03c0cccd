"""Which model ids an agent may use: `builtin`, or `PROVIDER/MODEL` of a configured provider."""

from __future__ import annotations

from agentsvc.config import Settings
from agentsvc.llm.base import BUILTIN, split_model_id


def model_error(settings: Settings, model_id: str) -> str | None:
    """Return why a model id cannot be used, or None when it can."""
    if model_id == BUILTIN:
        return None
    provider, model = split_model_id(model_id)
    if not model:
        return f"must be '{BUILTIN}' or PROVIDER/MODEL, got {model_id!r}"
    if provider not in settings.providers:
        known = ", ".join(sorted(settings.providers)) or "none configured"
        return f"unknown provider {provider!r} (providers: {known})"
    return None
