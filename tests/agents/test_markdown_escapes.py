"""A page is stored as the Markdown its extractor writes, which escapes ~ _ * [ ] and other punctuation
("RESTIC\\_PASSWORD\\_FILE", "backup \\~"). A sentence is judged on what a reader sees: the escape is the
character, an identifier's underscore is no emphasis. Before, every sentence with an escape or an
identifier was dropped as markup, so "point RESTIC_PASSWORD_FILE at it" could never be quoted, and the
claim check read "set_broker" as "setbroker". The quote itself stays the source's verbatim slice."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from research.agents.engines.offline.read import inline_command
from research.agents.rank import is_content_sentence, split_sentences
from research.report.check import plain_text
from research.report.markdown import unescaped

GUIDE_MD = (
    "On Debian or Ubuntu, install it with sudo apt install restic and check that the program runs.\n\n"
    "To avoid typing it each time, store the password in a file readable only by you and point the "
    "RESTIC\\_PASSWORD\\_FILE environment variable at it.\n\n"
    "Then back up a directory into it with restic -r /srv/restic-repo backup \\~ to save your home folder.\n\n"
    "\\[build: passing\\] \\[docs: latest\\] restic is a backup program that is fast and secure."
)


def test_sentences_with_escapes_and_identifiers_are_kept_verbatim():
    sentences = split_sentences(GUIDE_MD)
    assert any("RESTIC\\_PASSWORD\\_FILE" in s for s in sentences), sentences
    assert any("backup \\~ to save" in s for s in sentences), sentences
    assert all(s in GUIDE_MD for s in sentences)  # verbatim slices: the quote check reads them so
    assert not any("build: passing" in s for s in sentences)  # an escaped bracket is still a bracket


def test_emphasis_and_links_are_still_markup():
    assert not is_content_sentence("This sentence has _emphasis_ in it and is long enough to count.")
    assert not is_content_sentence("This sentence links to [the docs](https://example.org) and is long.")
    assert is_content_sentence("Set max_connections to 200 in the server's configuration file first.")


def test_a_step_stated_with_an_escaped_environment_variable_is_a_step():
    assert inline_command("Point the RESTIC\\_PASSWORD\\_FILE environment variable at a file.", frozenset())


def test_the_claim_check_reads_what_a_reader_sees():
    line = "Point **RESTIC\\_PASSWORD\\_FILE** at it, then run `restic -r /srv/repo backup \\~` and _relax_. [2]"
    assert plain_text(line) == "Point RESTIC_PASSWORD_FILE at it, then run restic -r /srv/repo backup ~ and relax."


_WORDS = st.lists(st.sampled_from(
    "The backup tool keeps your files safe on disk and in the cloud every night with care "
    "RESTIC_PASSWORD_FILE max_connections ~/backups 5~10 C:/data v1.2 (see below) -r --prune".split()),
    min_size=6, max_size=24)
_ESCAPABLE = "~_*[]#!().-+"


def _escaped(text: str, which: str) -> str:
    return "".join(f"\\{ch}" if ch in which else ch for ch in text)


@settings(deadline=None)  # no timing: the machine may be loaded
@given(_WORDS, st.sets(st.sampled_from(_ESCAPABLE)))
def test_escaping_punctuation_never_changes_a_verdict_or_what_is_read(words, which):
    sentence = "Then " + " ".join(words) + "."
    marked = _escaped(sentence, "".join(which))
    assert unescaped(marked) == sentence
    assert is_content_sentence(marked) == is_content_sentence(sentence)
    assert plain_text(marked) == plain_text(sentence)


@pytest.mark.parametrize("text", ["C:\\Users\\me has no escapes", "a \\ alone", "\\\\ twice"])
def test_a_backslash_before_no_punctuation_stays(text):
    assert unescaped(text).count("\\") >= 1


@pytest.mark.parametrize(("sentence", "kept"), [
    ("Install it with your package manager, for example go install github.com/acme/hooky@latest today.", True),
    ("设为默认镜像：先升级 pip 到最新的版本（>=10.0.0），然后进行配置。", True),  # a version spec
    ("Windows 下的配置文件是 %APPDATA%\\pip\\pip.ini，没有的话新建一个即可。", True),  # a path
    ("Fewer than 5 percent of cells fail when the rate stays <5% per cycle in the lab.", True),
    ("Follow us on social media @newsdesk for the latest updates every day.", False),  # a handle
    ("Wrap the text in a <div> element so that the layout stays the same.", False),  # a tag
    ("Documentation | Changelog | Contributing | Sponsors and other links here.", False),  # a menu
    (">= 10 percent of the runs failed in the first week of the trial period.", False),  # a block quote
])
def test_code_stated_inline_is_prose_not_markup(sentence, kept):
    assert is_content_sentence(sentence) is kept
