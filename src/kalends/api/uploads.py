"""What an uploaded attachment is called, its media type and its bytes: the rules the
API's upload and the task page's share, so a file is named and limited the same way
whichever way it came."""

from __future__ import annotations

import mimetypes
import re

from fastapi import UploadFile

from kalends.errors import InvalidInput, TooLarge
from kalends.tasks.media import is_media_type
from kalends.tasks.values import MAX_ATTACHMENT_BYTES

__all__ = ["GENERIC_TYPE", "read_upload", "upload_media_type", "upload_name"]

# Control characters never belong in a name shown or sent back in a header.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
GENERIC_TYPE = "application/octet-stream"


def upload_media_type(given: str | None, sent: str | None, name: str) -> str:
    """The form's ``mediaType``, else the part's own type, else a guess from the name."""
    if given is not None:
        return given
    if sent and sent != GENERIC_TYPE and is_media_type(sent):
        return sent
    return mimetypes.guess_type(name)[0] or GENERIC_TYPE


def upload_name(given: str | None, sent: str | None) -> str:
    """The name given, else the uploaded file's own (its last path part); refused when
    empty, not text, or holding a control character."""
    name = given if given is not None else (sent or "").replace("\\", "/").rsplit("/", 1)[-1]
    if not name.strip():
        raise InvalidInput(
            "name: give the attachment a name (or upload a named file)", field="name"
        )
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput("name: not valid text", field="name") from None
    if _CONTROL.search(name):
        raise InvalidInput("name: control characters are not allowed in a name", field="name")
    return name


def read_upload(upload: UploadFile) -> bytes:
    """The uploaded bytes, refused (413) beyond :data:`MAX_ATTACHMENT_BYTES`."""
    data = upload.file.read(MAX_ATTACHMENT_BYTES + 1)
    if len(data) > MAX_ATTACHMENT_BYTES:
        raise TooLarge(
            f"file: an attachment holds at most {MAX_ATTACHMENT_BYTES} bytes",
            field="file",
            limit=MAX_ATTACHMENT_BYTES,
        )
    return data
