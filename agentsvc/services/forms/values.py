"""What a submitted form value may be: checks against the form schema, files, templates."""

from __future__ import annotations

import binascii
import math
import mimetypes
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any
from urllib.parse import unquote

from agentsvc.errors import FileTooLarge, ValidationFailed
from agentsvc.services.tenant_input import patterns as tenant_patterns

MAX_FILE_BYTES = 5 * 1024 * 1024
MAX_TEXT_CHARS = 10_000
MAX_ERRORS = 5
# Above these, checking a form moves off the event loop: decoding a big file, or running
# the tenant's patterns (linear, but a complex one costs ~1 ms per 1,000 characters).
_BIG_VALUE = 64 * 1024
_BIG_PATTERN_TEXT = 4096

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s.]+$")
_TEL = re.compile(r"^\+?[0-9 ().\-/]{3,30}$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})?$")
_TEMPLATE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
FILE_TYPES = ("file", "image")
_MAX_DATA_URL_HEADER = 1024  # characters before the comma of a data URL


@dataclass(frozen=True, slots=True)
class BodyText:
    """A long string of a request's JSON left where it is, in the body buffer (see
    `api.form_body`): its bytes between `start` and `end`, with no escape inside."""

    buffer: bytes | bytearray
    start: int
    end: int

    def text(self) -> str | None:
        """The value as a str (a copy), or None when it is not UTF-8."""
        try:
            return bytes(memoryview(self.buffer)[self.start : self.end]).decode()
        except UnicodeDecodeError:
            return None


@dataclass(slots=True)
class UploadedFile:
    """A file of a form field, still base64 inside the submitted value: it is decoded
    straight to disk (`form_files.write_files`), never held decoded in memory."""

    field: str
    content_type: str
    file_name: str | None
    source: str | bytes | bytearray  # the submitted value, or the body buffer holding it
    start: int  # where its base64 payload begins
    end: int  # and ends
    size: int  # decoded bytes

    @property
    def extension(self) -> str:
        return mimetypes.guess_extension(self.content_type) or ".bin"

    def descriptor(self) -> dict[str, Any]:
        """How the file appears in the stored formData."""
        return {
            "fileName": self.file_name,
            "contentType": self.content_type,
            "size": self.size,
        }

    def chunks(self, chunk_chars: int = 1 << 20) -> Iterator[bytes]:
        """The decoded file, piece by piece (strict base64: a bad piece is a 400)."""
        if chunk_chars % 4:
            raise ValueError("chunk_chars must be a multiple of 4")
        for at in range(self.start, self.end, chunk_chars):
            piece = self.source[at : min(at + chunk_chars, self.end)]
            try:
                yield binascii.a2b_base64(piece, strict_mode=True)
            except ValueError as exc:  # binascii.Error, or text that is not ASCII
                raise ValidationFailed(
                    f"formData.{self.field}: the data URL is not valid base64"
                ) from exc


