"""Clean text in (issue 32, item 4): page furniture is stripped at fetch and at knowledge-base extraction.

The fixtures (tests/tools/clean_fixtures/) hold each kind in English and Chinese: bylines, dates and
"updated on" lines, reading times, titles glued to the first sentence, editor modelines, badges,
sponsor / backer / contributor blurbs and sections, share / subscribe lines. Each also holds content
sentences with numbers and dates that must stay. Pages are fetched from a real HTTP server on
127.0.0.1 with the real fetcher; uploads go through the real extraction.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from research.agents.rank import is_content_sentence, split_sentences
from research.knowledge.extract import extract_document
from research.tools.clean import clean_markdown, clean_text, is_furniture
from research.tools.fetch import fetch_url
from tests.support.site import make_pdf

FIXTURES = Path(__file__).parent / "clean_fixtures"

# Junk each fixture holds, and content that must survive it.
ZH_NEWS_JUNK = ["作者：本报编辑部", "更新于2025年3月14日 ·", "阅读约5分钟", "分享到", "欢迎订阅"]
ZH_NEWS_KEEP = ["2023年中国新能源汽车销量达到949.5万辆，同比增长37.9%，市场占有率达到31.6%。",
                "该政策更新于2025年3月14日，新增了三项购置补贴。"]
EN_NEWS_JUNK = ["By Jane Doe", "Updated March 14, 2025 |", "5 min read", "Share this article", "Subscribe to our"]
EN_NEWS_KEEP = ["Modern cold-climate heat pumps keep a coefficient of performance above 2 at -15 °C, according to "
                "field trials in Maine.",
                "The state rebate was updated on March 14, 2025, and now pays up to $8,000 per home."]
README_JUNK = ["vim:", "-*-", "shields.io", "badge.svg", "|build-status|", "|构建状态|", "exists thanks to",
               "Become a backer", "becoming a sponsor", "logo will show up", "generous donations", "Jane Doe",
               "2025-03-14", "Share this page", "赞助", "感谢所有", "欢迎订阅", "作者", "阅读约", "opencollective"]
README_KEEP_EN = ["Taskq is a distributed task queue for Python that processes 10,000 messages per second on one "
                  "worker.", 'pip install "taskq[redis]"',
                  "Taskq is released under the BSD license, which allows commercial use."]
README_KEEP_ZH = ["Taskq 是一个分布式任务队列，单个工作进程每秒可以处理1万条消息。", 'pip install "taskq[redis]"',
                  "Taskq 采用 BSD 许可证发布，允许商业使用。"]


def _fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def _assert_clean(text: str, junk: list[str], keep: list[str]) -> None:
    for item in junk:
        assert item not in text, f"{item!r} was left in:\n{text}"
    for item in keep:
        assert item in text, f"{item!r} was removed from:\n{text}"


# --- fetch ----------------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    routes: dict[str, tuple[str, bytes]] = {}

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        ctype, body = self.routes.get(self.path, ("text/plain", b"not found"))
        self.send_response(200 if self.path in self.routes else 404)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def fixture_site() -> Iterator[str]:
    _Handler.routes = {
        "/zh.html": ("text/html; charset=utf-8", _fixture("news_zh.html").encode()),
        "/en.html": ("text/html; charset=utf-8", _fixture("news_en.html").encode()),
        "/readme.md": ("text/markdown; charset=utf-8", _fixture("readme_en.md").encode()),
        "/readme-zh.md": ("text/markdown; charset=utf-8", _fixture("readme_zh.md").encode()),
        "/notes.txt": ("text/plain; charset=utf-8", _fixture("notes_en.txt").encode()),
        "/notes-zh.txt": ("text/plain; charset=utf-8", _fixture("notes_zh.txt").encode()),
        "/readme.rst": ("text/plain; charset=utf-8", _fixture("readme_en.rst").encode()),
        "/only-furniture.txt": ("text/plain; charset=utf-8", b"By Jane Doe\n5 min read\n"),
        "/report.pdf": ("application/pdf", make_pdf(
            ["vim: set ft=text:", "By Jane Doe | Updated March 14, 2025 | 5 min read",
             "Heat pumps cut household energy use by 40 percent in the 2024 trial.",
             "This project exists thanks to all the people who contribute."], title="Heat pump trial")),
    }
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(("path", "junk", "keep"), [
    ("/zh.html", ZH_NEWS_JUNK, ZH_NEWS_KEEP),
    ("/en.html", EN_NEWS_JUNK, EN_NEWS_KEEP),
])
def test_a_fetched_news_page_loses_its_byline_dates_reading_time_and_share_lines(fixture_site, path, junk, keep):
    page = fetch_url(fixture_site + path, allow_loopback=True)
    for text in (page.text, page.markdown):
        _assert_clean(text, junk, keep)
    # The title is the page's title, on its own line, never glued to the first sentence.
    assert page.title in ("中国新能源汽车市场格局", "Heat pumps in cold climates")
    assert page.text.splitlines()[:2] == [page.title, keep[0]]
    assert [p for p in page.markdown.split("\n\n")][:2] == ["# " + page.title, keep[0]]


def test_the_offline_engine_quotes_the_first_sentence_without_the_title_and_byline(fixture_site):
    """The issue's case: "…格局 作者：本报编辑部 · 更新于2025年3月14日 · 阅读约5分钟 2023年中国…" was quoted."""
    page = fetch_url(fixture_site + "/zh.html", allow_loopback=True)
    sentences = split_sentences(page.markdown, "zh-CN")
    assert "该政策更新于2025年3月14日，新增了三项购置补贴。" in sentences
    assert not any("作者" in s or "阅读约" in s or "格局" in s for s in sentences)


