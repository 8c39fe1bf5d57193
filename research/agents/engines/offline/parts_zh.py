"""The parts of a Chinese question (parts.py has the English rules and `question_aspects`, which calls
`_zh_parts`): clauses at Chinese clause marks, the subject carried into later clauses, a list of attributes
after 的 one part each; see parts.py's docstring for what splits and what does not."""

from __future__ import annotations

from research import scripts, textre
from research.agents.text import ZH_STOP_PHRASES, key_terms, zh_plain
from research.agents.words import (
    ASPECT_NOUNS_ZH,
    ZH_COMPARE_VERBS,
    ZH_HOW,
    _function_word,
    _raw_words,
    _zh_grammar,
    zh_tagged,
)
from research.agents.zhtag import ZH_HEDGES, zh_comparison_marks

MAX_PARTS = 4  # parts of one question, in either language

_ZH_CLAUSE = textre.compile(r"[，,；;？?！!。]")
_ZH_AND = textre.compile(r"以及|和|及|与|跟|、")
_ZH_DIGIT = textre.compile(r"(?:\p{Nd}|[一二三四五六七八九十百千万亿])+(?:年|月|日|号|%|％)")
# Markers that make a clause ask something, and, the same, where a clause's shared ask begins.
_ZH_ASK = ("分别", "是多少", "是什么", "有哪些", "有什么", "有多", "有何", "如何", "怎样", "怎么样", "怎么", "多少",
           "多大", "多快", "多高", "多长", "多久", "哪些", "哪个", "哪", "什么", "为何", "为什么", "是否", "能否",
           "情况", "吗", "呢", "几", "谁", "何时")
_ZH_COMPARE = (*ZH_COMPARE_VERBS, "区别", "差异", "不同", "哪个更", "孰")
_ZH_LEAD = (*ZH_HOW, "是否", "能否", "会不会", "能不能", "哪些", "什么", "有何", "有哪些")
_ZH_SUBJECT_END = ("在", "面临", "有", "是", "对", "将", "会", "能", "为", "要", "需要", "值得", "如何", "怎样", "怎么",
                   "为何", "为什么", "是否", "能否", "哪些", "多少", "多大", "多久", "有多")
_ZH_PRONOUNS = ("它们", "它", "其", "该")
_ZH_WORD_BEFORE_AND = frozenset("普涉波顾危触企参给赋授")  # 普及, 涉及, 波及 … 参与, 给与: one word
# A later clause that opens with a verb or a time word continues the first clause's phrase.
_ZH_VERB_OR_TIME = ("面临", "存在", "需要", "受到", "有", "是", "在", "会", "能", "将", "对", "要", "应", "可以",
                    "可能", "还", "未来", "今后", "将来", "目前", "现在", "近年")
_ZH_STATE = ("的发展现状", "发展现状", "现状", "情况", "状况", "的")
# A later clause that opens with a passive or agent marker ("由哪家公司开发", "被谁收购") is said of the
# subject itself, with no 的 between: "X由哪家公司开发", never "X的由哪家公司开发".
_ZH_AGENT = ("由", "被", "是谁", "是由")
# A causal verb before 的 makes a relative clause: "疲劳驾驶引发的事故" is the accidents fatigue driving causes,
# and its subject is what does the causing (疲劳驾驶), not "疲劳驾驶引发". A closed class, so a list.
_ZH_CAUSES = ("引发", "导致", "造成", "引起", "带来", "诱发", "所致")
_ZH_IF = ("要是", "如果", "假如", "万一", "一旦")  # a condition's markers: it holds for every later clause


def _zh_asks(clause: str) -> bool:
    return any(m in clause for m in (*_ZH_ASK, *_ZH_COMPARE)) or _zh_degree_at(clause) >= 0


# What "多" asks the degree of (多远, 多严重, 多贵): a closed class of adjectives. 多年, 多种, 多亏 are no asks.
_ZH_DEGREES = ("久", "远", "长", "高", "大", "重要", "严重", "深", "宽", "厚", "贵", "早", "晚", "快", "慢", "难",
               "容易", "危险", "安全", "常见", "好", "厉害", "频繁", "准", "热", "冷", "累", "疼", "痛")


