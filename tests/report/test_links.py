"""Issue 31: every spelling of a link that no tool returned is unlinked in every output (page, report.md, PDF).

The table holds each spelling the issue reported as surviving; the property tests generate CommonMark
with links in every spelling the spec allows and check the rendered page, the Markdown and idempotence.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from research.agents.types import SourceRef
from research.render.html import markdown_to_html
from research.report.check import report_check
from research.report.links import unlink
from tests.report.links_support import GOOD, POLICY, allowed_href, html_targets, markdown_links

SOURCES = [SourceRef(number=1, url=GOOD, title="Good", text="Heat pumps move heat with electricity.", kind="web")]

SPELLINGS = {
    "upper-case scheme": ("[t](HTTPS://evil.example/p)", "t"),
    "pointy destination with a blank": ("[t](<https://evil.example/a b>)", "t"),
    "scheme without slashes": ("[t](https:evil.example/p)", "t"),
    "entity in the scheme": ("[t](&#104;ttps://evil.example/p)", "t"),
    "escaped colon": ("[t](https\\://evil.example/p)", "t"),
    "single-quoted title": ("[t](https://evil.example/p 'x')", "t"),
    "parenthesised title": ("[t](https://evil.example/p (x))", "t"),
    "] in the link text": ("[a\\]b](https://evil.example/p)", "a\\]b"),
    "line break in the link text": ("[a\nb](https://evil.example/p)", "a\nb"),
    "figure inside a link": ("[![img](figures/x.png)](https://evil.example/p)", "![img](figures/x.png)"),
    "ftp": ("[t](ftp://evil.example/p)", "t"),
    "mailto": ("[t](mailto:a@evil.example)", "t"),
    "upper-case autolink": ("<HTTPS://evil.example/p>", ""),
    "email autolink": ("<a@evil.example>", "a@evil.example"),
    "between escaped backticks": ("\\`a [t](https://evil.example/p) b\\`", "\\`a t b\\`"),
    "full reference": ("[t][r]\n\n[r]: https://evil.example/p", "t\n\n"),
    "shortcut reference with a title": ("[t]\n\n[t]: <https://evil.example/p> 'x'", "t\n\n"),
    "remote image": ("![x](https://evil.example/i.png)", ""),
    "in a table cell": ("| a | [t](https://evil.example/p) |\n|---|---|\n| b | c |", "| a | t |\n|---|---|\n| b | c |"),
    "in a quoted list": ("> - [t](https://evil.example/p) x", "> - t x"),
}


@pytest.mark.parametrize("name", list(SPELLINGS))
def test_every_reported_spelling_is_unlinked_and_keeps_its_text(name):
    md, expected = SPELLINGS[name]
    out = unlink(md, POLICY)
    assert out.markdown == expected and out.removed >= 1
    assert all(allowed_href(h) or h.startswith("figures/") for h in markdown_links(out.markdown))


@pytest.mark.parametrize("name", list(SPELLINGS))
def test_no_reported_spelling_survives_the_check_on_the_page(name):
    md = f"# Report\n\nHeat pumps move heat with electricity [1]. {SPELLINGS[name][0]}\n"
    checked = report_check(md, SOURCES, remove_sure=False).markdown
    page = html_targets(str(markdown_to_html(checked, figure_url=lambda n: f"/f/{n}")))
    assert all(allowed_href(h) for h in page.hrefs), page.hrefs
    assert all(s.startswith("/f/") for s in page.srcs)
    assert "evil.example/p" not in " ".join(markdown_links(checked))


def test_links_a_tool_returned_anchors_and_figures_stay():
    md = f"[a]({GOOD}) [b](HTTPS://GOOD.example/a/) <{GOOD}> [c](#ref-1) ![d](figures/chart.png)"
    assert unlink(md, POLICY).markdown == md


# ---------------------------------------------------------------- generated CommonMark

WORDS = st.text(alphabet="abcdefgh xyz.,;:", min_size=1, max_size=12).map(lambda s: s.strip() or "w")
BAD = [
    "https://evil.example/p", "HTTPS://evil.example/p", "<https://evil.example/a b>", "https:evil.example/p",
    "&#104;ttps://evil.example/p", "https\\://evil.example/p", "ftp://evil.example/p", "mailto:a@evil.example",
    "//evil.example/p", "evil.example/p", "javascript:alert(1)", "data:text/html,x",
]
GOOD_DESTS = [GOOD, "HTTPS://GOOD.example/a/", f"<{GOOD}>", "#sec-1"]
TITLES = ["", ' "t"', " 't'", " (t)"]


@st.composite
def pieces(draw) -> tuple[str, str]:
    """(Markdown, what it must become): a word, a citation, code, or a link / image / autolink."""
    kind = draw(st.sampled_from(["word", "cite", "code", "link", "image", "autolink", "reflink"]))
    label = draw(WORDS)
    if kind == "word":
        return label, label
    if kind == "cite":
        return "[1]", "[1]"
    if kind == "code":
        return f"`{label} [t](https://evil.example)`", f"`{label} [t](https://evil.example)`"
    good = draw(st.booleans())
    dest = draw(st.sampled_from(GOOD_DESTS if good else BAD))
    title = draw(st.sampled_from(TITLES))
    if kind == "link":
        md = f"[{label}]({dest}{title})"
        return md, md if good else label
    if kind == "image":
        md = f"![{label}]({dest}{title})"
        return md, md if good else ""  # the renderer shows only figures; the policy keeps what it allows
    if kind == "autolink":
        url = GOOD if good else draw(st.sampled_from(["https://evil.example/p", "HTTPS://evil.example/q"]))
        return f"<{url}>", f"<{url}>" if good else ""
    return f"[{label}][{label}]\x00{label}\x00{dest}{title}", ""  # expanded by documents()


@st.composite
def documents(draw) -> tuple[str, str]:
    parts = draw(st.lists(pieces(), min_size=1, max_size=12))
    body_md, body_out, definitions, defs_out = [], [], [], []
    for index, (md, out) in enumerate(parts):
        if "\x00" in md:
            link, label, dest = md.split("\x00")
            ref = f"r{index}"
            good = dest.split(" ")[0] in GOOD_DESTS
            body_md.append(f"[{label}][{ref}]")
            body_out.append(f"[{label}][{ref}]" if good else label)
            definitions.append(f"[{ref}]: {dest}")
            defs_out.append(f"[{ref}]: {dest}" if good else "")
        else:
            body_md.append(md)
            body_out.append(out)
    md = " ".join(body_md) + ("\n\n" + "\n".join(definitions) if definitions else "")
    out = " ".join(body_out) + ("\n\n" + "\n".join(defs_out) if definitions else "")
    return md, out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_generated_links_are_unlinked_text_kept_and_the_check_is_idempotent(doc):
    md, expected = doc
    once = unlink(md, POLICY).markdown
    assert once == expected  # text outside the links comes back byte for byte
    assert unlink(once, POLICY).markdown == once
    page = html_targets(str(markdown_to_html(once, figure_url=lambda n: f"/f/{n}")))
    assert all(allowed_href(h) for h in page.hrefs), page.hrefs
    assert all(allowed_href(h) or h.startswith("figures/") for h in markdown_links(once))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
# Found by Hypothesis: a link with no word in its text left ":b.:" behind, which the first check cited and
# the second marked unverified.
@example(doc=("[:b. :](https://evil.example/p)", ":b. :"))
def test_after_the_claim_check_the_page_links_only_to_sources_and_anchors(doc):
    md, _ = doc
    checked = report_check(f"# R\n\n{md}\n", SOURCES, remove_sure=False).markdown
    page = html_targets(str(markdown_to_html(checked, figure_url=lambda n: f"/f/{n}")))
    assert all(allowed_href(h) for h in page.hrefs), (checked, page.hrefs)
    assert len(page.ids) == len(set(page.ids))
    again = report_check(checked, SOURCES, remove_sure=False).markdown
    assert _text(again) == _text(checked)  # idempotent; only the note's counts may differ (nothing left to remove)


def _text(md: str) -> list[str]:
    return [line for line in md.split("\n") if line.strip() and not line.startswith("_Verification: ")]
