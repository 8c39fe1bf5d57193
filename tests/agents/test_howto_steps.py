"""Issue 32, item 5: a "how do I …" question is answered with the steps its sources state as code inline
("… with vaultkeep init --store /srv/vault …"), not with the tool's changelog or praise. The tool and
its pages are made up for this test; in-memory context, no model, no network."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from research.agents.engines.offline import OfflineEngine
from research.agents.engines.offline.question import question_facets
from research.agents.engines.offline.read import inline_command
from tests.support.fake_context import FakeContext, FakePage

TOOLS = frozenset({"vaultkeep"})


@pytest.mark.parametrize(("sentence", "states"), [
    ("First create a store with vaultkeep init --store /srv/vault and pick a passphrase.", True),  # a flag
    ("Then save your home folder with vaultkeep -s /srv/vault save ~ as a new snapshot.", True),
    ("On Debian, install it with sudo apt install vaultkeep and check that it runs.", True),  # a shell tool
    ("After a save, run vaultkeep list to see what you have.", True),  # the tool after "run"
    ("Point the VAULTKEEP_PASSPHRASE_FILE environment variable at a file only you can read.", True),
    ("Add --skip-caches to the save command so caches are left out.", True),
    ("vaultkeep is a backup program that is fast and secure.", False),  # the tool's name in prose
    ("vaultkeep encrypts everything with AES-256 before it leaves the machine.", False),
    ("The COVID_19 pandemic moved many offices online.", False),  # no environment variable
    ("Winter lows reach -40 degrees in the north.", False),  # a negative number is no flag
    # A shell program that is a common English word is one only after "run"/"with" or before a flag.
    ("A systemd timer is the simplest way to make vaultkeep save your home folder every night.", False),
    ("Cargo ships carry most of the world's goods.", False),
    ("Build it with make install before the first run.", True),
    ("Then run pip install vaultkeep in a virtual environment.", True),
])
def test_a_sentence_states_a_step_as_code_inline(sentence, states):
    assert inline_command(sentence, TOOLS) is states


_PROSE = st.lists(st.sampled_from("the a store is fast and secure backups keep your data safe on disk it "
                                  "runs every night with care vaultkeep".split()), min_size=1, max_size=20)


@settings(deadline=None)  # no timing: the first call loads the word frequencies
@given(_PROSE)
def test_prose_states_no_step_until_a_flag_is_added(words):
    sentence = " ".join(words) + "."
    # Words of plain prose (the tool's name among them, after no "runs"/"with") state no command …
    if not any(a in ("with", "runs") and b == "vaultkeep" for a, b in zip(words, words[1:], strict=False)):
        assert not inline_command(sentence, TOOLS)
    # … and a flag makes one, wherever it stands.
    assert inline_command(f"{' '.join(words)} --verbose.", TOOLS)


GUIDE = FakePage(
    "https://example.org/vaultkeep-guide", "Encrypted backups on Linux: a walkthrough",
    "This walkthrough uses vaultkeep, a single-binary tool, to keep encrypted copies of your files on an "
    "external disk. It takes about ten minutes to set up.\n\n"
    "On Debian or Ubuntu, install it with sudo apt install vaultkeep and check that the program runs.\n\n"
    "When you create the store you are asked for a passphrase; if you lose it, nobody can recover the data.\n\n"
    "First create the store with vaultkeep init --store /srv/vault and choose a passphrase when asked.\n\n"
    "Then back up your home folder with vaultkeep -s /srv/vault save ~ to make a new snapshot.\n\n"
    "After a backup, run vaultkeep list to see your snapshots, and test a restore now and then.",
)
CHANGES = FakePage(
    "https://example.org/vaultkeep-changes", "vaultkeep release notes",
    "Progress output became easier to read in vaultkeep, and backing up a home folder with many small "
    "files is faster. Recent vaultkeep releases added compression to the store format, which makes backups "
    "of text files much smaller. Users of old vaultkeep stores can upgrade them with a migration.",
)


def test_a_how_to_answer_gives_the_steps_the_sources_state():
    question = "How do I set up a vaultkeep backup store and back up my home folder?"
    ctx = FakeContext(question=question, kb_pages=[CHANGES, GUIDE], options={"kb": "tools", "web": False})
    engine = OfflineEngine()
    plan = engine.plan(ctx, max_steps=3)
    results = [engine.research(ctx, step, plan, []) for step in plan.steps]
    report = engine.report(ctx, plan, results, style="academic", on_delta=lambda _: None)
    answer = report.split("## Answer", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in answer.splitlines() if line.strip()]
    # The answer is the steps the guide states as code, each once, in the guide's order (install, create,
    # back up, list), and nothing from the release notes.
    assert lines and all(inline_command(line, TOOLS) for line in lines), answer
    assert len(lines) >= 3, answer
    quoted = [line.rsplit(" [", 1)[0] for line in lines]
    assert all(q in GUIDE.text for q in quoted)
    assert [GUIDE.text.index(q) for q in quoted] == sorted(GUIDE.text.index(q) for q in quoted)
    assert len(set(quoted)) == len(quoted)
    for step in ("vaultkeep init --store /srv/vault", "vaultkeep -s /srv/vault save ~"):
        assert step in answer, report
    # No section quotes the release notes: a procedure's sections hold steps, settings and problems.
    assert "compression" not in report and "Progress output" not in report, report


def test_a_how_to_plan_has_steps_settings_and_pitfalls_not_a_history():
    engine = OfflineEngine()
    how = engine.plan(FakeContext(question="How do I set up a vaultkeep backup store?"), max_steps=3)
    assert [s.title for s in how.steps] == ["Steps", "Options and configuration", "Common problems"]
    zh = engine.plan(FakeContext(question="如何安装并配置 vaultkeep 备份？", locale="zh-CN"), max_steps=3)
    assert [s.title for s in zh.steps] == ["操作步骤", "选项与配置", "常见问题"]
    other = engine.plan(FakeContext(question="What limits vaultkeep adoption?"), max_steps=3)
    assert "Steps" not in [s.title for s in other.steps]
    # A figure asked of a procedure is no how-to: no settings or pitfalls sections for a price.
    cost = engine.plan(FakeContext(question="How much does a vaultkeep appliance cost to install?"), max_steps=3)
    assert not {"Steps", "Options and configuration", "Common problems"} & {s.title for s in cost.steps}


def test_a_procedure_s_pitfalls_are_no_facet_of_other_questions():
    # "warning" and "lost" are a procedure's pitfall words; the warning signs of an illness or the rate a
    # habitat is lost at are not what goes wrong in a procedure.
    assert "pitfalls" not in [f.key for f in question_facets("What are the warning signs of vaultkeep fever?")]
    assert "pitfalls" not in [f.key for f in question_facets("How fast are vaultkeep marshes being lost?")]
    assert "pitfalls" in [f.key for f in question_facets("How do I set up vaultkeep without errors?")]


def test_feedback_about_the_plan_s_length_is_no_request_for_the_steps_facet():
    engine = OfflineEngine()
    ctx = FakeContext(question="How do I set up a vaultkeep backup store?")
    first = engine.plan(ctx, max_steps=4)
    shorter = engine.plan(ctx, max_steps=4, feedback="fewer steps please", previous=first)
    assert len(shorter.steps) == len(first.steps) - 1


def test_the_answer_s_steps_come_from_every_sentence_a_step_ranked_install_first():
    """Sections share sentences out, so a step's second command may be shown in no section; a doubtful
    page's step counts when it names the tool, and installing comes first wherever its page stands."""
    from research.agents.engines.offline.write import _Section, _stated_steps, installs

    init = {"text": "First create the store with vaultkeep init --store /srv/vault and pick a passphrase.", "source": 1}
    save = {"text": "Then save your home folder with vaultkeep -s /srv/vault save ~ as a new snapshot.", "source": 1}
    install = {"text": "On Debian, install it with sudo apt install vaultkeep first.", "source": 2, "doubtful": True}
    other = {"text": "Point the BORG_PASSPHRASE environment variable at a file.", "source": 3, "doubtful": True}
    texts = {1: f"{init['text']} {save['text']}", 2: install["text"], 3: other["text"]}
    sections = [
        _Section("Steps", [init], "", True, {"sentences": [init, save, install, other]}),
        _Section("Options and configuration", [], "", True, {"sentences": [save]}),
    ]
    steps = _stated_steps(sections, TOOLS, texts)
    assert [s["text"] for s in steps] == [install["text"], init["text"], save["text"]]
    assert installs(install["text"]) and not installs(init["text"])
    assert not installs("Users can install plugins from the store.")  # no package manager


def test_a_sentence_the_answer_quotes_is_not_quoted_again_by_another_section_s_copy():
    """The answer may quote a step's ranked sentence while another section shows its own copy of it: what
    was said, and where, is what counts as used, not the object."""
    from research.agents.engines.offline.write import _key_findings, _said, _Section

    text = "First create the store with vaultkeep init --store /srv/vault and pick a passphrase."
    in_answer = {"text": text, "source": 1, "score": 1.0}
    copy = dict(in_answer)  # the same quote in another step's notes
    other = {"text": "Stores can live on a local disk or an SFTP server.", "source": 2, "score": 0.5}
    sections = [_Section("Current state", [copy, other], "", True, {})]
    findings = _key_findings("How do I set up vaultkeep?", sections, "academic", {_said(in_answer)})
    assert [s["text"] for _, s in findings] == [other["text"]]
