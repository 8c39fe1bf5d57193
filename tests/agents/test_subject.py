"""The subject model (research.agents.subject): near-miss pages written for these tests, in English and
Chinese, each beside a page on the question's subject; and properties over generated variations."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from research.agents.subject import page_about, sentence_about, subject_of, with_competitors

DRUG_Q = "What are the side effects of GLP-1 drugs?"
DRUG_PAGE = (
    "GLP-1 drugs: common side effects",
    "GLP-1 drugs such as semaglutide are prescribed for diabetes and obesity. The most common side effects "
    "of GLP-1 drugs are nausea, vomiting and diarrhoea, reported by up to 40% of patients in trials. "
    "Most side effects fade after the first weeks of treatment. Rare side effects include pancreatitis "
    "and gallbladder problems.",
)
SURGERY_PAGE = (
    "Bariatric surgery: risks and side effects",
    "Bariatric surgery changes the stomach and small intestine. Unlike GLP-1 drugs, bariatric surgery "
    "leads to lasting weight loss for most patients. Side effects of bariatric surgery include dumping "
    "syndrome in up to 50% of patients, vitamin deficiencies and gallstones. After bariatric surgery, "
    "patients follow a strict diet.",
)

SEAGRASS_Q = "How much carbon do seagrass meadows store, and how fast are they being lost?"
# Names the subject once, then speaks of it with pronouns: it must not be rejected.
SEAGRASS_PAGE = (
    "Seagrass meadows",
    "Seagrass meadows grow in shallow coastal waters on every continent except Antarctica. They store "
    "carbon in their sediments for thousands of years, up to 19.9 billion tonnes worldwide. They are "
    "being lost at about 7% a year, and their loss has accelerated since 1990. Their roots hold the "
    "seabed in place.",
)
MANGROVE_PAGE = (
    "Mangrove forests are disappearing",
    "Mangroves line tropical coasts and store large amounts of carbon. Unlike seagrass meadows, mangroves "
    "grow between the tides. Mangroves are being lost at 1 to 2% a year, mostly to shrimp farms. Mangrove "
    "loss releases carbon stored in their soils.",
)

RAIL_Q = "中国城际铁路的发展情况如何？"
RAIL_PAGE = (
    "城际铁路加快建设",
    "城际铁路连接相邻城市，服务都市圈内的通勤出行。截至2023年底，全国城际铁路运营里程超过3000公里。"
    "它们的平均时速在160到200公里之间。",
)
METRO_PAGE = (
    "城市地铁客流创新高",
    "城市地铁是大城市公共交通的骨干。2023年，全国城市地铁客流超过290亿人次，运营里程达到1万公里。"
    "与城际铁路不同，城市地铁站距短、发车密。城市地铁客流在早晚高峰最为集中。",
)


def test_the_subject_is_its_specific_terms_not_its_general_words():
    drug = subject_of(DRUG_Q, "en-US")
    assert [t.core for t in drug.terms] == [("glp",)]
    assert {"side", "effect"} <= set(drug.general)  # what is asked, not what it is about
    seagrass = subject_of(SEAGRASS_Q, "en-US")
    assert seagrass.terms[0].core[0] == "seagrass"
    assert "carbon" in seagrass.general and "lost" in seagrass.general
    rail = subject_of(RAIL_Q, "zh-CN")
    assert [t.core for t in rail.terms] == [("城际",)]  # segmented: 城际 + 铁路, and 铁路 is a common word
    assert rail.terms[0].text == "城际铁路"  # one term


def test_a_part_without_its_own_subject_takes_the_question_s():
    part = subject_of("How fast are they being lost?", "en-US", within=SEAGRASS_Q)
    assert part.terms and part.terms[0].core[0] == "seagrass"
    assert not subject_of("How fast are they being lost?", "en-US").terms


def test_a_question_of_common_words_only_rejects_nothing():
    subject = subject_of("What drove inflation in 2021 and 2022?", "en-US")
    assert not subject.specific
    assert page_about(subject, "Mangroves", MANGROVE_PAGE[1]).about


@pytest.mark.parametrize(
    ("question", "locale", "on", "near"),
    [
        (DRUG_Q, "en-US", DRUG_PAGE, SURGERY_PAGE),
        (SEAGRASS_Q, "en-US", SEAGRASS_PAGE, MANGROVE_PAGE),
        (RAIL_Q, "zh-CN", RAIL_PAGE, METRO_PAGE),
    ],
    ids=["drug-vs-surgery", "seagrass-vs-mangrove", "intercity-vs-metro"],
)
def test_near_miss_pages_are_rejected_and_pages_on_the_subject_kept(question, locale, on, near):
    subject = subject_of(question, locale)
    kept = page_about(subject, *on)
    rejected = page_about(subject, *near)
    assert kept.about, kept.why
    assert not rejected.about, rejected.why
    # Without their titles, the bodies alone still tell (density and lead, not the title only).
    assert page_about(subject, "", on[1]).about
    assert not page_about(subject, "", near[1]).about


def test_a_page_that_uses_pronouns_after_naming_the_subject_once_is_kept():
    subject = subject_of(SEAGRASS_Q, "en-US")
    title, text = SEAGRASS_PAGE
    assert text.count("eagrass") == 1
    assert page_about(subject, title, text).about
    assert sentence_about(subject, "They are being lost at about 7% a year.", text, title=title)
    # The same sentence on the mangrove page is about mangroves.
    assert not sentence_about(subject, "They are being lost at about 7% a year.", MANGROVE_PAGE[1],
                              title=MANGROVE_PAGE[0])


def test_sentences_are_judged_in_their_page_s_context():
    drug = subject_of(DRUG_Q, "en-US")
    surgery_title, surgery = SURGERY_PAGE
    # A passing mention of the subject on a page about something else is not about the subject.
    assert not sentence_about(drug, "Unlike GLP-1 drugs, bariatric surgery leads to lasting weight loss.",
                              surgery, title=surgery_title)
    assert not sentence_about(drug, "Side effects of bariatric surgery include dumping syndrome.",
                              surgery, title=surgery_title)
    assert sentence_about(drug, "Most side effects fade after the first weeks of treatment.",
                          DRUG_PAGE[1], title=DRUG_PAGE[0])
    seagrass = subject_of(SEAGRASS_Q, "en-US")
    mangroves = "Mangroves are being lost at 1 to 2% a year."
    # On a page about the subject, a rare word of its own topic is no competitor ...
    assert sentence_about(seagrass, mangroves, SEAGRASS_PAGE[1], title=SEAGRASS_PAGE[0])
    assert sentence_about(seagrass, "Their roots hold the seabed in place.", SEAGRASS_PAGE[1], title=SEAGRASS_PAGE[0])
    # ... but the topic of a near-miss page among the job's pages is: the sentence is about that subject.
    rivals = with_competitors(seagrass, [SEAGRASS_PAGE, MANGROVE_PAGE])
    assert "mangrove" in rivals.competitors and "seagrass" not in rivals.competitors
    assert not sentence_about(rivals, mangroves, SEAGRASS_PAGE[1], title=SEAGRASS_PAGE[0])
    assert sentence_about(rivals, "Their roots hold the seabed in place.", SEAGRASS_PAGE[1], title=SEAGRASS_PAGE[0])
    rail = subject_of(RAIL_Q, "zh-CN")
    assert sentence_about(rail, "截至2023年底，全国城际铁路运营里程超过3000公里。", RAIL_PAGE[1], title=RAIL_PAGE[0])
    assert not sentence_about(rail, "2023年，全国城市地铁客流超过290亿人次，运营里程达到1万公里。",
                              METRO_PAGE[1], title=METRO_PAGE[0])


def test_without_a_context_a_sentence_must_name_the_subject():
    subject = subject_of(DRUG_Q, "en-US")
    assert sentence_about(subject, "GLP-1 drugs cause nausea in 40% of patients.")
    assert not sentence_about(subject, "They cause nausea in 40% of patients.")


# ---------------------------------------------------------------- properties

_GENERAL_EN = ["side effects", "loss", "rate", "carbon", "cost", "store", "risk", "patients", "percent",
               "growth", "study", "years", "trial", "impact"]
_GENERAL_ZH = ["发展", "情况", "速度", "成本", "建设", "规模", "运营", "里程", "城市"]

# (question, page on the subject, the page with the subject swapped for a competing entity)
_SWAPS = [
    ("How fast are seagrass meadows being lost?", "seagrass meadows", "mangrove forests"),
    ("What are the side effects of statins?", "statins", "bariatric surgery"),
    ("What limits lithium-sulfur batteries?", "lithium-sulfur batteries", "hydrogen fuel cells"),
]
_TEMPLATE = ("{X} are widely studied. Researchers measured {X} at 40 sites. The figures for {X} show a loss "
             "of 7% a year. Field reports on {X} agree.")


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(_SWAPS), st.lists(st.sampled_from(_GENERAL_EN), min_size=0, max_size=8))
def test_swapping_the_specific_entity_flips_the_verdict(case, general):
    question, own, other = case
    subject = subject_of(question, "en-US")
    filler = " ".join(f"The {g} matters." for g in general)
    on = _TEMPLATE.format(X=own) + " " + filler
    off = _TEMPLATE.format(X=other) + " " + filler
    assert page_about(subject, own, on).about
    assert not page_about(subject, other, off).about


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(_GENERAL_EN), min_size=1, max_size=20))
def test_adding_general_words_never_makes_an_off_subject_page_on_subject(general):
    for question, near in [(DRUG_Q, SURGERY_PAGE), (SEAGRASS_Q, MANGROVE_PAGE)]:
        subject = subject_of(question, "en-US")
        title, text = near
        padded = text + " " + " ".join(general) + "."
        assert not page_about(subject, title, padded).about
        assert not page_about(subject, f"{title}: {' '.join(general[:3])}", padded).about


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(_GENERAL_ZH), min_size=1, max_size=12))
def test_adding_general_words_never_makes_an_off_subject_chinese_page_on_subject(general):
    subject = subject_of(RAIL_Q, "zh-CN")
    title, text = METRO_PAGE
    padded = text + "".join(general) + "。"
    assert not page_about(subject, title, padded).about
    assert page_about(subject, RAIL_PAGE[0], RAIL_PAGE[1] + "".join(general) + "。").about


def test_the_model_engine_s_researcher_is_told_when_a_fetched_page_is_a_near_miss():
    from research.agents.subject import subject_note

    note = subject_note(SEAGRASS_Q, "en-US", *MANGROVE_PAGE)
    assert note.startswith("*Subject check:") and "seagrass meadows" in note and "mangrove" in note
    assert subject_note(SEAGRASS_Q, "en-US", *SEAGRASS_PAGE) == ""
    assert "城际铁路" in subject_note(RAIL_Q, "zh-CN", *METRO_PAGE)
    assert subject_note(RAIL_Q, "zh-CN", *RAIL_PAGE) == ""
    assert subject_note(RAIL_Q, "zh-CN", *SEAGRASS_PAGE) == ""  # another script: not judged word for word


def test_chinese_words_are_found_however_the_segmenter_cuts_them_in_context():
    # jieba cuts 充电桩 into 充电 + 桩约 in "公共充电桩约272.6万台"; the page still names it three times.
    subject = subject_of("中国电动汽车充电桩的数量和利用率如何？", "zh-CN")
    assert subject.terms[0].text == "电动汽车充电桩"
    page = ("截至2023年底，全国充电基础设施累计数量达到859.6万台，同比增长65%。其中公共充电桩约272.6万台，"
            "私人充电桩约587万台。车桩比约为2.4比1，也就是说平均每2.4辆新能源汽车对应一个充电桩。")
    assert page_about(subject, "中国充电基础设施数量", page).about
    swap = ("截至2023年底，全国换电站累计数量达到3500座。换电站主要服务出租车和网约车。换电站的单站投资较高，"
            "换电站运营商仍在探索盈利模式。")
    assert not page_about(subject, "换电站建设提速", swap).about


_SWAPS_ZH = [
    ("中国城际铁路的发展情况如何？", "城际铁路", "城市地铁"),
    ("固态电池量产面临哪些限制？", "固态电池", "钠离子电池"),
    ("中国抽水蓄能的成本如何？", "抽水蓄能", "压缩空气储能"),
]
_TEMPLATE_ZH = "{X}近年来发展很快。2023年，{X}的规模增长了20%。业内人士认为，{X}的成本仍然偏高。{X}的建设速度还会加快。"


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(_SWAPS_ZH), st.lists(st.sampled_from(_GENERAL_ZH), min_size=0, max_size=8))
def test_swapping_the_specific_entity_flips_the_verdict_in_chinese(case, general):
    question, own, other = case
    subject = subject_of(question, "zh-CN")
    filler = "".join(f"{g}很重要。" for g in general)
    assert page_about(subject, own, _TEMPLATE_ZH.format(X=own) + filler).about
    assert not page_about(subject, other, _TEMPLATE_ZH.format(X=other) + filler).about


def test_the_offline_engine_s_selection_rejects_near_miss_pages_and_their_sentences():
    from research.agents.engines.offline.select import _cover_sources, _on_subject, _source_weights
    from research.agents.rank import RankedSentence
    from research.agents.types import SourceRef

    sources = [SourceRef(number=n, url=f"https://pages.example/{n}", title=t, text=x)
               for n, (t, x) in enumerate([SEAGRASS_PAGE, MANGROVE_PAGE], start=1)]
    weights = _source_weights(SEAGRASS_Q, "en-US", sources)
    assert weights[2] == 0.0 and 2 in weights.rejected and 1 not in weights.rejected
    assert weights[1] > 0.3
    weights[2] = 0.9  # a later rule (the search's first hits) may raise a weight: the page stays rejected
    ranked = [RankedSentence("Mangroves are being lost at 1 to 2% a year.", 2, 2.0, 0),
              RankedSentence("They are being lost at about 7% a year.", 1, 1.0, 1)]
    assert [r.source for r in _cover_sources(ranked, weights, 5)] == [1]
    check = _on_subject(SEAGRASS_Q, "en-US", sources)
    assert check({"text": "They are being lost at about 7% a year, and their loss has accelerated since 1990.",
                  "source": 1})
    assert not check({"text": "Mangroves are being lost at 1 to 2% a year, mostly to shrimp farms.", "source": 2})


def test_a_chinese_compound_with_a_common_modifier_is_named_only_whole():
    # 海上 (offshore) is a common word, yet it is what tells 海上风电 from 陆上风电.
    subject = subject_of("中国海上风电的发展现状如何？", "zh-CN")
    assert [t.core[0] for t in subject.terms] == ["海上风电"]
    offshore = "海上风电场建在近海。2023年，中国海上风电累计装机达到3700万千瓦。海上风电的单位造价仍然较高。"
    onshore = "陆上风电场主要分布在三北地区。2023年，中国陆上风电累计装机超过4亿千瓦。陆上风电的弃风率有所下降。"
    assert page_about(subject, "中国海上风电", offshore).about
    assert not page_about(subject, "中国陆上风电", onshore).about
    # jieba's left-over characters: 钠 + 离子 is one word, and so is 锂 + 电池.
    sodium = subject_of("钠离子电池的成本和性能与锂电池相比如何？", "zh-CN")
    assert [t.core[0] for t in sodium.terms] == ["钠离子", "锂电池"]


PV_Q = "中国光伏组件的产能和价格情况如何？"


def test_what_a_question_asks_about_its_subject_is_never_its_subject():
    # 产能 and 利用率 are rare words, yet attribute nouns: the subject is 光伏组件 / 电动汽车充电桩 alone.
    assert [t.text for t in subject_of(PV_Q, "zh-CN").terms] == ["光伏组件"]
    assert "利用率" not in subject_of("中国电动汽车充电桩的数量和利用率如何？", "zh-CN").describe()
    assert "efficiency" not in subject_of("What is the efficiency of perovskite solar cells?", "en-US").describe()
    # A page on pig farms' 产能 shares an attribute with the question, not its subject.
    hogs = ("猪周期与生猪产能", "生猪产能过剩时猪价下跌，养殖户亏损后减少能繁母猪，产能下降后猪价又会上涨。"
            "2023年全国生猪养殖规模化率达到约68%。")
    assert not page_about(subject_of(PV_Q, "zh-CN"), *hogs).about


def test_a_page_the_subject_model_keeps_is_not_weighed_down_for_lacking_the_question_s_other_words():
    from research.agents.engines.offline.select import _source_weights
    from research.agents.types import SourceRef

    use = SourceRef(1, "https://pages.example/1", "公共充电桩利用率偏低",
                    "公共充电桩的平均时间利用率只有10%左右，很多运营商仍然处于亏损状态。充电桩分布不均衡。")
    weights = _source_weights("中国电动汽车充电桩的数量和利用率如何？", "zh-CN", [use])
    assert not weights.rejected and weights[1] >= 0.6


# What a title compares its topic with is not its topic (subject._before_comparison).
SLEEPLESS_Q = "疲劳驾驶引发的事故有多少，怎样预防？"
SLEEPLESS_PAGE = (
    "睡眠不足与驾驶能力：连续20小时不睡相当于酒驾",
    "研究发现，连续20小时不睡觉后，司机的反应能力下降到酒后驾驶的水平。疲劳驾驶的司机往往意识不到自己已经很困。"
    "专家建议每开2小时休息一次，感到疲劳时应停车小睡。一些汽车配备了疲劳监测系统。",
)
DRUNK_PAGE = (
    "酒驾引发的事故有多少",
    "酒驾是交通事故的主要原因之一。每年因酒驾造成的事故超过一万起。酒驾的司机反应变慢。查处酒驾的力度逐年加大。",
)
DROWSY_EN_Q = "How many crashes does drowsy driving cause?"
DROWSY_EN_PAGE = (
    "Staying awake for 20 hours is as dangerous as drunk driving",
    "Drowsy driving causes thousands of crashes a year. Drowsy driving slows reaction times the way alcohol "
    "does, and drowsy drivers often do not notice they are tired.",
)
DRUNK_EN_PAGE = (
    "Drunk driving: as common as ever",
    "Drunk driving causes about a third of road deaths. Drunk driving arrests fell in 2020. Drowsy driving is "
    "mentioned in the same report.",
)


@pytest.mark.parametrize(("question", "page", "about"), [
    (SLEEPLESS_Q, SLEEPLESS_PAGE, True),
    (SLEEPLESS_Q, DRUNK_PAGE, False),  # the rival in the title's topic, not in its comparison
    (DROWSY_EN_Q, DROWSY_EN_PAGE, True),
    (DROWSY_EN_Q, DRUNK_EN_PAGE, False),
])
def test_what_a_title_compares_its_topic_with_is_no_rival(question, page, about):
    locale = "zh-CN" if any("\u4e00" <= c <= "\u9fff" for c in question) else "en-US"
    verdict = page_about(subject_of(question, locale), *page)
    assert verdict.about is about, verdict


# A word before the title's head that the question names elsewhere is the question's own setting, not a
# rival kind: "attic insulation" for spray foam insulation *in an attic* (scope.scope_verdict).
FOAM_Q = "What does spray foam insulation in a loft cost, and is it worth it?"
OPTIONS_PAGE = (
    "Loft insulation compared: mineral wool, sheep's wool and foam",
    "Insulating a loft is a cheap way to cut heating bills, and there are three common loft materials: mineral "
    "wool rolls, sheep's wool and spray foam. Mineral wool is the cheapest loft insulation. Spray foam costs "
    "about three times as much as mineral wool, but it also seals air leaks in the loft. Sheep's wool suits "
    "the loft of an old house.",
)
WOOL_PAGE = (
    "Sheep's wool loft insulation: costs and risks",
    "Sheep's wool is a natural loft insulation. Sheep's wool costs about twice as much as mineral wool. It "
    "must be treated against moths. Sheep's wool handles damp well.",
)


def test_a_title_word_the_question_names_elsewhere_is_its_setting_not_a_rival():
    subject = subject_of(FOAM_Q, "en-US")
    assert page_about(subject, *OPTIONS_PAGE).about
    assert not page_about(subject, *WOOL_PAGE).about


# A property (a Chinese word in 性) before the title's head fills another slot than the question's setting:
# no firm verdict of another kind. A property against the question's property is still another kind.
RACE_Q = "自行车比赛中猝死的风险有多大？"
RACE_CARDIAC_PAGE = (
    "公路赛事中的心源性猝死：风险有多大",
    "心源性猝死是指因心脏原因导致的突然死亡。公路赛事中的猝死事件引起关注。研究发现每10万名参赛者中约有0.3例猝死。"
    "大部分猝死本可以通过赛前筛查避免。",
)
HEPATITIS_Q = "病毒性肝炎能治愈吗？"
ALCOHOLIC_PAGE = (
    "酒精性肝炎能治愈吗",
    "酒精性肝炎由长期大量饮酒引起。戒酒是治疗酒精性肝炎的关键，轻度酒精性肝炎戒酒后可以恢复。肝炎患者应定期复查。",
)


def test_a_property_before_the_title_s_head_is_no_rival_kind_of_a_setting():
    verdict = page_about(subject_of(RACE_Q, "zh-CN"), *RACE_CARDIAC_PAGE)
    assert not (not verdict.about and verdict.firm), verdict  # doubtful at worst, never turned away firmly
    other = page_about(subject_of(HEPATITIS_Q, "zh-CN"), *ALCOHOLIC_PAGE)
    assert not other.about and other.firm, other


# A page repeats what is done with its subject, or whom it is for, more often than the subject's name: 接种
# (a verb) and "adults" (people) are no other topic. A noun for another thing still is (潮汐 beside 海上风电).
FLU_Q = "流感疫苗需要每年都打吗，保护效果有多好？"
FLU_GUIDE = ("流行性感冒疫苗预防接种技术指南解读",
             "今年的指南建议，6月龄以上无禁忌的人都应接种。接种应在流行季前完成，最好在10月底前接种。"
             "孕妇可在任何阶段接种，老年人和慢性病患者优先接种。流感疫苗的保护期一般为6到12个月，"
             "所以每年都要接种。今年的流感疫苗与流行毒株匹配较好。接种后两周左右产生抗体，流感疫苗安全性良好。")
SHINGLES_Q = "How well does the shingles vaccine work, and who should get it?"
ADULT_SCHEDULE = ("Adult immunization schedule 2024: what changed",
                  "The adult schedule lists the vaccines adults need at each age. Adults aged 50 and older should "
                  "get two doses of the shingles vaccine. Adults with weakened immune systems qualify from 19. "
                  "Most adults also need a flu shot every year, and adults over 65 a pneumococcal vaccine. "
                  "The schedule now also covers RSV for adults aged 75 and older, and shingles protection stays "
                  "above 80 percent for seven years.")
TIDAL_Q = "中国海上风电的发展现状如何？"
TIDAL = ("中国潮流能和潮汐能的发展现状",
         "我国潮汐能资源主要分布在浙江和福建沿海。潮汐电站建设成本高，潮汐能装机规模仍然很小。"
         "与海上风电相比，潮流能技术还处在示范阶段。")


def test_a_verb_or_people_a_page_repeats_is_not_its_topic():
    assert page_about(subject_of(FLU_Q, "zh-CN"), *FLU_GUIDE).about
    assert page_about(subject_of(SHINGLES_Q, "en-US"), *ADULT_SCHEDULE).about
    tidal = page_about(subject_of(TIDAL_Q, "zh-CN"), *TIDAL)
    assert not tidal.about and "潮汐" in tidal.why
