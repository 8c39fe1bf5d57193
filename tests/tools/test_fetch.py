"""fetch_url: the SSRF guard, the caps and content extraction, against the offline test site."""

from __future__ import annotations

import ipaddress
import time

import pytest

from research.tools.fetch import BlockedURL, FetchError, Page, blocked_reason, fetch_url
from tests.support.site import page_by_path

# --- refused targets (no network needed: refused before any connection) -------------

LOOPBACK_SPELLINGS = [
    "http://127.0.0.1/",
    "http://2130706433/",  # decimal
    "http://0x7f000001/",  # hex
    "http://0177.0.0.1/",  # octal
    "http://127.1/",  # short form
    "http://127.0.0.1.:8000/",  # trailing dot
    "http://[::1]/",
    "http://localhost/",  # a name that resolves to loopback
]

INTERNAL = [
    "http://[::ffff:127.0.0.1]/",  # IPv4-mapped IPv6
    "http://[::ffff:10.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://[::127.0.0.1]/",  # IPv4-compatible IPv6
    "http://[64:ff9b::a00:1]/",  # NAT64 wrapping 10.0.0.1
    "http://[64:ff9b::7f00:1]/",  # NAT64 wrapping 127.0.0.1
    "http://[2002:7f00:1::]/",  # 6to4 wrapping 127.0.0.1
    "http://169.254.169.254/latest/meta-data/",  # cloud metadata
    "http://100.100.100.200/latest/meta-data/",  # Alibaba metadata
    "http://[fd00:ec2::254]/",  # AWS metadata over IPv6
    "http://169.254.10.20/",  # link-local
    "http://[fe80::1]/",
    "http://100.64.0.1/",  # CGNAT
    "http://100.127.255.254/",
    "http://10.0.0.1/",
    "http://172.16.0.1/",
    "http://172.31.255.255/",
    "http://192.168.1.1/",
    "http://[fd12:3456::1]/",  # unique local
    "http://0.0.0.0/",
    "http://0/",
    "http://[::]/",
    "http://224.0.0.1/",  # multicast
    "http://239.255.255.250/",
    "http://[ff02::1]/",
    "http://240.0.0.1/",  # reserved
    "http://255.255.255.255/",
    "http://198.18.0.1/",  # benchmarking
    "http://192.0.2.1/",  # documentation
]


@pytest.mark.parametrize("url", LOOPBACK_SPELLINGS)
def test_loopback_in_any_spelling_is_refused(url):
    with pytest.raises(BlockedURL, match="loopback"):
        fetch_url(url, allow_loopback=False)


@pytest.mark.parametrize("url", INTERNAL)
def test_internal_addresses_are_refused(url):
    started = time.monotonic()
    with pytest.raises(BlockedURL):
        fetch_url(url, allow_loopback=False)
    assert time.monotonic() - started < 2  # refused up front, no connection attempt


@pytest.mark.parametrize(
    "url",
    [
        "http://[::ffff:127.0.0.1]/",
        "http://10.0.0.1/",
        "http://169.254.169.254/",
        "http://0.0.0.0/",
        "http://100.64.0.1/",
        "http://[fe80::1]/",
    ],
)
def test_allow_loopback_allows_only_loopback(url):
    with pytest.raises(BlockedURL):
        fetch_url(url, allow_loopback=True)


def test_metadata_address_named_in_error():
    with pytest.raises(BlockedURL, match="metadata"):
        fetch_url("http://169.254.169.254/latest/meta-data/iam/", allow_loopback=True)


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://example.com/file.txt",
        "gopher://example.com/",
        "javascript:alert(1)",
        "data:text/html,<h1>x</h1>",
        "dict://127.0.0.1:6379/info",
        "//example.com/no-scheme",
        "example.com/no-scheme",
    ],
)
def test_non_http_schemes_are_refused(url):
    with pytest.raises(BlockedURL, match="scheme"):
        fetch_url(url)


@pytest.mark.parametrize(
    "url",
    ["http://user:secret@example.com/", "https://user@example.com/", "http://:pw@example.com/", "http://a@127.0.0.1/"],
)
def test_credentials_in_url_are_refused(url):
    with pytest.raises(BlockedURL, match="credentials"):
        fetch_url(url, allow_loopback=True)


def test_hostname_resolving_to_internal_address_is_refused(fake_dns):
    fake_dns.table["evil.test"] = ["10.0.0.5"]
    with pytest.raises(BlockedURL, match="10.0.0.5"):
        fetch_url("http://evil.test/", allow_loopback=True)


def test_hostname_with_one_internal_address_among_public_ones_is_refused(fake_dns):
    fake_dns.table["mixed.test"] = ["93.184.216.34", "169.254.169.254"]
    with pytest.raises(BlockedURL, match="metadata"):
        fetch_url("http://mixed.test/")


def test_localhost_name_refused_without_loopback_permission(test_site):
    url = test_site.url.replace("127.0.0.1", "localhost") + "/articles/solar-power-costs.html"
    with pytest.raises(BlockedURL):
        fetch_url(url, allow_loopback=False)


def test_blocked_reason_allows_public_addresses():
    for ip in ("8.8.8.8", "93.184.216.34", "2606:4700:4700::1111", "64:ff9b::808:808"):
        assert blocked_reason(ipaddress.ip_address(ip)) is None, ip


# --- redirects are re-checked on every hop ---------------------------------------------


@pytest.mark.parametrize(
    "target",
    [
        "http://10.0.0.1/admin",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:127.0.0.1]/",
        "http://100.100.100.200/",
        "file:///etc/passwd",
        "http://user:pw@example.com/",
    ],
)
def test_redirect_to_internal_target_is_refused(test_site, target):
    # The site itself is allowed (loopback permitted for tests); where it points is not.
    with pytest.raises(BlockedURL):
        fetch_url(f"{test_site.url}/redirect?to={target}", allow_loopback=True)


