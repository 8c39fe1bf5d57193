"""Issue 32, items 2 and 5 in a browser with JavaScript on: an offline step that reads past its first
hits says so live in the timeline ("reading further: …", replayed the same after a reload) and the page
it found is cited in the report; a part of a question that no page answers reads "No source found on …"
(未找到关于…的来源) on its step card and in its report section, never an empty section, and the job is done.

The pages are served by a site of this module's own (bench/eval/corpus.py's CorpusSite over the pages
below) to a web server and worker of their own, so the session's test site and its rankings stay as
other tests expect them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.utils import translation

from bench.eval.corpus import CorpusSite, Page
from research.jobs.models import JobEvent, JobStatus, JobStep, ResearchJob
from tests.e2e.conftest import own_stack, shot, sign_in, submit_offline_job
from tests.support.procs import AsgiServer

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _page(name: str, title: str, lang: str, *paragraphs: str) -> Page:
    return Page(name, title, lang, "", paragraphs)


# Five short pages repeat the question's words without a price, so the search ranks them first; the
# vendor's long pricing page states the price once and ranks after them: a step that reads only its
# first 4 hits never sees it. Nothing on the site says who makes the product.
PAGES = [
    _page("quillmate-forum", "Quillmate team plan: how much does it cost?", "en",
          "People ask how much the Quillmate team plan costs before they move a whole team to Quillmate.",
          "The Quillmate team plan adds shared notebooks and admin controls to the Quillmate note-taking app."),
    _page("quillmate-worth-it", "Is the Quillmate team plan worth the cost?", "en",
          "Whether the Quillmate team plan is worth its cost depends on how many people share notebooks.",
          "Most teams try the Quillmate team plan for a few weeks before they decide."),
    _page("quillmate-review", "Quillmate team plan review", "en",
          "Our review of the Quillmate team plan looks at shared notebooks, search and the admin console.",
          "The Quillmate team plan cost question is answered on the vendor's own pages, not here."),
    _page("quillmate-migration", "Moving a team to the Quillmate team plan", "en",
          "Moving a team to the Quillmate team plan takes an afternoon: export the notes, invite the team, import.",
          "Ask your admin how the Quillmate team plan is billed before the move."),
    _page("quillmate-tips", "Ten tips for the Quillmate team plan", "en",
          "Tags and saved searches make the Quillmate team plan easier for a large team.",
          "Pin the notebooks the whole team uses so new members find them."),
    _page("quillmate-pricing", "Plans and pricing", "en",
          "Quillmate comes in four plans. The free plan keeps up to 500 notes on two devices and has no shared "
          "notebooks.",
          "The personal plan removes the note limit, adds offline access on every device and keeps a version "
          "history of each note for one year.",
          "The Quillmate team plan costs 9 dollars per user and month, billed yearly, and includes shared "
          "notebooks, an admin console and single sign-on.",
          "The enterprise plan adds audit logs, data residency in the European Union and a named support "
          "contact; its price is agreed with each customer.",
          "All paid plans can be cancelled at the end of any billing period, and unused months are refunded."),
    _page("qinghe-forum", "青禾笔记团队版的价格是多少？", "zh",
          "很多人在把整个团队迁移到青禾笔记之前，都会先问青禾笔记团队版的价格是多少。",
          "青禾笔记团队版在青禾笔记的基础上增加了共享笔记本和管理后台。"),
    _page("qinghe-worth-it", "青禾笔记团队版的价格值不值？", "zh",
          "青禾笔记团队版的价格值不值，要看团队里有多少人共享笔记本。",
          "大多数团队会先试用青禾笔记团队版几周再做决定。"),
    _page("qinghe-review", "青禾笔记团队版评测", "zh",
          "我们的评测关注青禾笔记团队版的共享笔记本、搜索和管理后台。",
          "关于青禾笔记团队版的价格，请以官方页面为准，本文不作讨论。"),
    _page("qinghe-migration", "把团队迁移到青禾笔记团队版", "zh",
          "把团队迁移到青禾笔记团队版只需要一个下午：导出笔记、邀请成员、再导入。",
          "迁移之前，请先向管理员确认青禾笔记团队版的付费方式。"),
    _page("qinghe-tips", "青禾笔记团队版的十个技巧", "zh",
          "标签和保存的搜索能让大团队更顺手地使用青禾笔记团队版。",
          "把全队常用的笔记本置顶，新成员就能很快找到。"),
    _page("qinghe-pricing", "套餐与价格", "zh",
          "青禾笔记提供四种套餐。免费版最多保存500条笔记，可在两台设备上使用，没有共享笔记本。",
          "个人版取消笔记数量限制，支持所有设备离线访问，并保留每条笔记一年的历史版本。",
          "青禾笔记团队版的价格为每位成员每月60元，按年付费，包含共享笔记本、管理后台和单点登录。",
          "企业版增加审计日志、数据本地存储和专属客服，价格与每位客户单独商定。",
          "所有付费套餐都可以在任一计费周期结束时取消，未使用的月份会退款。"),
]
PRICING = "/pages/quillmate-pricing.html"

# The timeline's words for a read_more activity (templates/jobs/_timeline_i18n.html, static/js/job.js).
READ_MORE = "“{title}”: reading further: {reason}"


@pytest.fixture(scope="module")
def reading_stack(django_db_setup, stack_env) -> Iterator[tuple[AsgiServer, CorpusSite]]:
    """A web server and worker whose only search is this module's site (own Redis db, own queue)."""
    site = CorpusSite(PAGES).start()
    with own_stack(stack_env, searxng_url=site.url, providers="searxng", redis_db=3, name="reading") as server:
        yield server, site
    site.stop()