@pytest.mark.parametrize(("path", "keep"), [
    ("/readme.md", README_KEEP_EN),
    ("/readme-zh.md", README_KEEP_ZH),
    ("/readme.rst", README_KEEP_EN),
])
def test_a_fetched_readme_loses_modelines_badges_and_sponsor_sections(fixture_site, path, keep):
    page = fetch_url(fixture_site + path, allow_loopback=True)
    _assert_clean(page.text, README_JUNK, keep)
    assert page.markdown == page.text  # the fetch contract: plain text and Markdown are kept as they are


@pytest.mark.parametrize(("path", "junk", "keep"), [
    ("/notes.txt", ["vim:", "By Jane Doe", "5 min read", "views", "backers", "Follow us", "Heat pumps in cold"],
     ["Modern cold-climate heat pumps keep a coefficient of performance above 2 at -15 °C.",
      "The state rebate was updated on March 14, 2025, and now pays up to $8,000 per home."]),
    ("/notes-zh.txt", ["-*-", "作者", "阅读约5分钟", "新华网", "贡献者", "赞助商", "扫码关注", "产业观察"],
     ["2023年中国新能源汽车销量达到949.5万辆，同比增长37.9%。", "该政策更新于2025年3月14日，新增了三项购置补贴。"]),
])
def test_fetched_plain_text_loses_glued_titles_and_bylines(fixture_site, path, junk, keep):
    page = fetch_url(fixture_site + path, allow_loopback=True)
    _assert_clean(page.text, junk, keep)
    assert page.text.startswith(keep[0])


def test_a_fetched_pdf_is_cleaned(fixture_site):
    page = fetch_url(fixture_site + "/report.pdf", allow_loopback=True)
    _assert_clean(page.text, ["vim:", "Jane Doe", "5 min read", "exists thanks"],
                  ["Heat pumps cut household energy use by 40 percent in the 2024 trial."])
    assert page.title == "Heat pump trial"


def test_a_page_of_nothing_but_furniture_is_kept_whole_rather_than_lost(fixture_site):
    page = fetch_url(fixture_site + "/only-furniture.txt", allow_loopback=True)
    assert page.text == "By Jane Doe\n5 min read\n"


# --- knowledge-base extraction --------------------------------------------------------------------


@pytest.mark.parametrize(("filename", "fixture", "keep"), [
    ("README.md", "readme_en.md", README_KEEP_EN),
    ("README-zh.md", "readme_zh.md", README_KEEP_ZH),
    ("README.txt", "readme_en.rst", README_KEEP_EN),  # an RST README saved as text
    ("README-zh.txt", "readme_zh.rst", README_KEEP_ZH),
])
def test_an_uploaded_readme_loses_modelines_badges_and_sponsor_blurbs(filename, fixture, keep):
    extracted = extract_document(filename=filename, data=_fixture(fixture).encode())
    _assert_clean(extracted.text, README_JUNK, keep)
    assert "vim" not in extracted.title