def _zh_degree_at(clause: str) -> int:
    """Where "how" + an adjective asks a degree (多远, 多严重, 多贵: jieba's 多 before one of `_ZH_DEGREES`, or one
    word 多X of them), or -1. 多年, 多种, 多重 and 多亏 are amounts or other words, not questions."""
    at = 0
    tagged = zh_tagged(clause)
    for i, (word, _) in enumerate(tagged):
        following = tagged[i + 1][0] if i + 1 < len(tagged) else ""
        if (word == "多" and following in _ZH_DEGREES) or (word[:1] == "多" and word[1:] in _ZH_DEGREES):
            return at
        at += len(word)
    return -1


def _zh_ask_start(clause: str, after: int) -> int:
    """Where the clause's shared ask begins after `after`: "…的产能和价格情况如何" → at 情况;
    for a comparison, at the coordinator that introduces the other side ("与锂电池相比如何")."""
    cmp_at = min((clause.find(w, after) for w in _ZH_COMPARE if clause.find(w, after) >= 0), default=-1)
    if cmp_at >= 0:
        sides = [m.start() for m in _ZH_AND.finditer(clause) if after <= m.start() < cmp_at]
        return sides[-1] if sides else cmp_at
    degree = _zh_degree_at(clause[after:])
    return min([*(clause.find(m, after) for m in _ZH_ASK if clause.find(m, after) >= 0),
                *([after + degree] if degree >= 0 else [])], default=len(clause))


def _zh_subject(clause: str) -> tuple[str, str]:
    """(subject, the attribute asked about): "数据中心的耗电量有多大" → (数据中心, 耗电量)."""
    ask = _zh_ask_start(clause, 0)
    cut = clause.rfind("的", 0, ask)
    if cut > 0:
        attr = _ZH_AND.split(clause[cut + 1 : ask])[0]
        subject = clause[:cut]
        if all(flag == "ns" for _, flag in zh_tagged(subject)):
            # A place is no subject: "美国的房子为什么…" is about 美国的房子, the place says which.
            rest = clause[cut + 1 : ask]
            head = rest[: _zh_marker_at(rest, _ZH_SUBJECT_END, grammar=True)]
            for state in _ZH_STATE:
                head = head.removesuffix(state)  # 产业现状: what is asked of 产业
            words = zh_tagged(head)
            while len(words) > 1 and (words[-1][0] in ASPECT_NOUNS_ZH or words[-1][1] in ("a", "b", "ad")):
                words = words[:-1]  # 水土流失主要原因: 原因 is asked of 水土流失, 主要 says which
            head = "".join(w for w, _ in words)
            return (f"{subject}的{head}", "") if head and not _zh_asks(head) else (subject, attr)
        cause = next((v for v in _ZH_CAUSES if subject.endswith(v) and len(subject) > len(v) + 1), "")
        return subject[: len(subject) - len(cause)], attr
    subject = clause[: min(ask, _zh_marker_at(clause, _ZH_SUBJECT_END, grammar=True))]
    beside = zh_comparison_marks(subject)
    if beside and beside[0] > 0:
        subject = subject[: beside[0]]  # "燕麦奶比牛奶健康吗": 燕麦奶 is asked about, 牛奶 is what it is set beside
    for hedge in ZH_HEDGES:
        if subject.endswith(hedge) and len(subject) > len(hedge) + 1:
            subject = subject[: -len(hedge)]  # "电动车电池一般能用几年": the hedge is said of the predicate
            break
    # A yes/no question's predicate is no part of its subject: "房贷提前还款划算吗" asks whether 房贷提前还款
    # is 划算, "电动汽车贵吗" whether 电动汽车 is 贵 (an adjective or verb, by jieba's tag, after a subject).
    tagged = zh_tagged(subject)
    if clause[ask:].startswith(("吗", "呢")) and len(tagged) > 1 and tagged[-1][1] in ("a", "an", "v"):
        subject = subject[: -len(tagged[-1][0])]
    return subject, ""


