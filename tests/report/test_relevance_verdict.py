"""The claim check's relevance verdict: a cited sentence about another subject than the job's question is
counted, named in the check's note, and shown on the report's check line (English and Chinese)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from research.agents.types import SourceRef
from research.jobs import services
from research.jobs.models import JobStatus, ResearchJob, Source
from research.report.check import report_check
from tests.agents.test_subject import (
    DRUG_PAGE,
    DRUG_Q,
    MANGROVE_PAGE,
    METRO_PAGE,
    RAIL_PAGE,
    RAIL_Q,
    SEAGRASS_PAGE,
    SEAGRASS_Q,
    SURGERY_PAGE,
)


def _refs(*pages: tuple[str, str]) -> list[SourceRef]:
    return [SourceRef(number=n, url=f"https://pages.example/{n}", title=title, text=text)
            for n, (title, text) in enumerate(pages, start=1)]


SEAGRASS_REPORT = (
    "# Seagrass\n\n"
    "Seagrass meadows grow in shallow coastal waters on every continent except Antarctica [1]. "
    "They are being lost at about 7% a year, and their loss has accelerated since 1990 [1]. "
    "Mangroves are being lost at 1 to 2% a year, mostly to shrimp farms [2].\n"
)


def test_a_sentence_taken_from_a_near_miss_page_is_counted_and_named():
    result = report_check(SEAGRASS_REPORT, _refs(SEAGRASS_PAGE, MANGROVE_PAGE), question=SEAGRASS_Q)
    assert result.supported == result.checked == 3  # every claim is in its source: support alone cannot tell
    assert result.off_subject == 1
    about = {c.text[:20]: c.about for c in result.claims}
    assert about == {"Seagrass meadows gro": True, "They are being lost ": True, "Mangroves are being ": False}
    assert "1 cited sentence(s) are about another subject than the question's" in result.markdown
    assert result.summary()["off_subject"] == 1


def test_without_the_question_nothing_is_judged():
    result = report_check(SEAGRASS_REPORT, _refs(SEAGRASS_PAGE, MANGROVE_PAGE))
    assert result.off_subject == 0 and all(c.about is None for c in result.claims)


def test_a_sentence_that_names_the_subject_but_cites_a_page_on_another_is_flagged():
    # How a model rewrites a near miss: the question's subject put in, the other page's figure kept.
    report = "# Seagrass\n\nSeagrass meadows are being lost at 1 to 2% a year, mostly to shrimp farms [1].\n"
    result = report_check(report, _refs(MANGROVE_PAGE), question=SEAGRASS_Q)
    assert result.off_subject == 1, result.claims
    ok = report_check(report.replace("1 to 2%", "about 7%").replace(", mostly to shrimp farms", ""),
                      _refs(SEAGRASS_PAGE), question=SEAGRASS_Q)
    assert ok.off_subject == 0


def test_drug_class_against_surgery():
    report = (
        "# GLP-1\n\nThe most common side effects of GLP-1 drugs are nausea, vomiting and diarrhoea [1]. "
        "Side effects of bariatric surgery include dumping syndrome in up to 50% of patients [2]. "
        "Unlike GLP-1 drugs, bariatric surgery leads to lasting weight loss for most patients [2].\n"
    )
    result = report_check(report, _refs(DRUG_PAGE, SURGERY_PAGE), question=DRUG_Q)
    assert [c.about for c in result.claims] == [True, False, False]
    assert result.off_subject == 2


def test_chinese_intercity_rail_against_urban_metro():
    report = (
        "# 城际铁路\n\n截至2023年底，全国城际铁路运营里程超过3000公里[1]。"
        "2023年，全国城市地铁客流超过290亿人次，运营里程达到1万公里[2]。\n"
    )
    result = report_check(report, _refs(RAIL_PAGE, METRO_PAGE), locale="zh-CN", question=RAIL_Q)
    assert [c.about for c in result.claims] == [True, False]
    assert result.off_subject == 1
    assert "1 处引用的句子谈的是另一主题" in result.markdown


def test_a_question_of_common_words_flags_nothing():
    result = report_check(SEAGRASS_REPORT, _refs(SEAGRASS_PAGE, MANGROVE_PAGE),
                          question="What drove inflation in 2021 and 2022?")
    assert result.off_subject == 0


def test_a_chinese_report_over_english_pages_is_not_judged_word_for_word():
    report = "# 海草\n\n海草床每年消失约7%[1]。\n"
    result = report_check(report, _refs(SEAGRASS_PAGE), locale="zh-CN", question="海草床消失得有多快？")
    assert result.off_subject == 0 and result.claims[0].about is None


@settings(max_examples=20, deadline=None)
@given(st.lists(st.sampled_from(["carbon", "loss", "rate", "store", "coastal", "year"]), min_size=1, max_size=10))
def test_general_words_in_the_cited_sentence_never_clear_it(general):
    sentence = "Mangroves are being lost at 1 to 2% a year " + " ".join(general)
    report = f"# S\n\n{sentence} [1].\n"
    page = (MANGROVE_PAGE[0], MANGROVE_PAGE[1] + " " + sentence + ".")
    result = report_check(report, _refs(page), question=SEAGRASS_Q)
    assert result.off_subject == 1


# ---------------------------------------------------------------- the report's check line


@pytest.mark.django_db
def test_the_job_page_check_line_counts_sentences_about_another_subject(alice, alice_client):
    job = services.job_create(user=alice, question=SEAGRASS_Q, options={"engine": "offline"})
    for n, (title, text) in enumerate((SEAGRASS_PAGE, MANGROVE_PAGE), start=1):
        Source.objects.create(job=job, number=n, url=f"https://pages.example/{n}", title=title, text=text,
                              text_hash=str(n))
    services.report_version_create(job=job, markdown=SEAGRASS_REPORT, author="reporter")
    ResearchJob.objects.filter(pk=job.pk).update(status=JobStatus.DONE)
    job.refresh_from_db()
    services.report_edit(job=job, markdown=SEAGRASS_REPORT)  # the same check the reporter's text goes through
    page = alice_client.get(f"/jobs/{job.pk}/").content.decode()
    line = page.split('id="report-check">', 1)[1].split("</p>", 1)[0]
    assert "Claim check: 3 of 3 cited claims found in their sources" in line
    assert "cited sentences about another subject than the question: 1" in line
    zh = alice_client.get(f"/jobs/{job.pk}/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "谈的是另一主题而非所问主题的引用句子：1 处" in zh


@pytest.mark.django_db
def test_the_check_line_says_nothing_of_subjects_when_every_sentence_is_on_it(alice, alice_client):
    job = services.job_create(user=alice, question=SEAGRASS_Q, options={"engine": "offline"})
    Source.objects.create(job=job, number=1, url="https://pages.example/1", title=SEAGRASS_PAGE[0],
                          text=SEAGRASS_PAGE[1], text_hash="1")
    on_subject = SEAGRASS_REPORT.rsplit(" Mangroves", 1)[0] + "\n"
    services.report_version_create(job=job, markdown=on_subject, author="reporter")
    ResearchJob.objects.filter(pk=job.pk).update(status=JobStatus.DONE)
    job.refresh_from_db()
    services.report_edit(job=job, markdown=on_subject)
    page = alice_client.get(f"/jobs/{job.pk}/").content.decode()
    line = page.split('id="report-check">', 1)[1].split("</p>", 1)[0]
    assert "Claim check: 2 of 2" in line and "another subject" not in line and "report-off-subject" not in page


# ---------------------------------------------------------------- the model as a second opinion (llm engine)


def test_the_model_may_clear_a_sentence_the_subject_model_flagged_and_its_no_or_failure_leaves_it():
    import json

    from research.llm.client import LLMClient
    from research.report.check import model_relevance_judge
    from tests.support.fake_llm import FakeLLM, Reply

    def responder(body: dict) -> Reply:
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        if not system.startswith("# Role: relevance"):
            return Reply(content="wrong role")
        if "## Sentence\nMangroves are being lost" in user:
            return Reply(content="not json at all")
        return Reply(content=json.dumps({"about": "## Sentence\nUnlike mangroves, they" in user}))

    # About seagrass ("they"), but in its words it names the competitor and not the subject.
    seagrass = (SEAGRASS_PAGE[0], SEAGRASS_PAGE[1] + " Unlike mangroves, they grow fully under water.")
    report = ("# S\n\nUnlike mangroves, they grow fully under water [1]. "
              "Mangroves are being lost at 1 to 2% a year, mostly to shrimp farms [2]. "
              "Mangrove loss releases carbon stored in their soils [2].\n")
    sources = _refs(seagrass, MANGROVE_PAGE)
    lexical = report_check(report, sources, question=SEAGRASS_Q)
    assert lexical.off_subject == 3
    with FakeLLM(responder) as fake:
        judge = model_relevance_judge(LLMClient(base_url=fake.base_url, model=fake.model), "en-US", max_calls=5)
        judged = report_check(report, sources, question=SEAGRASS_Q, relevance_judge=judge)
        assert len(fake.requests) == 3  # asked only about the flagged sentences
    assert [c.about for c in judged.claims] == [True, False, False]  # yes clears; no and a broken answer do not
    assert judged.off_subject == 2
    assert "model judged" in judged.claims[0].about_why