def test_an_uploaded_markdown_title_is_its_first_real_heading():
    """"# vim: syntax=markdown" parses as a heading; the title is the one after it."""
    assert extract_document(filename="README.md", data=_fixture("readme_en.md").encode()).title == "Taskq"


@pytest.mark.parametrize(("filename", "fixture", "junk", "keep"), [
    ("zh.html", "news_zh.html", ZH_NEWS_JUNK, ZH_NEWS_KEEP),
    ("en.html", "news_en.html", EN_NEWS_JUNK, EN_NEWS_KEEP),
    ("notes.txt", "notes_en.txt", ["vim:", "By Jane Doe", "views", "backers", "Follow us"],
     ["The state rebate was updated on March 14, 2025, and now pays up to $8,000 per home."]),
    ("notes-zh.txt", "notes_zh.txt", ["作者", "阅读约5分钟", "贡献者", "扫码关注"],
     ["该政策更新于2025年3月14日，新增了三项购置补贴。"]),
])
def test_uploaded_pages_and_notes_are_cleaned(filename, fixture, junk, keep):
    _assert_clean(extract_document(filename=filename, data=_fixture(fixture).encode()).text, junk, keep)


def test_an_uploaded_pdf_is_cleaned():
    data = make_pdf(["# -*- mode: text -*-", "Written by Jane Doe | 7 min read",
                     "The 2024 trial cut household energy use by 40 percent."])
    text = extract_document(filename="trial.pdf", data=data).text
    assert text == "The 2024 trial cut household energy use by 40 percent."


# --- rules on single lines ------------------------------------------------------------------------

CONTENT = [
    "该政策更新于2025年3月14日，新增了三项补贴。",
    "更新于2025年3月14日的数据显示，销量增长了37.9%。",
    "作者指出，2023年的销量为949.5万辆。",
    "阅读量最高的文章讨论了电池价格。",
    "The rules were updated on March 14, 2025, after a review.",
    "By 2030 the share of heat pumps will double.",
    "By Tuesday the crews had restored power to 90 percent of homes.",
    "March 14, 2025 was the day the rate rose by 0.25 points.",
    "Subscribe to the task-succeeded event to be told when a task ends.",
    "Share prices fell 3 percent on March 14, 2025.",
    "The vim editor reads a modeline such as vim: set ts=4 from the first lines.",
    "Sponsors of the bill said it would cut costs by 12 percent.",
    "Related studies found the same effect in 2023.",
    "See also the 2024 report, which found a 12 percent fall.",
    "相关阅读量在2024年增长了12%。",
    "Read more slowly: the rules changed on 1 May 2025.",
    "Many drugs interact with warfarin (e.g. see also: aspirin and ibuprofen), so check the label first.",
]


@pytest.mark.parametrize("sentence", CONTENT)
def test_a_content_sentence_with_a_date_or_a_marker_word_stays(sentence):
    assert clean_text(sentence) == sentence
    assert not is_furniture(sentence)


FURNITURE = [
    "By Jane Doe | Updated March 14, 2025 | 5 min read",
    "作者：本报编辑部 · 更新于2025年3月14日 · 阅读约5分钟",
    "发布时间：2025-03-14 10:30 来源：新华网",
    "Last updated: 2025-03-14",
    "阅读 1,234",
    "8 min read",
    "# vim: syntax=rst",
    "<!-- vim: set ft=markdown: -->",
    ".. -*- mode: rst -*-",
    "This project exists thanks to all the people who contribute.",
    "Support this project by becoming a sponsor.",
    "感谢所有贡献者！",
    "Share this story: Twitter Facebook",
    "分享到：微信 微博",
    "Sign up for our newsletter",
    "Related: How to count your days in the UK for settlement.",
    "See also: the best side dishes for a Japanese beef dinner",
    "相关阅读：英国毕业生签证怎么申请",
    "Read more: Heat pumps in cold climates",
]


