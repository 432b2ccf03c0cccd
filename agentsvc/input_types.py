"""The field types of what people type (addresses, passwords, names, key names, callback
addresses), shared by the API's request models and the command line's options, so both
refuse the same values with the same words. Nothing here loads the web layer: the command
line checks its options without it."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from agentsvc.passwords import MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH
from agentsvc.text_patterns import DISPLAY_NAME_PATTERN, SHOWN_DISPLAY_NAME_PATTERN

MAX_DISPLAY_NAME = 80

# Control characters are listed explicitly: pydantic's regex engine reads \s as Unicode
# White_Space, which leaves out \x1c-\x1f (and Python's mail headers split on those).
_EMAIL_CHAR = r"[^@\s\u0000-\u001f\u007f-\u009f\u2028\u2029]"
Email = Annotated[
    str, Field(min_length=3, max_length=254, pattern=rf"^{_EMAIL_CHAR}+@{_EMAIL_CHAR}+$")
]
Password = Annotated[str, Field(min_length=1, max_length=MAX_PASSWORD_LENGTH)]
NewPassword = Annotated[str, Field(min_length=MIN_PASSWORD_LENGTH, max_length=MAX_PASSWORD_LENGTH)]
CallbackUrl = Annotated[str, Field(min_length=1, max_length=2048)]
KeyName = Annotated[str, Field(max_length=200)]

# A display name as accounts.display_name checks it, stated in the schema: at most 80
# characters, no control characters or line breaks; a required one shows some character.
OptionalDisplayName = Annotated[
    str, Field(max_length=MAX_DISPLAY_NAME, pattern=DISPLAY_NAME_PATTERN)
]
DisplayName = Annotated[
    str, Field(min_length=1, max_length=MAX_DISPLAY_NAME, pattern=SHOWN_DISPLAY_NAME_PATTERN)
]
