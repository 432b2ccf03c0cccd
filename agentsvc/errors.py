"""Domain errors: what services raise when a rule refuses something.

Each has a stable `code` (the envelope's `error.code`) and a message for people; none
knows HTTP. `api/errors.py` maps each class to its status and renders the envelope, in
one table.
"""

from __future__ import annotations


class DomainError(Exception):
    """A refusal with a code and a message naming what is wrong."""

    code = "ERROR"
    default_message = "The request could not be completed"

    def __init__(self, message: str | None = None):
        super().__init__(message or self.default_message)
        self.message = message or self.default_message


class ValidationFailed(DomainError):
    code = "VALIDATION_ERROR"
    default_message = "Invalid request"


class DuplicateName(DomainError):
    code = "DUPLICATE_NAME"
    default_message = "Name already in use"


class FileTooLarge(DomainError):
    code = "FILE_TOO_LARGE"
    default_message = "File too large"


class FileQuotaExceeded(DomainError):
    code = "FILE_QUOTA_EXCEEDED"
    default_message = "Storage quota exceeded"


class UnsupportedMediaType(DomainError):
    code = "UNSUPPORTED_MEDIA_TYPE"
    default_message = "Content-Type must be application/json"


class Unauthorized(DomainError):
    code = "UNAUTHORIZED"
    default_message = "Invalid API key"


class Forbidden(DomainError):
    code = "FORBIDDEN"
    default_message = "You do not have permission to do this"


class ToolLimitReached(DomainError):
    code = "TOOL_LIMIT_REACHED"
    default_message = "Tool limit reached for your plan"


class AnswerLimitReached(DomainError):
    code = "ANSWER_LIMIT_REACHED"
    default_message = "The agent has as many curated answers as allowed"


class CannedResponseLimitReached(DomainError):
    code = "CANNED_RESPONSE_LIMIT_REACHED"
    default_message = "The team has as many canned responses as allowed"


class NotFound(DomainError):
    code = "NOT_FOUND"
    default_message = "Not found"


class Conflict(DomainError):
    """The resource is not in a state that allows this (an invitation no longer pending)."""

    code = "CONFLICT"
    default_message = "The resource is not in a state that allows this"


class StorageUnavailable(DomainError):
    """The file storage cannot be used right now (unreachable, or refusing the service);
    what went wrong is in the operator's log."""

    code = "STORAGE_UNAVAILABLE"
    default_message = "Files cannot be stored or read right now; try again shortly"
