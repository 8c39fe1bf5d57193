"""An upload handler that enforces the knowledge-base size caps while the body streams in.

Django's own limits (DATA_UPLOAD_MAX_MEMORY_SIZE) do not cover file parts, and a
Content-Length header can be absent or wrong, so the caps are counted on the
bytes actually received: a file past KB_MAX_UPLOAD_BYTES is dropped mid-stream
(SkipFile: nothing more of it is buffered or written to disk), and a request
whose files together pass the request cap is stopped outright.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, SkipFile, StopUpload
from django.http import HttpRequest, QueryDict
from django.utils.datastructures import MultiValueDict

MAX_FILES_PER_UPLOAD = 20


def per_file_limit() -> int:
    return int(settings.KB_MAX_UPLOAD_BYTES)


def request_limit() -> int:
    """The most a whole upload request may carry: a handful of maximum-size files."""
    return per_file_limit() * 5 + 64 * 1024  # + room for the multipart framing and form fields


class KBUploadLimitHandler(FileUploadHandler):
    """Goes first in request.upload_handlers; records what it refused for the view to report."""

    def __init__(self, request: HttpRequest | None = None) -> None:
        super().__init__(request)
        self.per_file_limit = per_file_limit()
        self.request_limit = request_limit()
        self.file_bytes = 0
        self.total_bytes = 0
        self.too_large: list[str] = []
        self.aborted = False

    def handle_raw_input(
        self,
        input_data: Any,
        META: dict[str, Any],  # Django's parameter name
        content_length: int,
        boundary: bytes,  # type: ignore[override]  # Django passes bytes; the stubs say str
        encoding: str | None = None,
    ) -> tuple[QueryDict, MultiValueDict] | None:
        if content_length > self.request_limit:
            # Declared too big: answer "parsed, nothing in it" without reading a byte.
            # (The view refuses such requests before parsing; this covers other callers.)
            self.aborted = True
            return QueryDict(encoding=encoding), MultiValueDict()
        return None

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        super().new_file(*args, **kwargs)
        self.file_bytes = 0

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.file_bytes += len(raw_data)
        self.total_bytes += len(raw_data)
        if self.total_bytes > self.request_limit:
            self.aborted = True
            raise StopUpload(connection_reset=True)
        if self.file_bytes > self.per_file_limit:
            self.too_large.append(self.file_name or "?")
            raise SkipFile()
        return raw_data  # the next handler (memory or temp file) stores it

    def file_complete(self, file_size: int) -> None:
        return None