def _zh_marker_at(clause: str, markers: tuple[str, ...], *, grammar: bool = False) -> int:
    """Where the first marker begins a word of the clause (jieba's words), or its length: the 能 of 蓄能
    is no "can", nor the 会 of 社会 a "will" ("抽水蓄能在中国" ends its subject at 在, not inside 蓄能).
    With `grammar`, a grammar word after the first word ends it too (每周, 应该: research.agents.words)."""
    starts, at, end = set(), 0, len(clause)
    for word, _ in zh_tagged(clause):
        if grammar and at and _zh_grammar(word):
            end = at
            break
        starts.add(at)
        at += len(word)
    return min((i for i in starts if i and any(clause.startswith(m, i) for m in markers)), default=end)


def _zh_items(region: str) -> list[str]:
    """The region cut at 和/及/与/、/以及, except where 及/与 end a word (普及, 涉及, 参与)."""
    items: list[str] = []
    start = 0
    for match in _ZH_AND.finditer(region):
        if match.group() in ("及", "与") and region[match.start() - 1 : match.start()] in _ZH_WORD_BEFORE_AND:
            continue
        items.append(region[start : match.start()])
        start = match.end()
    return [*items, region[start:]]


# Question words that ask for a list of things of one kind ("要注意哪些费用和风险": which fees, which risks).
_ZH_WHICH = ("哪些", "哪几种", "哪几类", "什么样的", "什么")


def _zh_list_after_ask(clause: str) -> list[str] | None:
    """One part per thing asked after a question word ("X要注意哪些A和B" → "X要注意哪些A", "X要注意哪些B"):
    the clause ends with nouns joined by 和/及/与/、 after 哪些 or 什么. None where it does not."""
    at = max(((clause.rfind(w), w) for w in _ZH_WHICH if clause.rfind(w) > 0), default=(-1, ""))
    if at[0] < 0:
        return None
    head, tail = clause[: at[0] + len(at[1])], clause[at[0] + len(at[1]) :]
    items = _zh_items(tail)
    if len(items) < 2 or any(len(i) < 2 or _zh_asks(i) or any(c.isdigit() for c in i) for i in items):
        return None
    # Each item a noun (jieba's tag of its last word): "哪些费用和风险", not "什么时候和怎样" or a verb phrase.
    if not all((tags := zh_tagged(i)) and tags[-1][1].startswith("n") for i in items):
        return None
    return [f"{head}{item}" for item in items]


def _zh_list(clause: str) -> list[str] | None:
    """One part per asked attribute ("X的A和B如何" → "X的A如何", "X的B如何"; "X要注意哪些A和B" → one per
    thing asked after the question word), or None to keep it whole."""
    ask = _zh_ask_start(clause, 0)
    cut = clause.rfind("的", 0, ask)
    if cut <= 0:
        # A coordination in the subject ("中国和美国…", "X和Y相比") is one part; a list after 哪些 is not.
        return _zh_list_after_ask(clause)
    # The region after 的 up to the ask; a comparison's other side belongs to the ask.
    ask = _zh_ask_start(clause, cut + 1)
    items = _zh_items(clause[cut + 1 : ask])
    if len(items) == 1 and not items[0]:
        return _zh_list_after_ask(clause)  # "X的哪些A和B": nothing between 的 and the question word
    if len(items) < 2 or any(len(i) < 2 for i in items):
        return None  # a one-character piece is a word cut at 及/与 (普及, 参与), not an attribute
    if any(_ZH_DIGIT.search(i) or any(c.isdigit() for c in i) for i in items):
        return None  # "2021年和2022年": coordinated dates stay together
    head, tail = clause[: cut + 1], clause[ask:].removeprefix("分别") or "如何"  # "分别" (each) asks of a list
    return [f"{head}{item}{tail}" for item in items]


def _zh_phrase(clause: str) -> str:
    """What the first clause asks about, as a phrase: "中国的AI芯片产业现状如何" → 中国的AI芯片产业."""
    phrase = clause[: _zh_ask_start(clause, 0)]
    for state in _ZH_STATE:
        phrase = phrase.removesuffix(state)
    return phrase