def _read_more(page, job_id: int) -> tuple[list[str], list[str]]:
    """(the timeline's read_more lines, without their time; the sentence each should read as, in the
    page's language): the lines are found by the numbers of the job's stored read_more events."""
    events = [e for e in JobEvent.objects.filter(job_id=job_id, type="step.activity").order_by("seq")
              if e.payload.get("kind") == "read_more"]
    titles = dict(JobStep.objects.filter(job_id=job_id).values_list("step_id", "title"))
    with translation.override(page.get_attribute("html", "lang") or "en"):
        template = translation.gettext(READ_MORE)
    expected = [template.format(title=titles[e.payload["step"]], reason=e.payload["reason"]) for e in events]
    if not events:
        return [], expected
    shown = page.eval_on_selector_all(", ".join(f"#timeline li[data-seq='{e.seq}']" for e in events),
                                      "items => items.map(li => li.querySelector('span').textContent.trim())")
    return shown, expected


def _sections(page) -> dict[str, str]:
    """The report in the page as {h2 heading: the text under it up to the next h2}."""
    pairs = page.eval_on_selector_all(
        "#report h2",
        "hs => hs.map(h => { const parts = []; let n = h.nextElementSibling;"
        " while (n && n.tagName !== 'H2') { parts.push(n.innerText); n = n.nextElementSibling; }"
        " return [h.innerText.trim(), parts.join('\\n').trim()]; })")
    return dict(pairs)


def _card_finding(page, title: str) -> str:
    card = page.locator("#cards .step-card", has=page.locator("h3", has_text=title))
    return card.locator(".sec-finding li.finding").inner_text().strip()


def _chinese(page, base: str) -> None:
    page.goto(base + "/")
    page.select_option("select[name=language]", "zh-hans")  # the switch submits itself
    page.wait_for_selector("html[lang='zh-hans']")


def test_a_step_reads_past_its_first_hits_live_and_the_page_it_finds_is_cited(page, dora, reading_stack):
    server, site = reading_stack
    base = server.url
    sign_in(page, base)
    job_id = submit_offline_job(page, base, "How much does the Quillmate team plan cost?")
    # Live, over the socket: the step says it reads on, while the job is still running or once it is done.
    page.wait_for_selector("#timeline li.ev-step-activity:has-text('reading further')", timeout=180_000)
    page.wait_for_selector("#job[data-status='done']", timeout=300_000)
    page.wait_for_selector("#report a.cite")
    lines, expected = _read_more(page, job_id)
    assert expected, "the engine emitted no read_more activity"
    assert lines == expected  # the human sentence with the step's title and the reason, once per event
    for line in lines:
        assert "undefined" not in line and "read_more" not in line and "{" not in line
        assert "do not answer “How much does the Quillmate team plan cost" in line

    # The pricing page, read past the first hits, is in the references and cited in the text.
    ref = page.locator(f"#report ul.references li:has(a[href='{site.url}{PRICING}'])")
    assert ref.count() == 1
    ref_id = ref.get_attribute("id")
    assert ref_id and page.locator(f"#report a.cite[href='#{ref_id}']").count() >= 1
    assert "9 dollars per user and month" in page.inner_text("#report")
    assert ResearchJob.objects.get(pk=job_id).status == JobStatus.DONE
    shot(page, "en-7-read-further")

    # A reload replays the same lines from the stored events.
    page.reload()
    page.wait_for_selector("#job[data-status='done']")
    page.wait_for_selector(f"#timeline li.ev-step-activity >> text={lines[-1]}")
    assert _read_more(page, job_id)[0] == lines


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_part_without_a_source_says_so_on_its_card_and_in_the_report(page, dora, reading_stack, lang):
    server, _site = reading_stack
    base = server.url
    sign_in(page, base)
    if lang == "zh":
        _chinese(page, base)
        question = "青禾笔记团队版的价格如何，开发商是哪家公司？"
        cost, part = "青禾笔记团队版的价格如何", "青禾笔记团队版的开发商是哪家公司"
        line = "未找到关于“青禾笔记团队版的开发商是哪家公司”的来源。"
        figure = "每位成员每月60元"
    else:
        question = "How much does the Quillmate team plan cost, and who makes Quillmate?"
        cost, part = "How much does the Quillmate team plan cost", "Who makes Quillmate"
        line = "No source found on “Who makes Quillmate”."
        figure = "9 dollars per user and month"
    job_id = submit_offline_job(page, base, question, max_steps=3)
    page.wait_for_selector("#job[data-status='done']", timeout=300_000)
    page.wait_for_selector("#report h2")
    page.wait_for_selector("#cards .step-card.card-done .sec-finding li.finding")
    job = ResearchJob.objects.get(pk=job_id)
    assert job.status == JobStatus.DONE, job.error  # a part without a source is not a failed job
    shot(page, f"{lang}-8-no-source")
    # The answered part's card lists what it found one item a line, not joined by the list's dashes.
    found = _card_finding(page, cost).splitlines()
    assert len(found) >= 2 and not [item for item in found if item.startswith(("-", "*")) or " - " in item]
    # The timeline's read_more lines in the page's language (the price part reads past its first hits).
    lines, expected = _read_more(page, job_id)
    assert lines == expected and (expected or lang == "en")
    unanswered = JobStep.objects.get(job_id=job_id, title=part).result.get("notes", {}).get("unanswered")
    assert unanswered == part
    page.wait_for_selector(f"#cards .step-card.card-done >> text={line}")
    assert _card_finding(page, part) == line

    sections = _sections(page)
    assert sections and all(text for text in sections.values()), sections  # never an empty section
    assert line in sections[part]
    answer = next(iter(sections.values()))  # the answer comes first, part by part
    assert line in answer and figure in answer  # the part with a source is answered
    assert page.locator("#job-error").count() == 0 or not page.is_visible("#job-error")
