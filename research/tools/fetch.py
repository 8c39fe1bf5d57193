"""Fetch one web page for the researcher, safely (docs/architecture.md, "Tools").

The URL comes from a search result or from the model, so it is untrusted:
it may point at the cloud metadata service, at an internal admin page, or at
a host name that resolves to one. Every hop (the first request and each
redirect, followed by hand) is checked the same way:

1. only http/https, no credentials in the URL;
2. the host is resolved once with getaddrinfo (which also normalises odd IPv4
   spellings such as 2130706433, 0x7f000001, 0177.0.0.1 or 127.1);
3. every resolved address must be globally routable; loopback is allowed
   only when `allow_loopback` (tests) is on;
4. the connection goes to the checked address itself (the URL is rewritten to
   the IP, with Host header and TLS SNI set to the name), so a second DNS
   answer can't swap in another address (DNS rebinding).

Body size, total time and redirects are capped. HTML becomes Markdown with
trafilatura, PDF becomes text with pypdf, plain text and Markdown are kept; then
page furniture (bylines, dates, reading times, modelines, badges, sponsor blurbs,
share lines) is removed from `.text` and `.markdown` by research.tools.clean.
"""

from __future__ import annotations

import io
import ipaddress
import socket
import time
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import httpx

from research import textre
from research.tls import tls_context
from research.tools.clean import clean_markdown, clean_text, cleaned_or_whole, extractor_config
from research.tools.config import setting

USER_AGENT = "Mozilla/5.0 (compatible; DeepResearchBot/0.1; +https://github.com/deep-research)"
DEFAULT_TIMEOUT_S = 20.0
DEFAULT_MAX_BYTES = 5_000_000
DEFAULT_MAX_REDIRECTS = 5

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Cloud metadata endpoints, named so the error says what was hit. All of them
# are non-global anyway; the explicit list is a second line of defence.
_METADATA = {
    ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack
    ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
    ipaddress.ip_address("fd00:ec2::254"),  # AWS over IPv6
}
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_IPV4_COMPAT = ipaddress.ip_network("::/96")  # deprecated IPv4-compatible IPv6
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_LOOPBACK_V4 = ipaddress.ip_network("127.0.0.0/8")
_LOOPBACK_V6 = ipaddress.ip_address("::1")

HTML_TYPES = {"text/html", "application/xhtml+xml"}
PDF_TYPES = {"application/pdf", "application/x-pdf"}
TEXT_TYPES = {"text/plain", "text/markdown", "text/x-markdown"}


class FetchError(Exception):
    """The page could not be fetched or read."""


class BlockedURL(FetchError):
    """The URL points somewhere the fetcher must not go."""


@dataclass
class Page:
    url: str  # final URL, after redirects
    title: str
    text: str
    markdown: str
    content_type: str
    status: int = 200




# --- address policy --------------------------------------------------------------


def blocked_reason(ip: IPAddress, *, allow_loopback: bool = False) -> str | None:
    """Why connecting to `ip` is refused, or None when it is a public address."""
    if ip in _METADATA:
        return "cloud metadata address"
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return "IPv4-mapped IPv6 address"
        if ip == _LOOPBACK_V6:
            return None if allow_loopback else "loopback address"
        if ip in _IPV4_COMPAT:
            return "IPv4-compatible IPv6 address"
        for net in _NAT64:
            if ip in net:
                # NAT64 would carry us to the embedded IPv4 address: judge that one.
                inner = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
                why = blocked_reason(inner)
                return f"NAT64 address wrapping a {why}" if why else None
        if ip.sixtofour is not None:
            why = blocked_reason(ip.sixtofour)
            if why:
                return f"6to4 address wrapping a {why}"
        if ip.teredo is not None:
            return "Teredo tunnel address"
    elif ip in _LOOPBACK_V4:
        return None if allow_loopback else "loopback address"
    if ip.is_multicast:
        return "multicast address"
    if ip.is_unspecified:
        return "unspecified address"
    if ip.is_loopback:
        return "loopback address"
    if ip.is_link_local:
        return "link-local address"
    if isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT:
        return "carrier-grade NAT address (100.64.0.0/10)"
    if ip.is_private:
        return "private address"
    if ip.is_reserved:
        return "reserved address"
    if not ip.is_global:
        return "non-global address"
    return None