@pytest.mark.parametrize("line", FURNITURE)
def test_a_furniture_line_goes(line):
    content = "Heat pumps cut energy use by 40 percent."
    assert clean_text(line + "\n\n" + content) == content
    assert is_furniture(line)


def test_a_related_link_glued_to_a_paragraph_goes_and_the_paragraph_stays():
    text = ("Serve small portions; most people find 100 grams of such rich beef plenty. "
            "Related: the best side dishes for a Japanese beef dinner.")
    assert clean_text(text) == "Serve small portions; most people find 100 grams of such rich beef plenty."
    fee = "毕业生签证的申请费为822英镑。"
    assert clean_text(f"{fee}相关阅读：如何计算在英国的居留天数。") == fee


def test_the_offline_ranker_skips_furniture_sentences_from_text_indexed_before_cleaning():
    assert not is_content_sentence("This project exists thanks to all the people who contribute.")
    assert not is_content_sentence("中国新能源汽车市场格局 作者：本报编辑部 · 更新于2025年3月14日 · 阅读约5分钟 "
                                   "2023年中国新能源汽车销量达到949.5万辆。")
    assert is_content_sentence("The rules were updated on March 14, 2025, after a review.")


@pytest.mark.parametrize("sentence", [
    "Django stores the session data in a signed cookie by default.",
    "JavaScript is the most widely used programming language on GitHub.",
    "The EU copyright directive was adopted by parliament in 2019.",
    "Users sign in with a one-time code sent to their phone.",
    "截至2023年底，该公司的注册资本增加到了50亿元人民币。",
    "嫦娥四号于2019年1月3日成功登录月球背面，这是人类首次。",
])
def test_the_offline_ranker_keeps_prose_about_cookies_javascript_or_registering(sentence):
    """Furniture is matched by phrase ("accept all cookies", "请登录"), not by the word it contains."""
    assert is_content_sentence(sentence)


@pytest.mark.parametrize("sentence", [
    "Accept all cookies to continue browsing this website today.",
    "Copyright 2024 Example Blog. All rights reserved.",
    "Please enable JavaScript to view the comments on this page.",
    "版权所有 © 2024 某某科技网站，保留所有权利。",
    "请先登录后查看全文内容，注册用户可以免费阅读。",
])
def test_the_offline_ranker_still_skips_page_furniture_phrases(sentence):
    assert not is_content_sentence(sentence)


def test_a_markdown_byline_in_emphasis_goes_and_emphasised_prose_stays():
    text = "*By Jane Doe* · **5 min read**\n\n_作者：张三_\n\nPrices fell *40 percent* in the **2024** trial."
    assert clean_markdown(text) == "Prices fell *40 percent* in the **2024** trial."


def test_code_blocks_and_tables_in_markdown_are_never_touched():
    text = ("# Setup\n\n```\n# vim: set ft=sh:\nBy Jane Doe\n```\n\n| Date | By |\n|---|---|\n"
            "| 2025-03-14 | By Jane Doe |\n\n    5 min read\n")
    assert clean_markdown(text) == text.strip()


# --- properties -----------------------------------------------------------------------------------

_EN_WORDS = ["prices", "rose", "by", "percent", "in", "updated", "published", "the", "report", "on", "read",
             "minutes", "sponsors", "backers", "share", "of", "heat", "pumps", "and", "after", "review", "was"]
_EN_STARTS = ["The", "Prices", "In", "Officials", "Sales", "By", "Heat", "A", "Most"]
_ZH_PARTS = ["该政策", "更新于", "2025年3月14日", "作者", "指出", "阅读", "销量", "增长了", "37.9%", "发布于",
             "新能源汽车", "分钟", "约", "的", "数据", "显示", "，", "赞助", "分享"]
_DATES = ["March 14, 2025", "2025-03-14", "14 March 2025", "Mar. 3, 2024"]


@st.composite
def _en_sentence(draw: st.DrawFn) -> str:
    words = [draw(st.sampled_from(_EN_STARTS))]
    for _ in range(draw(st.integers(5, 14))):
        words.append(draw(st.one_of(st.sampled_from(_EN_WORDS), st.sampled_from(_DATES),
                                    st.integers(0, 99999).map(str), st.floats(0, 100).map(lambda f: f"{f:.1f}"))))
    return " ".join(words) + draw(st.sampled_from([".", "!", "?"]))