class FormInvalid(ValidationFailed):
    """Values a form refuses: the problems (at most `MAX_ERRORS`), each naming its field
    (`formData.email: must be an e-mail address`); the message joins them."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(slots=True)
class CheckedForm:
    """Form data as stored (files replaced by descriptors) and the files to write."""

    values: dict[str, Any]
    files: list[UploadedFile] = field(default_factory=list)


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip()) or value == []


def _rule(spec: dict, name: str) -> tuple[Any, str | None]:
    rule = (spec.get("validation") or {}).get(name)
    if rule is None:
        return None, None
    return rule.get("value"), rule.get("message")


def _not_data_url(name: str) -> ValidationFailed:
    return ValidationFailed(f"formData.{name}: must be a base64 data URL (data:...;base64,...)")


def _decode_data_url(name: str, kind: str, value: Any) -> UploadedFile:
    """Check `data:<type>[;name=...];base64,<data>` in place: size, type, base64 shape.

    The payload is never copied: sizes and padding are read where it lies, in the str or
    in the request body (a `BodyText`), and it is decoded later, to disk.
    """
    if isinstance(value, BodyText):
        source: str | bytes | bytearray = value.buffer
        begin, end = value.start, value.end
        head = bytes(source[begin : min(end, begin + _MAX_DATA_URL_HEADER)])
        header = head.decode("ascii", errors="replace")
        pad: Any = b"="
    elif isinstance(value, str):
        source, begin, end = value, 0, len(value)
        header = value[:_MAX_DATA_URL_HEADER]
        pad = "="
        if not value.isascii():
            raise ValidationFailed(f"formData.{name}: the data URL is not valid base64")
    else:
        raise _not_data_url(name)
    comma = header.find(",")
    if not header.startswith("data:") or comma < 0:
        raise _not_data_url(name)
    params = header[len("data:") : comma].split(";")
    if "base64" not in params[1:]:
        raise _not_data_url(name)
    content_type = (params[0] or "application/octet-stream").lower()
    file_name = None
    for param in params[1:]:
        key, _, text = param.partition("=")
        if key.lower() in ("name", "filename") and text:
            file_name = unquote(text)[:255]
    start = begin + comma + 1
    chars = end - start
    tail = source[max(start, end - 2) : end]
    padding = 2 if tail.endswith(pad * 2) else 1 if tail.endswith(pad) else 0
    decoded_size = chars * 3 // 4 - padding
    if decoded_size > MAX_FILE_BYTES:
        raise FileTooLarge(
            f"formData.{name}: the file is over {MAX_FILE_BYTES // (1024 * 1024)} MB"
        )
    if kind == "image" and not content_type.startswith("image/"):
        raise ValidationFailed(f"formData.{name}: must be an image (data:image/...)")
    first_pad = source.find(pad, start, end)
    if chars % 4 or (first_pad >= 0 and first_pad < end - padding):
        raise ValidationFailed(f"formData.{name}: the data URL is not valid base64")
    return UploadedFile(name, content_type, file_name, source, start, end, decoded_size)


def _number(value: Any) -> float | int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            parsed = float(value.strip())
        except ValueError:
            return None
        if not math.isfinite(parsed):
            return None
        return int(parsed) if parsed.is_integer() and "." not in value else parsed
    return None


def _option_values(spec: dict) -> list[Any]:
    return [o["value"] for o in spec.get("options") or []]


def _in_options(value: Any, options: list[Any]) -> Any:
    """The option value matching `value` (a number option also matches its text)."""
    for option in options:
        if type(option) is type(value) and option == value:
            return option
        if isinstance(option, int | float) and isinstance(value, str) and str(option) == value:
            return option
    return _MISSING


_MISSING = object()


def _check_text_rules(spec: dict, value: str) -> str | None:
    minimum, message = _rule(spec, "minLength")
    if minimum is not None and len(value) < minimum:
        return message or f"must be at least {minimum} characters"
    maximum, message = _rule(spec, "maxLength")
    if maximum is not None and len(value) > maximum:
        return message or f"must be at most {maximum} characters"
    pattern, message = _rule(spec, "pattern")
    if pattern is None:
        return None
    try:
        matched = tenant_patterns.fullmatch(pattern, value)
    except tenant_patterns.PatternError:
        # Saved before patterns were checked with RE2: refuse rather than skip the check.
        return "cannot be checked: the form's pattern is not supported (the form must be updated)"
    return None if matched else message or "does not have the expected format"


def _check_value(spec: dict, value: Any) -> tuple[Any, str | None]:
    """Return (stored value, problem) for a non-empty value of a non-file field."""
    kind = spec["type"]
    if kind in ("text", "textarea", "email", "tel", "date", "datetime"):
        if not isinstance(value, str):
            return value, "must be text"
        if len(value) > MAX_TEXT_CHARS:
            return value, f"must be at most {MAX_TEXT_CHARS} characters"
        value = value.strip() if kind not in ("text", "textarea") else value
        if kind == "email" and not _EMAIL.match(value):
            return value, "must be an e-mail address"
        if kind == "tel" and (not _TEL.match(value) or sum(c.isdigit() for c in value) < 3):
            return value, "must be a telephone number"
        if kind == "date":
            try:
                if not _DATE.match(value):
                    raise ValueError
                date.fromisoformat(value)
            except ValueError:
                return value, "must be an ISO date (YYYY-MM-DD)"
        if kind == "datetime":
            try:
                if not _DATETIME.match(value):
                    raise ValueError
                datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                return value, "must be an ISO date and time (YYYY-MM-DDTHH:MM[:SS][Z])"
        return value, _check_text_rules(spec, value)
    if kind == "number":
        number = _number(value)
        if number is None:
            return value, "must be a number"
        minimum, message = _rule(spec, "min")
        if minimum is not None and number < minimum:
            return number, message or f"must be at least {minimum}"
        maximum, message = _rule(spec, "max")
        if maximum is not None and number > maximum:
            return number, message or f"must be at most {maximum}"
        return number, None
    options = _option_values(spec)
    if kind == "select":
        chosen = _in_options(value, options)
        if chosen is _MISSING:
            return value, "must be one of the options"
        return chosen, None
    # multiselect
    if not isinstance(value, list):
        return value, "must be a list of options"
    chosen_list = []
    for item in value:
        chosen = _in_options(item, options)
        if chosen is _MISSING:
            return value, f"{item!r} is not one of the options"
        if chosen not in chosen_list:
            chosen_list.append(chosen)
    return chosen_list, None


def slow_to_check(schema: dict, form_data: dict[str, Any]) -> bool:
    """Whether checking this form data may take long enough to be run in a thread."""
    lengths = [len(v) for v in form_data.values() if isinstance(v, str)]
    if any(n > _BIG_VALUE for n in lengths):
        return True
    patterned = any(_rule(f, "pattern")[0] is not None for f in schema.get("fields", []))
    return patterned and sum(lengths) > _BIG_PATTERN_TEXT


def check_form(schema: dict, form_data: dict[str, Any], fields_completed: list[str]) -> CheckedForm:
    """Check formData and fieldsCompleted against a form schema (files are written later).

    Every problem is reported at once (up to a few), each naming its field; a file over the
    limit is FILE_TOO_LARGE straight away.
    """
    specs = {f["name"]: f for f in schema.get("fields", [])}
    problems: list[str] = []
    for name in form_data:
        if name not in specs:
            problems.append(f"formData.{name}: is not a field of this form")
    for name in fields_completed:
        if name not in specs:
            problems.append(f"fieldsCompleted: {name!r} is not a field of this form")
    checked = CheckedForm(values={})
    for name, spec in specs.items():
        value = form_data.get(name)
        if _empty(value):
            required, message = _rule(spec, "required")
            if required:
                problems.append(f"formData.{name}: {message or 'is required'}")
            elif name in form_data:
                checked.values[name] = value
            continue
        if spec["type"] in FILE_TYPES:
            upload = _decode_data_url(name, spec["type"], value)
            checked.files.append(upload)
            checked.values[name] = upload.descriptor()
            continue
        if isinstance(value, BodyText):  # a long value kept in the body; not a file here
            value = value.text()
            if value is None:
                problems.append(f"formData.{name}: must be text")
                continue
        stored, problem = _check_value(spec, value)
        if problem:
            problems.append(f"formData.{name}: {problem}")
        checked.values[name] = stored
    if problems:
        raise FormInvalid(problems[:MAX_ERRORS])
    return checked


def template_text(value: Any) -> str:
    """A form value as text inside a template (lists joined, files by name, None empty)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(template_text(v) for v in value)
    if isinstance(value, dict):
        return str(value.get("fileName") or "file")
    return str(value)


def fill_text(template: str, values: dict[str, Any]) -> str:
    """Fill every `{{name}}` of a text; unknown names become empty."""
    return _TEMPLATE.sub(lambda m: template_text(values.get(m.group(1))), template)


def fill_payload(template: Any, values: dict[str, Any]) -> Any:
    """Fill templates through a JSON payload.

    A string that is exactly one placeholder takes the value itself (a number stays a
    number, a list a list); placeholders inside longer text are filled as text.
    """
    if isinstance(template, str):
        whole = _TEMPLATE.fullmatch(template.strip())
        if whole:
            value = values.get(whole.group(1))
            return "" if value is None else value
        return fill_text(template, values)
    if isinstance(template, dict):
        return {key: fill_payload(item, values) for key, item in template.items()}
    if isinstance(template, list):
        return [fill_payload(item, values) for item in template]
    return template