def resolve_checked(host: str, port: int, *, allow_loopback: bool = False) -> list[IPAddress]:
    """Resolve `host` and return its addresses, refusing it if any is not allowed.

    One bad address refuses the whole name: a name that answers with both a
    public and an internal address is an attack, not a mistake.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError, OSError) as exc:
        raise FetchError(f"cannot resolve host {host!r}: {exc}") from exc
    addrs: list[IPAddress] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        ip = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])  # drop an IPv6 zone id
        why = blocked_reason(ip, allow_loopback=allow_loopback)
        if why:
            raise BlockedURL(f"refused {host!r}: it resolves to {ip}, a {why}")
        if ip not in addrs:
            addrs.append(ip)
    if not addrs:
        raise FetchError(f"cannot resolve host {host!r}: no addresses")
    return addrs


@dataclass
class _Target:
    url: str
    scheme: str
    host: str
    port: int
    host_header: str


def check_url(url: str) -> _Target:
    """Syntactic checks: scheme, credentials, host present."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise BlockedURL(f"refused malformed URL {url!r}: {exc}") from exc
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise BlockedURL(f"refused URL scheme {scheme or '(none)'!r}: only http and https are fetched")
    if "@" in parts.netloc or parts.username is not None or parts.password is not None:
        raise BlockedURL("refused URL with credentials in it")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise BlockedURL(f"refused URL without a host: {url!r}")
    if not host.isascii():
        # Internationalized names: the Host header and TLS SNI need the ASCII (punycode) form.
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise BlockedURL(f"refused URL with an invalid host name: {url!r}") from exc
    default_port = 443 if scheme == "https" else 80
    port = port or default_port
    shown = f"[{host}]" if ":" in host else host
    host_header = shown if port == default_port else f"{shown}:{port}"
    return _Target(url=url.strip(), scheme=scheme, host=host, port=port, host_header=host_header)


# --- fetching ----------------------------------------------------------------------


def fetch_url(
    url: str,
    *,
    allow_loopback: bool | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_redirects: int = DEFAULT_MAX_REDIRECTS,
) -> Page:
    """Fetch `url` and return its readable content. Raises BlockedURL / FetchError."""
    if allow_loopback is None:
        allow_loopback = bool(setting("FETCH_ALLOW_LOOPBACK", False))
    deadline = time.monotonic() + timeout
    current = url
    # trust_env=False: an HTTP(S)_PROXY would resolve names itself and undo the pinning.
    with httpx.Client(trust_env=False, follow_redirects=False, verify=tls_context()) as client:
        for _hop in range(max_redirects + 1):
            target = check_url(current)
            addrs = resolve_checked(target.host, target.port, allow_loopback=allow_loopback)
            status, headers, body, final = _get(client, target, addrs, deadline, timeout, max_bytes)
            if status in (301, 302, 303, 307, 308):
                location = headers.get("location")
                if not location:
                    raise FetchError(f"HTTP {status} redirect without a Location header from {current}")
                current = urljoin(current, location.strip())
                continue
            if status >= 400:
                raise FetchError(f"HTTP {status} from {current}")
            return _to_page(final, headers.get("content-type", ""), body, status)
    raise FetchError(f"too many redirects (more than {max_redirects}) starting from {url}")


def _get(
    client: httpx.Client,
    target: _Target,
    addrs: list[IPAddress],
    deadline: float,
    timeout: float,
    max_bytes: int,
) -> tuple[int, httpx.Headers, bytes, str]:
    last_exc: Exception | None = None
    for ip in addrs[:3]:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        pinned = httpx.URL(target.url).copy_with(host=str(ip))
        headers = {
            "Host": target.host_header,
            "User-Agent": USER_AGENT,
            "Accept": "text/html,application/xhtml+xml,application/pdf,text/plain,text/markdown;q=0.9,*/*;q=0.5",
            "Accept-Encoding": "gzip, deflate",
        }
        # TLS: SNI and certificate checks use the real name, not the IP.
        extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
        try:
            with client.stream(
                "GET", pinned, headers=headers, extensions=extensions, timeout=httpx.Timeout(remaining)
            ) as resp:
                if resp.status_code in (301, 302, 303, 307, 308) or resp.status_code >= 400:
                    return resp.status_code, resp.headers, b"", target.url
                declared = resp.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > max_bytes:
                    raise FetchError(f"response too large: {int(declared)} bytes (limit {max_bytes})")
                buf = bytearray()
                for chunk in resp.iter_bytes():
                    buf += chunk
                    # Counted after decompression, so a gzip bomb is capped too.
                    if len(buf) > max_bytes:
                        raise FetchError(f"response too large: more than {max_bytes} bytes")
                    if time.monotonic() > deadline:
                        raise FetchError(f"timed out after {timeout:g} s reading {target.url}")
                return resp.status_code, resp.headers, bytes(buf), target.url
        except httpx.TimeoutException as exc:
            raise FetchError(f"timed out after {timeout:g} s fetching {target.url}") from exc
        except httpx.ConnectError as exc:
            last_exc = exc  # try the next checked address
        except httpx.HTTPError as exc:
            raise FetchError(f"request to {target.url} failed: {exc}") from exc
    if last_exc is None:
        raise FetchError(f"timed out after {timeout:g} s fetching {target.url}")
    raise FetchError(f"cannot connect to {target.url}: {last_exc}")


# --- content extraction ---------------------------------------------------------


