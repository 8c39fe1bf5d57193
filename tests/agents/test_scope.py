"""The scope gate (research/agents/scope.py): a near-miss page changes one thing in the question's subject
(its kind, the thing itself, or the place) and is turned away by its title; a page on the subject is not.
Questions and pages written for these tests (none from the eval corpus)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from research.agents.scope import scope_verdict
from research.agents.subject import page_about, subject_of

pytestmark = pytest.mark.unit

PEROVSKITE_Q = "How long do perovskite solar cells last outdoors?"
ON_SUBJECT = ("Perovskite solar cells: how long they last on a roof",
              "Perovskite solar cells lose output in heat and damp. They last about five years outdoors today, "
              "and encapsulation adds two more. Their makers aim for twenty years.")
SILICON = ("How long do silicon solar cells last outdoors?",
           "Silicon solar cells last 25 to 30 years outdoors and lose about 0.5% of their output a year. "
           "Perovskite solar cells are newer and less proven.")
LEDS = ("Perovskite LEDs: how long they glow",
        "Perovskite light-emitting diodes glow for about 1,000 hours before they dim by half. The LEDs use the "
        "same crystal as the cells.")


def _rejected(question: str, locale: str, page: tuple[str, str]) -> bool:
    verdict = scope_verdict(question, locale, *page)
    return verdict is not None and not verdict.about


def test_another_kind_of_the_thing_is_turned_away():
    assert _rejected(PEROVSKITE_Q, "en-US", SILICON)
    assert not page_about(subject_of(PEROVSKITE_Q, "en-US"), *SILICON).about


def test_another_thing_of_the_same_kind_is_turned_away():
    assert _rejected(PEROVSKITE_Q, "en-US", LEDS)


def test_a_page_on_the_subject_is_kept_even_when_it_says_they_after_naming_it_once():
    assert not _rejected(PEROVSKITE_Q, "en-US", ON_SUBJECT)
    assert page_about(subject_of(PEROVSKITE_Q, "en-US"), *ON_SUBJECT).about


def test_another_place_is_turned_away_in_chinese():
    question = "中国城际铁路的客流如何？"
    japan = ("日本城际铁路的客流", "日本城际铁路每天运送乘客约三百万人次，客流集中在东京周边。")
    china = ("中国城际铁路客流统计", "中国城际铁路去年运送旅客十二亿人次，客流逐年增长。")
    assert _rejected(question, "zh-CN", japan)
    assert not _rejected(question, "zh-CN", china)


def test_another_kind_is_turned_away_in_chinese():
    question = "液流电池的成本是多少？"
    assert _rejected(question, "zh-CN", ("铅酸电池的成本", "铅酸电池每千瓦时成本约五百元，是最便宜的储能电池。"))
    assert not _rejected(question, "zh-CN", ("液流电池成本下降", "液流电池每千瓦时成本约两千元，寿命长达二十年。"))


def test_a_page_in_another_script_is_left_to_the_subject_model():
    assert scope_verdict("液流电池的成本是多少？", "zh-CN", "The cost of lead-acid batteries", "Lead-acid ...") is None


def test_a_title_that_does_not_decide_returns_none():
    assert scope_verdict(PEROVSKITE_Q, "en-US", "Field notes", "Perovskite solar cells were tested on roofs.") is None


KINDS = ["perovskite", "cadmium", "gallium", "germanium", "tellurium", "antimony"]


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(KINDS), st.sampled_from(KINDS))
def test_swapping_the_kind_in_the_title_flips_the_verdict(asked: str, titled: str):
    question = f"How long do {asked} solar cells last outdoors?"
    page = (f"How long {titled} solar cells last",
            f"{titled.capitalize()} solar cells last about ten years outdoors. They lose output in heat.")
    assert _rejected(question, "en-US", page) == (asked != titled)


def test_a_title_naming_the_whole_subject_is_about_it_whatever_the_term_rules_say():
    # The frequency model builds a Chinese term from the question's run (液流电池成本); the title that names
    # 液流电池 whole is about the subject even where the rest of the page never repeats that run.
    question = "液流电池的成本是多少？"
    page = ("液流电池的寿命与成本", "这种电池寿命长达二十年，每千瓦时约两千元。")
    verdict = scope_verdict(question, "zh-CN", *page)
    assert verdict is not None and verdict.about
    assert page_about(subject_of(question, "zh-CN"), *page).about


def test_a_chinese_time_word_written_against_the_head_names_another_kind():
    # 酒后 is a time word to the segmenter, but 酒后驾驶 is drunk driving: another kind of driving.
    from research.agents.scope import _title_words

    question = "疲劳驾驶导致的事故怎样预防？"
    drunk = ("酒后驾驶导致的事故怎样预防", "酒后驾驶导致的事故逐年减少，每年仍有数万人因此受伤。")
    verdict = scope_verdict(question, "zh-CN", *drunk)
    assert verdict is not None and not verdict.about and verdict.firm, verdict
    assert not _rejected(question, "zh-CN", ("疲劳驾驶导致的事故怎样预防", "疲劳驾驶导致的事故多发生在凌晨。"))
    # A time word before a grammar word says when, not what: 赛前 of 赛前应该做哪些检查 is no title word.
    assert "赛前" not in _title_words("赛前应该做哪些检查")
    assert "酒后" in _title_words("酒后驾驶导致的事故")


ASKED_OF_HOUSES = "日本的房子为什么大多是木结构，抗震性能怎么样？"


def test_a_title_on_the_question_s_own_noun_is_about_it_though_the_page_names_no_asked_term():
    # The question asks two things of 地铁 (运营里程, 客流); a page titled 中国地铁运营里程 that never says 客流 answers
    # one of them. (A rule that wanted an asked term on the page turned such pages away; it was dropped.)
    question = "中国地铁的运营里程和客流情况如何？"
    page = ("中国地铁运营里程", "截至2023年底，全国城市地铁运营里程超过一万公里。北京和上海的地铁线路最长。")
    assert page_about(subject_of(question, "zh-CN"), *page).about
    houses = ("日本的房子：木结构与抗震", "日本的房子大多采用木结构。木结构重量轻，抗震性能好。")
    assert page_about(subject_of(ASKED_OF_HOUSES, "zh-CN"), *houses).about


def test_a_kind_the_question_names_elsewhere_is_not_another_kind():
    # 木结构房子 sets 木结构 before 房子, but the question asks about 木结构 itself: not a rival kind of house.
    subject = subject_of(ASKED_OF_HOUSES, "zh-CN")
    page = ("日本的木结构房子抗震吗", "日本的木结构房子经过多次地震检验。木结构重量轻，抗震性能好。")
    assert page_about(subject, *page).about


def test_a_kind_named_by_a_chinese_synonym_is_the_question_s_kind():
    # 疲倦 and 疲劳 are one meaning in Cilin: 疲倦驾驶 is the question's kind of driving by another name, on a page
    # that also says 疲劳. A rival kind (酒后) stays a rival, and so does a synonym's page that never says the
    # question's own word (Cilin's groups are wide: 太空 and 高空 are one, and 太空作业 is not 高空作业).
    question = "疲劳驾驶导致的事故怎样预防？"
    weary = ("疲倦驾驶的危险", "长途开车容易疲倦。司机感到疲劳时应停车休息二十分钟，驾驶四小时必须休息。")
    verdict = scope_verdict(question, "zh-CN", *weary)
    assert verdict is not None and verdict.about, verdict
    assert page_about(subject_of(question, "zh-CN"), *weary).about
    silent = ("疲倦驾驶的危险", "长途开车容易疲倦。司机应每两小时停车休息二十分钟，驾驶四小时必须休息。")
    assert _rejected(question, "zh-CN", silent)
    drunk = ("酒后驾驶的危险", "酒后驾驶的司机反应变慢。司机感到疲劳时也应停车休息。")
    assert _rejected(question, "zh-CN", drunk)
    high = "高空作业的安全事故怎样预防？"
    space = ("太空作业的安全", "宇航员在太空作业时要系好安全绳。舱外活动每次不超过八小时。")
    assert not page_about(subject_of(high, "zh-CN"), *space).about


# A subject of two modifiers and a class noun ("spray foam insulation"), and titles that name both modifiers.
FOAM_Q = "What are the risks of closed cell foam insulation in a basement?"
FOAM_BODY = ("It insulates and seals air gaps in one pass. The main risk is the fumes while it cures, so the house "
             "is left empty for two days.")


@pytest.mark.parametrize("title", [
    "Closed cell foam (CCF): a homeowner's guide",
    "Closed-cell polyurethane foam, explained",
    "What closed cell foam costs",
])
def test_a_title_naming_every_modifier_and_ending_there_is_about_the_thing(title: str):
    # The class noun left out of the title ("insulation") is said on the page as "insulates".
    verdict = scope_verdict(FOAM_Q, "en-US", title, FOAM_BODY)
    assert verdict is not None and verdict.about, verdict


@pytest.mark.parametrize("title", [
    "Closed cell foam roofing on flat roofs",      # another noun in the class noun's place
    "Closed cell foam packaging for shipping",
    "Closed cell sponges and their uses",          # one modifier only
])
def test_a_title_with_another_noun_after_the_modifiers_stays_doubtful(title: str):
    verdict = scope_verdict(FOAM_Q, "en-US", title, FOAM_BODY)
    assert verdict is None or not verdict.about, verdict


# ------------------------------------------------------------------ the subject in animals (WordNet noun.animal)

_BODY = ("Cases are counted every year. About 5 percent test positive, and treatment takes three to four "
         "weeks of doxycycline. Vaccines are available in some countries.")


@pytest.mark.parametrize("title", [
    "Chagas disease in dogs: how many test positive each year",
    "Interval training for racehorses: speed and stamina",
    "Melatonin among dairy cattle: what the trials found",
])
def test_a_title_on_the_subject_in_animals_is_doubted_for_a_question_on_people(title: str):
    question = "How many Americans get Chagas disease, and does interval training or melatonin help?"
    verdict = scope_verdict(question, "en-US", title, _BODY)
    # Soft: WordNet files "python" and "females" first under animals too.
    assert verdict is not None and not verdict.about and not verdict.firm, verdict
    assert "the subject in" in verdict.why


@pytest.mark.parametrize("title", [
    "Chagas disease in the United States: how many test positive each year",
    "Chagas disease for pet owners: what to watch for",  # the phrase goes on past "pet": owners are people
    "Chagas disease in children: treatment",
    "Omega-3 in fish and supplements: what the trials show",  # the phrase goes on past the animal
    "Chagas disease in bats and humans",
])
def test_a_title_on_people_or_places_is_not_turned_away_as_animals(title: str):
    question = "How many Americans get Chagas disease, and how is it treated?"
    verdict = scope_verdict(question, "en-US", title, _BODY)
    assert verdict is None or "the subject in" not in verdict.why, verdict


@pytest.mark.parametrize("question", ["How many dogs get Chagas disease in Texas?",
                                      "Can my dog's Chagas disease spread to me?"])
def test_a_question_that_names_an_animal_keeps_pages_on_animals(question: str):
    verdict = scope_verdict(question, "en-US", "Chagas disease in dogs: a Texas survey", _BODY)
    assert verdict is None or "the subject in" not in verdict.why, verdict


# ------------------------------------------------- the kind word up front, the thing nowhere (another thing)

def test_a_page_whose_lead_names_the_kind_word_of_something_else_is_another_thing():
    question = "How fast are viceroy butterfly numbers falling?"
    governor = ("Why did the Raj end so quickly?",
                "The last viceroy left Delhi in 1948, and numbers at the farewell parade were the lowest of any "
                "state occasion. Historians still argue about how fast power was handed over.")
    verdict = scope_verdict(question, "en-US", *governor)
    assert verdict is not None and not verdict.about and verdict.firm, verdict
    assert not page_about(subject_of(question, "en-US"), *governor).about


def test_a_page_whose_lead_names_the_thing_otherwise_is_not_turned_away_firmly():
    # "speed" (Zipf 5.0) is too common a kind word to say the page is on something else: it calls the
    # cameras "automated enforcement".
    verdict = scope_verdict("Do speed cameras reduce crashes?", "en-US",
                            "Automated enforcement and road safety: a review",
                            "Automated speed enforcement reduced injury crashes by a fifth. Fines fell over time.")
    assert verdict is None or not verdict.firm, verdict


def test_a_page_that_names_the_thing_in_some_form_is_not_turned_away_by_its_lead():
    question = "How fast are viceroy butterfly numbers falling?"
    colony = ("Counting them from the roadside",
              "The viceroy colonies along the river are counted each summer. Numbers fell by half in 2022, and "
              "the butterflies may vanish from the valley by 2040.")
    verdict = scope_verdict(question, "en-US", *colony)
    assert verdict is None or verdict.about, verdict


# -- a Chinese question that names no place asks of China (CLDR place names via Babel) ------------------

NO_PLACE_Q = "网约车司机一个月能挣多少钱？"


@pytest.mark.parametrize(("title", "firm"), [
    ("日本的网约车司机一个月能挣多少", True),  # the place's own, said with 的
    ("欧盟的网约车司机收入调查", True),
    ("美国网约车司机月收入是多少", False),  # written against the name, as 英国NHS is: read last
])
def test_a_title_on_a_foreign_place_is_another_place_for_a_chinese_question_naming_none(title: str, firm: bool):
    page = (title, "网约车司机每月收入在扣除平台抽成和油费后差别很大。")
    verdict = scope_verdict(NO_PLACE_Q, "zh-CN", *page)
    assert verdict is not None and not verdict.about and verdict.firm is firm


def test_a_foreign_title_whose_page_names_china_is_only_doubted():
    page = ("日本的网约车司机一个月能挣多少", "日本网约车司机的收入比中国网约车司机高。")
    verdict = scope_verdict(NO_PLACE_Q, "zh-CN", *page)
    assert verdict is not None and not verdict.about and not verdict.firm


@pytest.mark.parametrize("title", ["网约车司机一个月能挣多少钱：最新调查", "沿海地区网约车司机收入调查",
                                   "内蒙古网约车司机月收入", "中美网约车司机收入比较", "我国网约车司机月收入调查"])
def test_a_title_on_china_or_on_no_foreign_place_is_not_another_place(title: str):
    page = (title, "网约车司机每月收入在扣除平台抽成和油费后约为六千元。")
    verdict = scope_verdict(NO_PLACE_Q, "zh-CN", *page)
    assert verdict is None or verdict.about


def test_a_chinese_question_that_names_a_foreign_place_keeps_pages_on_it():
    page = ("日本网约车司机一个月能挣多少", "日本网约车司机每月收入约三十万日元。")
    verdict = scope_verdict("日本网约车司机一个月能挣多少钱？", "zh-CN", *page)
    assert verdict is None or verdict.about


# -- a Chinese title on another thing of the question's class (Cilin) --------------------------------------

def test_a_title_on_another_thing_of_the_same_class_is_doubted_in_chinese():
    question = "在德国读硕士一年要花多少钱？"
    phd = ("在德国读博士一年要花多少钱", "读博士一般有工资，每月约两千欧元，不用交学费。")
    verdict = scope_verdict(question, "zh-CN", *phd)
    assert verdict is not None and not verdict.about and "博士" in verdict.why
    masters = ("在德国读硕士一年要花多少钱", "公立大学读硕士不收学费，每学期只交约300欧元注册费。")
    assert not _rejected(question, "zh-CN", masters)
    # The page that names the question's own word too may compare the two: no verdict from the class alone.
    both = ("在德国读博士一年要花多少钱", "读博士比读硕士多花两年，但每月有工资。")
    verdict = scope_verdict(question, "zh-CN", *both)
    assert verdict is None or "博士" not in verdict.why


def test_a_chinese_synonym_is_never_another_thing_of_the_class():
    from research.agents.synonyms import same_class

    assert same_class("硕士", "博士")
    assert not same_class("儿童", "孩子")  # one meaning in Cilin
    assert not same_class("硕士", "硕士")


# -- a Chinese attribute noun inside a compound names the thing ---------------------------------------------

def test_an_attribute_noun_before_the_head_is_part_of_the_chinese_compound():
    from research.agents.scope import subject_phrase

    assert subject_phrase("儿童安全座椅能降低多少伤亡？", "zh-CN") == ("儿童", "安全", "座椅")
    assert "数量" not in subject_phrase("中国电动汽车充电桩的数量有多少？", "zh-CN")


def test_a_chinese_modifier_named_after_the_head_does_not_name_the_kind():
    question = "儿童安全座椅能降低多少伤亡？"
    stroller = ("婴儿推车儿童座椅安全吗？事故数据说明了什么",
                "婴儿推车上的儿童座椅翻倒时，婴儿推车事故里孩子受伤的比例很高。婴儿推车的刹车也常常失灵。")
    assert _rejected(question, "zh-CN", stroller)
    car = ("儿童安全座椅能降低多少伤亡", "正确使用儿童安全座椅，可使婴儿死亡风险降低71%。")
    assert not _rejected(question, "zh-CN", car)


def test_an_english_word_in_a_chinese_title_is_as_rare_as_it_is_in_english():
    question = "Windows笔记本怎么看电池还剩多少容量？"
    text = "在命令行运行powercfg生成电池报告，报告里列出设计容量和完全充电容量。笔记本电池用久了容量会下降。"
    # "capacity" is a common English word: no other kind of laptop, whatever Chinese text makes of it.
    assert not _rejected(question, "zh-CN", ("REMAINING CAPACITY和FULL CHARGE：笔记本电池容量怎么看", text))
    # A rare one still names another kind.
    assert _rejected(question, "zh-CN", ("MacBook笔记本怎么看电池还剩多少容量", text))


# -- a review's inputs: what the rules above must not turn away (each failed a first version) ------------

@pytest.mark.parametrize(("question", "title"), [
    ("NHS看病要排队多久？", "英国NHS看病排队时间创新高"),  # a thing of that place: the place is part of its name
    ("寿司怎么做？", "日本寿司的正宗做法"),
    ("德牧怎么训练？", "德国牧羊犬训练方法大全"),
])
def test_a_place_written_against_a_name_is_at_most_doubted(question: str, title: str):
    verdict = scope_verdict(question, "zh-CN", title, "正文内容说明这个问题，没有别的。")
    assert verdict is None or verdict.about or not verdict.firm


def test_a_place_named_in_passing_is_no_other_place():
    title = "从美国回国后我开了一年网约车：司机一个月能挣多少"
    verdict = scope_verdict(NO_PLACE_Q, "zh-CN", title, "网约车司机每月收入约六千元。")
    assert verdict is None or verdict.about


@pytest.mark.parametrize(("question", "title"), [
    ("买房需要交哪些税？", "购房需要交哪些税费"),  # Cilin files the two in one class: near-synonyms
    ("房价还会继续跌吗？", "楼价还会继续跌吗"),
])
def test_a_word_of_the_same_cilin_class_is_only_doubted(question: str, title: str):
    verdict = scope_verdict(question, "zh-CN", title, "专家认为今年还会小幅下跌。")
    assert verdict is None or verdict.about or not verdict.firm


@pytest.mark.parametrize(("question", "title"), [
    ("碳酸锂价格走势如何？", "碳酸锂期货走势分析"),  # 价格走势 is asked of the thing: both are attributes
    ("新能源汽车电池能用几年？", "电池能用几年？新能源汽车车主必看"),  # the modifier in another clause
])
def test_attributes_and_modifiers_in_another_clause_do_not_make_another_kind(question: str, title: str):
    verdict = scope_verdict(question, "zh-CN", title, "碳酸锂和电池的情况说明。新能源汽车的电池一般能用八年。")
    assert verdict is None or verdict.about


def test_a_short_latin_product_tier_still_names_another_kind():
    verdict = scope_verdict("MacBook Air电池能用多久？", "zh-CN", "MacBook Pro电池能用多久", "电池一般能用五年。")
    assert verdict is not None and not verdict.about


# -- a country's style of the thing (英式橄榄球 is rugby) -------------------------------------------------------

STYLE_Q = "德国啤酒节期间喝的啤酒度数有多高？"


@pytest.mark.parametrize("title", ["英式啤酒的度数有多高", "日式啤酒节：度数与口感"])
def test_a_title_on_another_country_s_style_of_the_thing_is_another_kind(title: str):
    verdict = scope_verdict(STYLE_Q, "zh-CN", title, "这种啤酒的度数一般在五度左右，节日期间供应量很大。")
    # Soft: 意式咖啡 and 美式咖啡 are kinds of drink, not of places, so the page is read last, not dropped.
    assert verdict is not None and not verdict.about and not verdict.firm


@pytest.mark.parametrize(("question", "title"), [
    (STYLE_Q, "德式啤酒的度数有多高"),  # the question's own country
    (STYLE_Q, "啤酒节期间的啤酒度数"),  # no style at all
    ("英式下午茶有哪些讲究？", "英式下午茶的讲究"),  # the question names the style itself
    ("美式咖啡和拿铁哪个热量高？", "意式咖啡的热量"),  # no place asked: 美式 is a name here, not a place
    ("台式电脑一般能用几年？", "台式电脑能用几年"),  # 台式 (desktop) is no style of a place
    ("中国的咖啡市场有多大？", "意式咖啡在中国的流行趋势"),  # the title names the question's place too
    ("日本的拉面为什么好吃？", "日式拉面和中式拉面的区别"),  # and the question's own style
])
def test_the_question_s_own_style_or_no_place_asked_is_no_other_kind(question: str, title: str):
    verdict = scope_verdict(question, "zh-CN", title, "正文说明了这件事的详细情况，包括价格和年限。")
    assert verdict is None or verdict.about or "式" not in verdict.why


# -- an insurance named after the risk it covers (航班延误险) ----------------------------------------------------

def test_an_insurance_named_after_the_risk_is_another_thing():
    question = "快递丢失了，快递公司一般赔多少？"
    page = ("快递丢失险怎么买：保费几元、最高赔500元", "这种保险保费很低。快递丢失后凭单号理赔。")
    verdict = scope_verdict(question, "zh-CN", *page)
    assert verdict is not None and not verdict.about and "丢失险" in verdict.why
    # Soft: the insurance may be what answers a question (失业了怎么办 → 失业险怎么领).
    assert not verdict.firm


@pytest.mark.parametrize("title", ["快递丢失了怎么办：快递公司赔多少", "快递丢失赔偿标准：保价与不保价"])
def test_the_risk_itself_is_no_insurance(title: str):
    verdict = scope_verdict("快递丢失了，快递公司一般赔多少？", "zh-CN", title, "快递丢失后，快递公司按保价金额赔偿。")
    assert verdict is None or verdict.about


# -- a class of things in the plural, surveyed ------------------------------------------------------------------

SURVEY_Q = "How many people get Weil's disease each year?"


def test_a_survey_of_a_class_that_names_the_subject_is_read_last_not_turned_away():
    page = ("Rodent-borne diseases in Europe: 2024 surveillance summary",
            "Reported cases of rodent-borne disease rose in 2024. Weil's disease accounted for 1,200 cases, "
            "and hantavirus infections for 4,000.")
    verdict = scope_verdict(SURVEY_Q, "en-US", *page)
    assert verdict is not None and not verdict.about and not verdict.firm


@pytest.mark.parametrize("pair", [
    ("Rodent-borne disease in Europe: hantavirus cases in 2024",  # one other kind, singular
     "Rodent-borne disease rose in 2024: hantavirus infections reached 4,000. Weil's disease is rarer."),
    ("Rodent-borne diseases in Europe: 2024 summary",  # the class, and the subject never named
     "Reported cases of rodent-borne disease rose in 2024, with 4,000 hantavirus infections."),
])
def test_another_kind_or_a_class_without_the_subject_stays_turned_away(pair):
    # (And a plural title with no class modifier is another kind as before: "COVID-19 vaccines" for a flu vaccine.)
    verdict = scope_verdict(SURVEY_Q, "en-US", *pair)
    assert verdict is not None and not verdict.about and verdict.firm


# -- a year long past before the subject, for a question that names none -----------------------------------------

def test_a_title_on_the_subject_in_a_year_long_past_is_doubted():
    page = ("1998年的网约车司机收入调查", "网约车司机每月收入约六千元。")
    verdict = scope_verdict(NO_PLACE_Q, "zh-CN", *page)
    assert verdict is not None and not verdict.about and not verdict.firm and "1998" in verdict.why
    english = scope_verdict("How much do rideshare drivers earn?", "en-US",
                            "1998 rideshare drivers: what they earned", "Drivers earned little.")
    assert english is not None and not english.about and not english.firm


def test_a_recent_year_or_a_question_that_names_the_year_is_no_other_time():
    from research.agents.clock import today

    recent = (f"{today().year - 1}年的网约车司机收入调查", "网约车司机每月收入约六千元。")
    verdict = scope_verdict(NO_PLACE_Q, "zh-CN", *recent)
    assert verdict is None or verdict.about or str(today().year - 1) not in verdict.why
    asked = scope_verdict("1998年网约车司机一个月能挣多少钱？", "zh-CN", "1998年的网约车司机收入调查", "收入约六千元。")
    assert asked is None or asked.about or "1998" not in asked.why


@pytest.mark.parametrize(("question", "pair"), [
    ("网约车是怎么出现的？", ("2009年的网约车：第一批司机", "网约车最早出现在2009年。")),  # a question on the past
    ("What caused the rideshare price war?", ("2009 rideshare price war: what happened", "Fares fell by half.")),
])
def test_a_question_on_the_past_keeps_its_old_years(question, pair):
    verdict = scope_verdict(question, "zh-CN" if "网" in question else "en-US", *pair)
    assert verdict is None or verdict.about or "asks of today" not in verdict.why


def test_a_plural_title_without_a_class_modifier_is_another_kind_as_before():
    page = ("Measles vaccines: effectiveness data", "Two doses of measles vaccine are 97% effective. Mumps vaccine "
            "is less effective.")
    verdict = scope_verdict("How effective is the mumps vaccine?", "en-US", *page)
    assert verdict is not None and not verdict.about and verdict.firm
