"""An attachment's media type: what a download sends back as its ``Content-Type``.

RFC 6838 §4.2 names a type and a subtype as restricted names: a letter or digit, then
at most 126 of ``A-Z a-z 0-9 ! # $ & - ^ _ . +``. Parameters follow RFC 9110 §8.3.1:
``; name=value``, the name a token, the value a token or a quoted string, with spaces or
tabs around the semicolon. Nothing else is a media type here: a line break, a vertical
tab or any other control character could never be sent back in a header, so the
attachment could never be downloaded.
"""

from __future__ import annotations

import re

from kalends.errors import InvalidInput

__all__ = ["MAX_MEDIA_TYPE_LENGTH", "MEDIA_TYPE_PATTERN", "check_media_type", "is_media_type"]

# The column holds 255 characters.
MAX_MEDIA_TYPE_LENGTH = 255

_RESTRICTED_NAME = r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}"
_TOKEN = r"[A-Za-z0-9!#$%&'*+.^_`|~-]+"
# Any visible ASCII but a quote or a backslash, a space or a tab; or one escaped.
_QUOTED = r'"(?:[\t !#-\[\]-~]|\\[\t !-~])*"'
_PARAMETER = rf"[ \t]*;[ \t]*{_TOKEN}=(?:{_TOKEN}|{_QUOTED})"

MEDIA_TYPE_PATTERN = rf"^{_RESTRICTED_NAME}/{_RESTRICTED_NAME}(?:{_PARAMETER})*$"
"""The whole text of a media type; also the HTTP form field's pattern."""

# Matched whole (``fullmatch``): ``$`` alone would also match before a final line break.
_MEDIA_TYPE = re.compile(MEDIA_TYPE_PATTERN)


def is_media_type(value: str) -> bool:
    """Whether ``value`` is a media type as this module defines it, and fits its column."""
    return len(value) <= MAX_MEDIA_TYPE_LENGTH and _MEDIA_TYPE.fullmatch(value) is not None


def check_media_type(value: object, field: str = "media_type") -> str:
    """``value`` unchanged when it is a media type; else :class:`InvalidInput` naming ``field``."""
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{field}: give a media type such as text/plain", field=field)
    if len(value) > MAX_MEDIA_TYPE_LENGTH:
        raise InvalidInput(
            f"{field}: at most {MAX_MEDIA_TYPE_LENGTH} characters, got {len(value)}", field=field
        )
    if _MEDIA_TYPE.fullmatch(value) is None:
        raise InvalidInput(
            f"{field}: {value!r} is not a media type (type/subtype, such as text/plain, "
            "with optional ; name=value parameters)",
            field=field,
        )
    return value
