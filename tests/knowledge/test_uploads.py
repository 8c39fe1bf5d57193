"""The upload caps hold on the bytes actually received, not on what the client declares."""

from io import BytesIO

import pytest
from django.core.files.uploadhandler import MemoryFileUploadHandler, SkipFile, TemporaryFileUploadHandler
from django.http.multipartparser import MultiPartParser

from research.knowledge.uploads import KBUploadLimitHandler, request_limit

BOUNDARY = "kbtestboundary"


def multipart(*files: tuple[str, bytes], field: str = "files") -> bytes:
    parts = []
    for name, data in files:
        parts.append(
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{field}"; filename="{name}"\r\n'
            f"Content-Type: text/plain\r\n\r\n".encode()
            + data
            + b"\r\n"
        )
    return b"".join(parts) + f"--{BOUNDARY}--\r\n".encode()


def parse(body: bytes, declared_length: int, handler: KBUploadLimitHandler):
    """Run Django's multipart parser the way a request would, with our handler first."""
    meta = {"CONTENT_TYPE": f"multipart/form-data; boundary={BOUNDARY}", "CONTENT_LENGTH": str(declared_length)}
    # A plain stream, not Django's LimitedStream: like an ASGI body, it yields all it has,
    # so a lying Content-Length does not stop the parser from reading on.
    parser = MultiPartParser(meta, BytesIO(body), [handler, MemoryFileUploadHandler(), TemporaryFileUploadHandler()])
    return parser.parse()


def test_handler_skips_a_file_the_moment_it_passes_the_cap(settings):
    settings.KB_MAX_UPLOAD_BYTES = 10_000
    handler = KBUploadLimitHandler()
    handler.new_file("files", "stream.txt", "text/plain", None)  # no per-file length either
    received = 0
    with pytest.raises(SkipFile):
        for _ in range(100):
            chunk = handler.receive_data_chunk(b"x" * 4096, received)
            assert chunk is not None  # passed on while under the cap
            received += len(chunk)
    assert received <= 10_000
    assert handler.too_large == ["stream.txt"]


def test_oversize_part_is_dropped_even_when_content_length_lies(settings):
    settings.KB_MAX_UPLOAD_BYTES = 1_000
    body = multipart(("big.txt", b"y" * 50_000), ("ok.txt", b"fine"))
    handler = KBUploadLimitHandler()
    _, files = parse(body, declared_length=500, handler=handler)  # claims to be small
    assert handler.too_large == ["big.txt"]
    assert [f.name for f in files.getlist("files")] == ["ok.txt"]
    assert not handler.aborted


def test_request_total_cap_stops_the_upload(settings):
    settings.KB_MAX_UPLOAD_BYTES = 1_000
    parts = [(f"f{i}.txt", b"z" * 900) for i in range(200)]  # each under the per-file cap
    handler = KBUploadLimitHandler()
    _, files = parse(multipart(*parts), declared_length=500, handler=handler)
    assert handler.aborted
    assert handler.total_bytes <= request_limit() + 900
    assert len(files.getlist("files")) < 200


def test_declared_oversize_request_is_not_read(settings):
    settings.KB_MAX_UPLOAD_BYTES = 1_000
    body = multipart(("a.txt", b"a"))
    handler = KBUploadLimitHandler()
    stream = BytesIO(body)
    meta = {"CONTENT_TYPE": f"multipart/form-data; boundary={BOUNDARY}", "CONTENT_LENGTH": str(10**9)}
    post, files = MultiPartParser(meta, stream, [handler, MemoryFileUploadHandler()]).parse()
    assert handler.aborted and not files and not post
    assert stream.tell() == 0