def _zh_carry(clause: str, subject: str, attr: str, phrase: str) -> str:
    """A later clause with the subject named: "如何降低" → "数据中心如何降低耗电量"."""
    if not subject or subject in clause:
        return clause
    if clause.startswith(_ZH_AGENT):
        return f"{subject}{clause}"
    if clause.startswith(_ZH_VERB_OR_TIME) and phrase:
        return f"{phrase}{clause}"  # "面临哪些挑战" → "中国的AI芯片产业面临哪些挑战"
    for pronoun in _ZH_PRONOUNS:
        if clause.startswith(pronoun):
            rest = clause[len(pronoun) :]
            joint = "" if rest.startswith(("的", *_ZH_LEAD)) or pronoun in ("它", "它们") else "的"
            return f"{subject}{joint}{rest}"
    if clause.startswith(_ZH_LEAD):
        lead = next(w for w in sorted(_ZH_LEAD, key=len, reverse=True) if clause.startswith(w))
        rest = clause[len(lead) :]
        for ask in _ZH_ASK:
            rest = rest.removesuffix(ask)
        bare_verb = len(rest) <= 2 and attr and attr not in clause
        return f"{subject}{clause}{attr if bare_verb else ''}"
    tagged = zh_tagged(clause)
    if tagged and tagged[-1][1] in ("v", "p") and tagged[0][1].startswith("n") and tagged[0][0] not in ASPECT_NOUNS_ZH:
        # A clause with an actor of its own whose verb lacks its object: the subject is the object
        # ("孩子几岁以前都要用" → "孩子几岁以前都要用儿童安全座椅", not "儿童安全座椅的孩子…"; jieba tags 用 p).
        return f"{clause}{subject}"
    if tagged and (tagged[0][1] == "t" or (len(tagged) >= 2 and tagged[1][1] == "f" and tagged[0][1][:1] in "nv")):
        # A time word opens a comment on the subject as topic ("赛前应该做哪些检查"), and so does an event with a
        # locative after it ("毕业后能留下来工作几年", "退休以后…"): "X的赛前", "X的毕业后" are no phrases.
        return f"{subject}：{clause}"
    verb = bool(tagged) and tagged[0][1] == "v" and not (len(tagged) > 1 and tagged[1][1].startswith("n"))
    asking = clause.startswith(_ZH_ASK) or _zh_degree_at(clause) == 0  # "多久到账", "几岁能上学"
    if clause.startswith(ZH_HEDGES) or (tagged and tagged[0][1] == "d") or verb or asking:
        # An adverb or a verb opens a predicate of the subject: "一般赔多少钱", "也赔吗", "吃多了会怎样". (A verb
        # before a noun makes a noun phrase: 使用寿命, 保护效果 are attributes, said with 的.)
        return f"{subject}{clause}"
    if tagged and ((_zh_grammar(tagged[0][0]) and tagged[0][1] == "r") or tagged[0][1] == "m"):
        return f"{subject}：{clause}"  # "每天要睡几个小时", "一天吃几粒": how often, a comment on the subject
    return f"{subject}的{clause}"


def _zh_reason_only(clause: str) -> bool:
    """The clause asks only for reasons: 原因是什么, 为什么, 什么原因, 主要原因有哪些."""
    rest = clause
    for ask in ("是什么", "是啥", "有哪些", "有什么", "呢", "主要"):
        rest = rest.replace(ask, "")
    return rest in ("原因", "为什么", "为何", "什么原因", "为啥")


