"""Chinese questions as people type them: "how long" and "how far" ask too, a hedge (一般, 通常) is no topic,
and a part asked in one-character words (钱能赔多少) is searched and checked by those words.

The questions are written for these tests; none comes from the eval corpus."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from research.agents import rank
from research.agents.engines.offline import question_aspects


def _parts(question: str) -> list[tuple[str, tuple[str, ...]]]:
    return [(a.title, a.words) for a in question_aspects(question, "zh-CN")]


@pytest.mark.parametrize("question, second", [
    ("这种止咳药多少钱一盒，一般要吃多久？", "要吃多久"),
    ("高铁票退票手续费是多少，离开车多久前退不收钱？", "离开车多久前退不收钱"),
    ("新房装修完甲醛超标有多严重，要通风多久才能住？", "要通风多久才能住"),
    ("这条徒步路线有多长，离市区多远？", "离市区多远"),
])
def test_a_clause_asking_how_long_or_how_far_is_a_part(question, second):
    parts = _parts(question)
    assert len(parts) == 2, parts
    assert parts[1][0].endswith(second)
    assert all("？" not in title for title, _ in parts)


@pytest.mark.parametrize("question", [
    "多年来城市绿化覆盖率变化如何？",  # 多年: many years, no question
    "多种疫苗同时接种安全吗？",
])
def test_many_years_and_many_kinds_ask_nothing(question):
    assert question_aspects(question, "zh-CN") == []


def test_a_hedge_is_no_word_a_part_asks_and_joins_the_subject_without_de():
    parts = _parts("快递丢件能赔多少钱，一般多久能到账？")
    assert len(parts) == 2
    assert parts[1][0] == "快递丢件一般多久能到账"
    assert all("一般" not in words for _, words in parts)


def test_a_part_asked_in_one_character_words_asks_those_words():
    (first, words), _ = _parts("保险公司要是破产了，交的钱能退多少，保单还有效吗？")
    assert words == ("钱", "退")
    assert first.endswith("交的钱能退多少")


def test_a_rate_asked_of_the_subject_is_not_carried_into_the_next_clause():
    parts = _parts("近视手术成功率有多高，术后一般要休息多久？")
    assert len(parts) == 2
    assert parts[1][0].startswith("近视手术")
    assert "成功率" not in parts[1][0]


def test_one_character_query_words_match_the_sentences_that_hold_them():
    assert rank.single_chars(rank.tokenize("钱 退 手续费")) == {"钱", "退"}
    assert "退" in rank.tokenize("退款三个工作日到账", chars={"退"})
    assert "退" not in rank.tokenize("退款三个工作日到账")
    pool = [("手续费按票面价的5%收取，退款三个工作日到账。", 1), ("车站共有十二个候车室。", 2)]
    ranked = rank.rank_sentences("退 钱", pool, limit=2, locale="zh-CN")
    assert [r.source for r in ranked] == [1]


# -- A-not-A asks (会不会, 值不值得, 有没有) and hedges (一般, 通常) -------------------------------------------------

@pytest.mark.parametrize(("question", "second"), [
    ("空气炸锅做饭健康吗，会不会致癌？", "空气炸锅做饭是否会致癌"),
    ("电热毯安全吗，会不会漏电？", "电热毯是否会漏电"),
    ("净水器有用吗，有没有必要装？", "净水器是否有必要装"),
])
def test_an_a_not_a_clause_asks_and_is_a_part(question: str, second: str):
    titles = [title for title, _ in _parts(question)]
    assert titles[-1] == second, titles


def test_the_repeated_verb_of_an_a_not_a_ask_is_no_word_of_the_subject():
    from research.agents.scope import subject_phrase

    assert subject_phrase("智能门锁值不值得买，耗电多不多？", "zh-CN") == ("智能", "门锁")


def test_a_hedge_before_a_predicate_ends_the_subject_but_names_a_kind_before_a_noun():
    from research.agents.scope import subject_phrase
    from research.agents.subject import subject_of

    assert "一般" not in subject_phrase("电动自行车电池一般能用几年？", "zh-CN")
    assert not any("一般" in t.text for t in subject_of("电动自行车电池一般能用几年？", "zh-CN").terms)
    assert "一般" in subject_phrase("一般纳税人怎么申请？", "zh-CN")  # a general taxpayer, a kind


def test_what_the_first_clause_says_of_the_subject_is_not_carried():
    titles = [title for title, _ in _parts("住房公积金每年最多能交多少，能抵多少税？")]
    assert titles == ["住房公积金每年最多能交多少", "住房公积金能抵多少税"]


_HAN_CHAR = st.characters(min_codepoint=0x4E00, max_codepoint=0x9FA5)


def _a_not_a(text: str) -> bool:
    return any(text[i] == text[i + 2] and text[i + 1] in "不没" and text[i] not in "不没" for i in range(len(text) - 2))


@settings(max_examples=200, deadline=None)
@given(st.text(st.one_of(_HAN_CHAR, st.sampled_from("不没会，？ab1")), max_size=20))
def test_zh_plain_rewrites_only_a_not_a_asks(text: str):
    from research.agents.text import zh_plain

    plain = zh_plain(text)
    assert len(plain) == len(text)  # "会不会" → "是否会": the same length, nothing else moves
    if not _a_not_a(text):
        assert plain == text
    else:
        assert "是否" in plain


@pytest.mark.parametrize(("question", "second"), [
    ("哺乳期可以喝咖啡吗，喝多了会怎样？", "哺乳期喝多了会怎样"),  # a verb opens a predicate: no 的
    ("仓鼠一天要喂几次，每次喂多少克？", "仓鼠：每次喂多少克"),  # how often: a comment on the subject
    ("白酒的保质期有多长，使用寿命怎么样？", "白酒的使用寿命怎么样"),  # a verb before a noun is an attribute
    ("社保卡补办需要什么材料，多久能拿到？", "社保卡补办多久能拿到"),  # an ask word opens the predicate
])
def test_a_later_clause_joins_the_subject_as_its_grammar_says(question: str, second: str):
    titles = [title for title, _ in _parts(question)]
    assert titles[-1] == second, titles


@pytest.mark.parametrize("ask", ["原因是什么", "为什么", "什么原因"])
def test_a_clause_that_asks_only_why_asks_the_first_clause_for_its_reasons(ask: str):
    (first, _), (why, words) = _parts(f"鸡蛋价格今年涨了多少，{ask}？")
    assert why == f"{first}，{ask}"
    assert "原因" in words


@pytest.mark.parametrize(("question", "name"), [
    ("吃阿莫西林能喝酒吗？", "阿莫西林"),
    ("对乙酰氨基酚一天最多吃几片？", "对乙酰氨基酚"),
])
def test_a_name_jieba_knows_stays_whole(question: str, name: str):
    from research.agents.scope import subject_phrase
    from research.agents.words import _raw_words

    assert name in [w for w, _ in _raw_words(question)]
    assert name in subject_phrase(question, "zh-CN")


def test_being_paid_back_is_asked_in_any_of_its_words():
    aspects = question_aspects("保险公司要是破产了，交的钱能退多少，理赔要多久？", "zh-CN")
    [(_, kin)] = [(a.words, a.kin) for a in aspects if "理赔" in a.title]
    assert {"赔偿", "补偿"} <= set(kin)
    (first,) = [a for a in question_aspects("快递丢了，一般赔多少，多久能到账？", "zh-CN") if "赔" in a.words]
    assert {"补偿", "偿付", "赔付"} <= set(first.kin)


def test_a_condition_holds_for_every_later_clause():
    titles = [title for title, _ in _parts("保险公司要是破产了，交的钱能退多少，理赔要多久？")]
    assert titles == ["保险公司要是破产了，交的钱能退多少", "保险公司要是破产了，理赔要多久"]
    (_, words) = _parts("保险公司要是破产了，交的钱能退多少，理赔要多久？")[1]
    assert words == ("理赔",)


# -- found by the review of this pass ---------------------------------------------------------------------------

def test_a_condition_that_opens_the_question_holds_for_later_clauses():
    titles = [title for title, _ in _parts("要是房东不退押金，怎么办，能报警吗？")]
    assert titles[-1] == "要是房东不退押金，能报警吗"


@pytest.mark.parametrize(("question", "parts"), [
    ("多亏了疫苗，新冠死亡率下降了多少？", 0),  # 多亏 (thanks to) asks nothing
    ("电动车充电有多安全，充一次电要多久？", 2),
])
def test_only_a_degree_adjective_after_duo_asks(question: str, parts: int):
    assert len(_parts(question)) == parts


def test_adverbs_that_look_like_a_not_a_are_left_alone():
    from research.agents.text import zh_plain

    assert zh_plain("孩子动不动就发脾气怎么办") == "孩子动不动就发脾气怎么办"
    assert zh_plain("电脑时不时卡顿怎么办") == "电脑时不时卡顿怎么办"


def test_a_numeral_opens_a_comment_and_a_common_character_is_no_asked_word():
    assert _parts("鱼油有什么好处，一天吃几粒？")[1][0] == "鱼油：一天吃几粒"
    assert all("好" not in words for _, words in _parts("婴儿湿疹多久能好，要用什么药膏？"))

