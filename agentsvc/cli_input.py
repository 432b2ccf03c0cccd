"""What the command line reads: options checked by the API's own rules, and passwords."""

from __future__ import annotations

import getpass
import sys
from typing import Any, TextIO

from pydantic import BaseModel, ConfigDict, ValidationError

from agentsvc.input_types import CallbackUrl, Email, KeyName, NewPassword, OptionalDisplayName
from agentsvc.passwords import MAX_PASSWORD_LENGTH
from agentsvc.validation_messages import describe_validation_error


class UsageError(Exception):
    """A bad option value: one line on stderr and exit status 2, as argparse does."""


class Options(BaseModel):
    """The option values a command takes, with the types the API validates them with."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    email: Email | None = None
    name: OptionalDisplayName | None = None
    key_name: KeyName | None = None
    password: NewPassword | None = None
    callback: CallbackUrl | None = None


def checked(**values: Any) -> Options:
    """Validate option values (by Python name) as the API would; raise UsageError naming one."""
    data = {name: value for name, value in values.items() if value is not None}
    try:
        return Options.model_validate(data)
    except ValidationError as exc:
        # Options are optional in the model only: on the command line there is no null.
        message = describe_validation_error(exc, "--", Options).replace(", or null", "")
        for name in Options.model_fields:
            # Messages name the options as typed (`--key-name`).
            message = message.replace(f"--{name}:", f"--{name.replace('_', '-')}:")
        raise UsageError(message) from exc


def checked_plan(plan: str, plans: dict[str, Any]) -> str:
    """A plan id of the configuration, else UsageError listing the plans."""
    if plan not in plans:
        raise UsageError(f"--plan: unknown plan {plan!r}; plans: {', '.join(sorted(plans))}")
    return plan


def read_password(from_stdin: bool, stdin: TextIO | None = None) -> str:
    """Read a new password from one line of stdin, or ask twice on the terminal; never argv."""
    stdin = stdin or sys.stdin
    if from_stdin:
        # Bounded: a password is at most MAX_PASSWORD_LENGTH characters.
        line = stdin.readline(MAX_PASSWORD_LENGTH + 2)
        password = line[:-1] if line.endswith("\n") else line
        password = password[:-1] if password.endswith("\r") else password
    elif stdin.isatty():
        password = getpass.getpass("New password: ")
        if getpass.getpass("The same password again: ") != password:
            raise UsageError("the two passwords differ; nothing was changed")
    else:
        raise UsageError(
            "no terminal to ask for the password: pass it on stdin with --password-stdin"
        )
    return checked(password=password).password or ""