def _to_page(url: str, content_type_header: str, body: bytes, status: int) -> Page:
    mime, _, params = content_type_header.partition(";")
    mime = mime.strip().lower()
    charset = _charset(params)
    if not mime:
        mime = _sniff(body)
    if mime in HTML_TYPES:
        title, text, markdown = _from_html(body, url, charset)
    elif mime in PDF_TYPES:
        title, text = _from_pdf(body, url)
        markdown = f"# {title}\n\n{text}" if title else text
    elif mime in TEXT_TYPES:
        text = _decode(body, charset)
        text = cleaned_or_whole(text, clean_markdown if mime != "text/plain" else clean_text)
        markdown = text
        title = _first_line_title(text) or _name_from_url(url)
    else:
        raise FetchError(f"unsupported content type {mime!r} at {url} (only HTML, PDF and plain text are read)")
    return Page(url=url, title=title, text=text, markdown=markdown, content_type=mime, status=status)


def _charset(params: str) -> str | None:
    m = textre.search(r"charset\s*=\s*\"?([\w.:-]+)", params, textre.I)
    return m.group(1) if m else None


def _sniff(body: bytes) -> str:
    head = body[:1024].lstrip().lower()
    if head.startswith(b"%pdf-"):
        return "application/pdf"
    if head.startswith((b"<!doctype html", b"<html")) or b"<body" in head:
        return "text/html"
    return "application/octet-stream"


def _decode(body: bytes, charset: str | None) -> str:
    for enc in (charset, "utf-8"):
        if not enc:
            continue
        try:
            return body.decode(enc)
        except (LookupError, UnicodeDecodeError):
            continue
    return body.decode("utf-8", errors="replace")


def _from_html(body: bytes, url: str, charset: str | None) -> tuple[str, str, str]:
    import trafilatura

    html: str | bytes = _decode(body, charset) if charset else body  # trafilatura detects encodings of bytes
    title = ""
    markdown = text = ""
    try:
        meta = trafilatura.extract_metadata(html, default_url=url)
        title = (meta.title or "").strip() if meta else ""
        config = extractor_config()
        markdown = (
            trafilatura.extract(html, url=url, output_format="markdown", include_tables=True, config=config) or ""
        )
        text = trafilatura.extract(html, url=url, output_format="txt", include_tables=True, config=config) or ""
    except Exception:  # a parser failure falls back to the simple extraction below
        markdown = text = ""
    if not title or not text.strip():
        simple_title, simple_text = _simple_html(html)
        title = title or simple_title
        if not text.strip():
            text = simple_text
            markdown = simple_text
    title = title or _name_from_url(url)
    text, markdown = cleaned_or_whole(text, clean_text), cleaned_or_whole(markdown, clean_markdown)
    if markdown and not markdown.lstrip().startswith("# "):
        markdown = f"# {title}\n\n{markdown}"
    return title, text.strip(), markdown.strip()


def _simple_html(html: str | bytes) -> tuple[str, str]:
    """Title and block text with lxml: used when trafilatura finds no main content."""
    import lxml.html

    try:
        doc = lxml.html.fromstring(html)
    except Exception:  # empty or broken documents (lxml raises several types)
        return "", ""
    title_el = doc.find(".//title")
    title = " ".join((title_el.text_content() if title_el is not None else "").split())
    for bad in doc.xpath("//script|//style|//noscript|//template|//svg"):
        bad.drop_tree()
    blocks = []
    for el in doc.xpath("//h1|//h2|//h3|//h4|//p|//li|//td|//pre|//blockquote"):
        t = " ".join(el.text_content().split())
        if t:
            blocks.append(t)
    if not blocks:
        body = doc.find(".//body")
        t = " ".join((body if body is not None else doc).text_content().split())
        blocks = [t] if t else []
    if not title:
        h1 = doc.find(".//h1")
        title = " ".join(h1.text_content().split()) if h1 is not None else ""
    return title, "\n\n".join(blocks)


def _from_pdf(body: bytes, url: str) -> tuple[str, str]:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(body))
        if reader.is_encrypted and not reader.decrypt(""):
            raise FetchError(f"encrypted PDF at {url}")
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
        meta_title = (reader.metadata.title if reader.metadata else None) or ""
    except FetchError:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
        raise FetchError(f"unreadable PDF at {url}: {exc}") from exc
    text = "\n\n".join(p for p in pages if p)
    if not text:
        raise FetchError(f"PDF at {url} has no extractable text")
    text = cleaned_or_whole(text, clean_text)  # before the title is taken from its first line
    title = str(meta_title).strip() or _first_line_title(text) or _name_from_url(url)
    return title, text


def _first_line_title(text: str) -> str:
    for line in text.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line[:200]
    return ""


def _name_from_url(url: str) -> str:
    parts = urlsplit(url)
    tail = parts.path.rstrip("/").rsplit("/", 1)[-1]
    return tail or parts.hostname or url
