"""Issue 31: a model-written deck or podcast script says only what the report says."""

from __future__ import annotations

from research.agents.nodes.scripts import _carrying_slides
from research.agents.types import PodcastLine, PodcastScript, Slide, SlideOutline
from research.render.derive import slide_outline
from research.render.podcast_script import repair_script
from research.report.document import parse_report

REPORT = """# Heating

## Boilers

Gas boilers convert about 90 percent of the fuel energy into heat [1]. They burn natural gas [1].

## Heat pumps

Heat pumps deliver three units of heat for each unit of electricity they use [2]. Installations doubled in
2022 across Europe [2].

## References

- [1] [Boilers](https://a.example/boilers)
- [2] [Pumps](https://b.example/pumps)
"""


def test_schema_shaped_filler_decks_are_replaced_by_the_extractive_outline():
    filler = SlideOutline(title="Heating", slides=[
        Slide(title=f"Aspect {n}", bullets=[f"Examine ## Locale (aspect {n}): evidence, figures and open questions",
                                            "Key takeaways and next steps"])
        for n in range(11)
    ])  # fmt: skip
    assert _carrying_slides(filler, REPORT, "en-US", set()) is None


def test_bullets_that_carry_a_report_sentence_stay_with_its_citations_and_others_go():
    bullets = ["Gas boilers convert about 90 percent of the fuel energy into heat",
               "Boilers will be banned everywhere by 2030",
               "Heat pumps deliver three units of heat per unit of electricity",
               "Installations doubled in 2022 across Europe"]  # fmt: skip
    checked = _carrying_slides(SlideOutline(title="Heating", slides=[Slide(title="Heating", bullets=bullets)]),
                               REPORT, "en-US", set())
    assert checked is not None
    assert [b for slide in checked.slides for b in slide.bullets] == [
        "Gas boilers convert about 90 percent of the fuel energy into heat [1]",
        "Heat pumps deliver three units of heat per unit of electricity [2]",
        "Installations doubled in 2022 across Europe [2]",
    ]


def test_a_model_deck_has_no_more_slides_than_the_extractive_deck():
    slide = Slide(title="Boilers", bullets=["Gas boilers convert about 90 percent of the fuel energy into heat",
                                            "They burn natural gas"])
    checked = _carrying_slides(SlideOutline(title="Heating", slides=[slide] * 6), REPORT, "en-US", set())
    assert checked is not None and len(checked.slides) == len(slide_outline(parse_report(REPORT)).slides) == 1


def test_a_spoken_line_the_report_does_not_carry_is_dropped():
    script = PodcastScript(locale="en-US", title="Heating", lines=[
        PodcastLine(speaker="host", text="Welcome! Today: home heating.", section="Intro"),
        PodcastLine(speaker="guest", text="Gas boilers convert about 90 percent of the fuel energy into heat.",
                    section="Boilers"),
        PodcastLine(speaker="host", text="And heat pumps?", section="Heat pumps"),
        PodcastLine(speaker="guest", text="Heat pumps cut bills by 75 percent in every home.", section="Heat pumps"),
        PodcastLine(speaker="guest", text="Heat pumps deliver three units of heat for each unit of electricity.",
                    section="Heat pumps"),
        PodcastLine(speaker="host", text="Thanks for listening.", section="Heat pumps"),
    ])  # fmt: skip
    texts = [line.text for line in repair_script(script, parse_report(REPORT)).lines]
    assert not any("75 percent" in t for t in texts)
    assert any("three units of heat" in t for t in texts)