def test_redirect_to_name_resolving_internally_is_refused(test_site, fake_dns):
    fake_dns.table["intranet.test"] = ["192.168.0.10"]
    with pytest.raises(BlockedURL, match="192.168.0.10"):
        fetch_url(f"{test_site.url}/redirect?to=http://intranet.test/", allow_loopback=True)


def test_redirect_within_site_is_followed(test_site):
    page = fetch_url(f"{test_site.url}/redirect?to=/articles/lfp-vs-nmc.html", allow_loopback=True)
    assert page.url == f"{test_site.url}/articles/lfp-vs-nmc.html"
    assert page.title == "LFP vs NMC: Choosing a Battery Chemistry"


def test_too_many_redirects(test_site):
    with pytest.raises(FetchError, match="too many redirects") as err:
        fetch_url(f"{test_site.url}/redirect-chain?n=8", allow_loopback=True)
    assert not isinstance(err.value, BlockedURL)
    page = fetch_url(f"{test_site.url}/redirect-chain?n=3", allow_loopback=True)
    assert page.url.endswith(page_by_path("/articles/solar-power-costs.html").path)


def test_connection_is_pinned_to_the_checked_address(test_site, fake_dns):
    """DNS rebinding: the name is resolved once; a second answer is never used."""
    answers = iter([["127.0.0.1"]])
    fake_dns.table["rebind.test"] = lambda: next(answers, ["10.0.0.1"])
    port = test_site.url.rsplit(":", 1)[1]
    page = fetch_url(f"http://rebind.test:{port}/articles/heat-pump-efficiency.html", allow_loopback=True)
    assert page.title == "How Efficient Are Heat Pumps?"
    assert fake_dns.calls.count("rebind.test") == 1
    assert test_site.hosts[-1] == f"rebind.test:{port}"  # the site still saw the real name


def test_setting_controls_loopback(test_site, settings):
    url = f"{test_site.url}/notes/heat-pump-faq.txt"
    settings.FETCH_ALLOW_LOOPBACK = False
    with pytest.raises(BlockedURL):
        fetch_url(url)
    settings.FETCH_ALLOW_LOOPBACK = True
    assert "COP of 3" in fetch_url(url).text


# --- content -------------------------------------------------------------------------------


def test_html_becomes_markdown_with_title(test_site):
    page = fetch_url(f"{test_site.url}/articles/solar-power-costs.html", allow_loopback=True)
    assert isinstance(page, Page)
    assert page.title == "The Falling Cost of Solar Power"
    assert page.content_type == "text/html"
    assert page.markdown.startswith("# The Falling Cost of Solar Power")
    assert "$0.044 per kilowatt-hour" in page.text
    assert "$0.044 per kilowatt-hour" in page.markdown
    assert "<p>" not in page.markdown
    assert "Energy Notes test site" not in page.text  # boilerplate (footer) dropped


def test_chinese_html(test_site):
    page = fetch_url(f"{test_site.url}/zh/nev-sales.html", allow_loopback=True)
    assert page.title == "中国新能源汽车销量再创新高"
    assert "949.5万辆" in page.text


def test_pdf_becomes_text(test_site):
    page = fetch_url(f"{test_site.url}/docs/solar-outlook-2024.pdf", allow_loopback=True)
    assert page.content_type == "application/pdf"
    assert page.title == "Solar and Storage Outlook 2024"
    assert "447 GW" in page.text
    assert "115 dollars per kWh" in page.markdown


def test_plain_text_kept_as_is(test_site):
    page = fetch_url(f"{test_site.url}/notes/heat-pump-faq.txt", allow_loopback=True)
    assert page.content_type == "text/plain"
    assert page.text == page_by_path("/notes/heat-pump-faq.txt").text
    assert page.title == "Heat pump FAQ"


@pytest.mark.parametrize("path", ["/big", "/big?declared=1"])
def test_oversized_body_is_refused(test_site, path):
    with pytest.raises(FetchError, match="too large"):
        fetch_url(test_site.url + path, allow_loopback=True)


def test_size_cap_is_configurable(test_site):
    with pytest.raises(FetchError, match="too large"):
        fetch_url(f"{test_site.url}/articles/solar-power-costs.html", allow_loopback=True, max_bytes=500)


def test_binary_content_is_refused(test_site):
    with pytest.raises(FetchError, match="unsupported content type 'image/png'"):
        fetch_url(f"{test_site.url}/image.png", allow_loopback=True)


def test_slow_server_times_out(test_site):
    started = time.monotonic()
    with pytest.raises(FetchError, match="timed out"):
        fetch_url(f"{test_site.url}/slow?delay=5", allow_loopback=True, timeout=0.5)
    assert time.monotonic() - started < 3


@pytest.mark.parametrize("status", [404, 500])
def test_http_errors(test_site, status):
    with pytest.raises(FetchError, match=f"HTTP {status}"):
        fetch_url(f"{test_site.url}/status/{status}", allow_loopback=True)


def test_connection_refused(closed_port_url):
    with pytest.raises(FetchError, match="cannot connect"):
        fetch_url(closed_port_url + "/", allow_loopback=True)


def test_user_agent_is_sent(test_site, monkeypatch):
    import httpx

    seen = {}
    real_stream = httpx.Client.stream

    def spy(self, method, url, **kwargs):
        seen.update(kwargs.get("headers") or {})
        return real_stream(self, method, url, **kwargs)

    monkeypatch.setattr(httpx.Client, "stream", spy)
    fetch_url(f"{test_site.url}/notes/heat-pump-faq.txt", allow_loopback=True)
    assert "DeepResearchBot" in seen["User-Agent"]