def _zh_parts(text: str) -> tuple[list[tuple[str, str]], str]:
    pieces = [p.strip() for p in _ZH_CLAUSE.split(zh_plain(text)) if p.strip()]
    clauses: list[str] = []
    pending = ""
    for piece in pieces:
        if _zh_asks(piece):
            clauses.append(f"{pending}，{piece}" if pending else piece)
            pending = ""
        else:
            pending = f"{pending}，{piece}" if pending else piece
    if pending:
        if clauses:
            clauses[-1] += f"，{pending}"
        else:
            clauses.append(pending)
    if not clauses:
        return [], ""
    subject, attr = _zh_subject(clauses[0])
    if len(subject) < 2 or _zh_asks(subject):
        subject, attr = "", ""  # no subject to carry: later clauses stay as they are
    # What a later clause continues: the first clause's phrase, or for a yes/no question its subject
    # ("房贷提前还款划算吗，要注意哪些费用" → "房贷提前还款要注意哪些费用").
    phrase = (subject if clauses[0].endswith(("吗", "呢")) else _zh_phrase(clauses[0])) if subject else ""
    said = zh_tagged(phrase[len(subject):]) if phrase.startswith(subject) else ()
    if said and _zh_grammar(said[0][0]):
        phrase = subject  # "个人养老金每年最多能存多少，能抵多少税": 每年最多能存 is said of it, not its name
    # A rate the first clause asks of its subject is no part of what later clauses are about
    # ("幽门螺杆菌感染率有多高，杀菌要吃多久的药": the treatment is of 幽门螺杆菌, not of its infection rate).
    tagged = zh_tagged(subject) if subject else ()
    carried = subject
    # (Only a rate written against the subject, with no 的 and no attribute asked after it: 伏市场的产能 keeps 市场.)
    if not attr and len(tagged) > 1 and len(tagged[-1][0]) > 1 and tagged[-1][0][-1] == "率":
        carried = subject[: -len(tagged[-1][0])]
        phrase = carried if phrase == subject else phrase
    # A clause that asks only why ("…怎么走的，原因是什么？") asks the first clause for its reasons, as "…, and why?"
    # does in English: that clause with the ask, not "人民币的原因是什么".
    # A condition first ("保险公司要是破产了，交的钱能退多少"): it holds for every later clause, which is asked
    # under it ("保险公司要是破产了，理赔要多久"), not of "保险公司要是破产了，交".
    lead = clauses[0].split("，")[0] if "，" in clauses[0] else ""
    host = lead if any(m in lead for m in _ZH_IF) else ""
    whole = [clauses[0]] + [f"{clauses[0]}，{c}" if _zh_reason_only(c) else f"{host}，{c}" if host
                            else _zh_carry(c, carried, attr, phrase) for c in clauses[1:]]
    parts: list[tuple[str, str]] = []
    for clause in whole:
        split = _zh_list(clause)
        for sub in split or [clause]:
            if len(parts) < MAX_PARTS:
                # (The subject as this part names it: the first clause's carried one, or a condition's topic.)
                own = _zh_own(sub, carried if carried in sub or not host else host)
                # A "why" part asks for reasons (原因 and its kin, words.ASPECT_KIN: 因为, 由于, 导致), as in English.
                why = any(w in sub for w in ("为什么", "为何")) and "原因" not in own and len(whole) > 1
                parts.append((sub, f"原因 {own}".strip() if why else own))
    return parts, subject


def _zh_own(part: str, subject: str) -> str:
    """What a Chinese part asks besides its subject: its terms with the subject and ask words taken out."""
    rest = part.replace(subject, " ", 1) if subject else part
    # Whole words (jieba's), so an ask word never leaves half a word behind (哪家公司 is 哪家 + 公司, not 家公司);
    # asking words, grammar words (应该, 每周, 以前) and one-character words go, common nouns stay (公司).
    asks = (*_ZH_COMPARE, *_ZH_ASK, "有多大", "有多少", "有哪些")
    kept = [w for w, lang in _raw_words(_ZH_AND.sub(" ", rest)) if lang == "zh" and len(w) >= 2
            and w not in ZH_STOP_PHRASES and not any(a in w for a in asks)]
    kept = [w for w in kept if w not in ZH_HEDGES]
    content = [w for w in kept if w in ASPECT_NOUNS_ZH or not _zh_grammar(w)]
    if not content:
        # Colloquial questions ask in one-character words: 钱能赔多少 asks how much money (钱) is paid out
        # (赔). Their nouns, verbs and adjectives (jieba's tags) are the part's words then, not the bigrams.
        singles = [w for w, _ in _raw_words(rest) if len(w) == 1 and scripts.has_han(w)
                   and zh_tagged(w)[0][1][:1] in ("n", "v", "a") and not _function_word(w, "zh")
                   and w not in _ZH_SUBJECT_END]
        content = [*kept, *singles]
    return (" ".join(dict.fromkeys(content or kept))
            or " ".join(key_terms(_ZH_AND.sub(" ", rest), "zh-CN", fallback=False)))
