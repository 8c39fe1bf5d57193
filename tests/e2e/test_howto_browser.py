"""A "how do I …" question in a browser with JavaScript on (issue 32, item 5): the plan's steps are a
procedure's (Steps / Options and configuration / Common problems, not a history), and once the job is done
the report's answer gives the steps the guide states as code, in the guide's order, each once, cited to the
guide, and no section quotes the release notes or an appliance's price; a question on what installing costs
gets no how-to plan.

The pages are served by a site of this module's own (bench/eval/corpus.py's CorpusSite) to a web server and
worker of their own.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.eval.corpus import CorpusSite, Page
from research.jobs.models import JobStatus, JobStep, ResearchJob
from tests.e2e.conftest import own_stack, shot, sign_in, submit_offline_job
from tests.support.procs import AsgiServer

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GUIDE = Page(
    "vaultkeep-guide", "Encrypted backups on Linux: a vaultkeep walkthrough", "en", "", (
        "This walkthrough uses vaultkeep, a single-binary backup tool, to keep encrypted copies of your files "
        "on an external disk. Setting up a vaultkeep store takes about ten minutes.",
        "On Debian or Ubuntu, install it with sudo apt install vaultkeep and check that the program runs.",
        "First create the store with vaultkeep init --store /srv/vault and choose a passphrase when asked.",
        "Then back up your home folder with vaultkeep -s /srv/vault save ~ to make a new snapshot.",
        "After a backup, run vaultkeep list to see your snapshots, and test a restore now and then.",
    ))
CHANGES = Page(
    "vaultkeep-changes", "vaultkeep release notes", "en", "", (
        "Progress output became easier to read in vaultkeep, and backing up a home folder with many small "
        "files is faster.",
        "Recent vaultkeep releases added compression to the vaultkeep store format, which makes backups of "
        "text files much smaller.",
    ))
PRICES = Page(
    "vaultkeep-appliance", "What a vaultkeep backup appliance costs to install", "en", "", (
        "A vaultkeep backup appliance costs about 400 dollars, and a technician installs it for about 120 "
        "dollars more.",
        "The vaultkeep appliance holds two disks and keeps a second copy of every vaultkeep store.",
    ))
STEPS = ["sudo apt install vaultkeep", "vaultkeep init --store /srv/vault", "vaultkeep -s /srv/vault save ~"]


@pytest.fixture(scope="module")
def howto_stack(django_db_setup, stack_env) -> Iterator[tuple[AsgiServer, CorpusSite]]:
    """A web server and worker whose only search is this module's site (own Redis db, own queue)."""
    site = CorpusSite([GUIDE, CHANGES, PRICES]).start()
    with own_stack(stack_env, searxng_url=site.url, providers="searxng", redis_db=4, name="howto") as server:
        yield server, site
    site.stop()


def _answer(page) -> str:
    """The text under the report's first heading (the answer), up to the next one."""
    return page.eval_on_selector(
        "#report h2",
        "h => { const parts = []; let n = h.nextElementSibling;"
        " while (n && n.tagName !== 'H2') { parts.push(n.innerText); n = n.nextElementSibling; }"
        " return parts.join('\\n'); }")


def test_a_how_to_question_gets_a_procedure_plan_and_the_guide_s_steps(page, dora, howto_stack):
    server, site = howto_stack
    sign_in(page, server.url)
    job_id = submit_offline_job(page, server.url, "How do I set up a vaultkeep backup store and back up my "
                                "home folder?", max_steps=3)
    page.wait_for_selector("#job[data-status='done']", timeout=300_000)
    page.wait_for_selector("#report a.cite")
    job = ResearchJob.objects.get(pk=job_id)
    assert job.status == JobStatus.DONE, job.error
    titles = list(JobStep.objects.filter(job_id=job_id).order_by("step_id").values_list("title", flat=True))
    assert titles == ["Steps", "Options and configuration", "Common problems"]
    for title in titles:  # the plan's steps, as the page shows them
        assert page.locator("#cards .step-card h3", has_text=title).count() == 1
    answer = _answer(page)
    shot(page, "en-9-how-to")
    # The steps the guide states, in its order, each once; the release notes state no step.
    found = [answer.find(step) for step in STEPS]
    assert all(i >= 0 for i in found) and found == sorted(found), answer
    assert all(answer.count(step) == 1 for step in STEPS), answer
    # Nor does any section quote them: the release notes and an appliance's price are no step, option or
    # problem of setting the tool up.
    report = page.inner_text("#report")
    assert "compression" not in report and "Progress output" not in report and "400 dollars" not in report
    guide = page.locator(f"#report ul.references li:has(a[href='{site.url}/pages/vaultkeep-guide.html'])")
    assert guide.count() == 1
    assert page.locator(f"#report a.cite[href='#{guide.get_attribute('id')}']").count() >= len(STEPS)


def test_what_installing_costs_is_no_how_to_question(page, dora, howto_stack):
    server, _site = howto_stack
    sign_in(page, server.url)
    job_id = submit_offline_job(page, server.url, "How much does a vaultkeep backup appliance cost to install?",
                                max_steps=3)
    page.wait_for_selector("#job[data-status='done']", timeout=300_000)
    page.wait_for_selector("#report h2")
    titles = set(JobStep.objects.filter(job_id=job_id).values_list("title", flat=True))
    assert not titles & {"Steps", "Options and configuration", "Common problems"}, titles
    assert "400 dollars" in _answer(page)
