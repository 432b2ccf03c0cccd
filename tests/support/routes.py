"""Paths of documented endpoints, filled in for a test."""

from __future__ import annotations


def fill_path(endpoint, values: dict[str, str]) -> str:
    """An endpoint's full path with its parameters filled from `values`; a missing one gets
    an id that matches the route's pattern but names nothing (`tool_missing`)."""
    from agentsvc.api.routing import PATH_PARAM

    def value(match) -> str:
        name, pattern = match.group(1), match.group(2) or ""
        if name in values:
            return values[name]
        prefix = pattern.split("[", 1)[0] if pattern.split("[", 1)[0].endswith("_") else ""
        return f"{prefix}missing_id"

    return PATH_PARAM.sub(value, endpoint.full_path)