@st.composite
def _zh_sentence(draw: st.DrawFn) -> str:
    parts = [draw(st.sampled_from(["该政策", "销量", "数据", "新能源汽车", "2023年", "报告"]))]
    parts += draw(st.lists(st.sampled_from(_ZH_PARTS), min_size=4, max_size=12))
    return "".join(parts) + draw(st.sampled_from(["。", "！", "？"]))


_PARAGRAPH = st.one_of(
    # Not one that holds a reading time itself ("The prices 0 minutes read March 14, 2025."): that is the
    # furniture the tests glue on, and no cleaner can tell which of the two was the page's.
    st.lists(_en_sentence(), min_size=1, max_size=4).map(" ".join).filter(
        lambda p: not any(f"{n} minutes read" in p for n in "0123456789")),
    st.lists(_zh_sentence(), min_size=1, max_size=4).map("".join),
)

_BYLINE = st.one_of(
    st.sampled_from(["By Jane Doe", "By Li Wei", "Written by Ann Smith", "作者：本报编辑部", "记者：王芳",
                     "文/张三", "来源：新华网"]),
)
_DATE_LINE = st.one_of(
    st.sampled_from(_DATES).flatmap(lambda d: st.sampled_from([f"Updated {d}", f"Published {d}", f"Updated on {d}"])),
    st.sampled_from(["更新于2025年3月14日", "发布时间：2025-03-14 10:30", "发布于2024年12月1日"]),
)
_READING = st.one_of(
    st.integers(1, 59).flatmap(lambda n: st.sampled_from(
        [f"{n} min read", f"阅读约{n}分钟", f"Reading time: {n} minutes", f"{n} minute read", f"预计阅读时间{n}分钟"])),
)
_SEP = st.sampled_from([" · ", " | ", " ｜ ", " • ", " "])


@st.composite
def _meta_run(draw: st.DrawFn) -> tuple[str, str]:
    """A run of meta segments, and what may glue it to the text after it: a blank, or a separator when
    it ends with an English name (which has no end of its own: "By Jane Doe The prices…")."""
    segments = draw(st.lists(st.one_of(_BYLINE, _DATE_LINE, _READING), min_size=1, max_size=3))
    out = segments[0]
    for seg in segments[1:]:
        out += draw(_SEP) + seg
    glue = draw(_SEP) if not segments[-1].startswith(("By ", "Written by ")) else draw(_SEP.filter(str.strip))
    return out, glue


_TITLE = st.one_of(
    st.just(""),
    st.sampled_from(["中国新能源汽车市场格局", "Heat pumps in cold climates", "Battery prices: the 2024 review",
                     "海上风电发展现状"]),
)
_NOISY_TEXT = st.lists(
    st.sampled_from(list("ab Z1.。,:·|\n#-*!?[]()`") + [
        "By ", "作者：", "阅读约5分钟", "5 min read", "Updated March 14, 2025", "vim: ", "-*-", "![x](y)",
        "## Sponsors\n", "|b| |c|\n", ".. ", "    ", "Jane ", "中国", "2023年", "\n\n"]),
    max_size=120,
).map("".join)

_PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_PROPERTY
@given(_NOISY_TEXT)
def test_cleaning_is_idempotent(text):
    once = clean_text(text)
    assert clean_text(once) == once
    once_md = clean_markdown(text)
    assert clean_markdown(once_md) == once_md


@_PROPERTY
@given(st.lists(_PARAGRAPH, min_size=1, max_size=4))
def test_cleaning_never_removes_a_sentence_of_a_content_paragraph(paragraphs):
    text = "\n\n".join(paragraphs)
    assert clean_text(text) == text
    assert clean_markdown(text) == text


@_PROPERTY
@given(_TITLE, _meta_run(), _PARAGRAPH)
def test_cleaning_removes_a_byline_or_reading_time_glued_to_a_paragraph(title, run_glue, paragraph):
    run, glue = run_glue
    glued = f"{title} {run}{glue}{paragraph}" if title else f"{run}{glue}{paragraph}"
    assert clean_text(glued) == paragraph
    assert clean_text(f"{title}\n{run}\n\n{paragraph}".strip()) == f"{title}\n\n{paragraph}".strip()
