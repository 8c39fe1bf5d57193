"""The question's scope: which thing, of which kind, where — the gate that turns away near-miss pages.

Near-miss pages share a question's words and change one thing in its subject: the kind of the thing
(lithium-sulfur for solid-state batteries, 钾离子 for 钠离子电池, 电动自行车 for 电动汽车充电桩), the thing
of that kind (a solid-state *drive*, green *ammonia*), or the place (日本抽水蓄能 for a question on China).
Frequency alone cannot see these: "solid", "state" and "battery" are all common words. So the subject
phrase of the question (its noun phrase, from the parts analysis) is read as a compound — a head (the
last word) and its modifiers, with the attribute nouns the question asks about (cost, 产能, production)
taken off — and a page's title is checked against it:

- the head is in the title but a modifier is not, and a rare word stands where the modifier would
  (just before the head): another kind of the thing, unless the two words are synonyms
  (`synonyms.same_meaning`: 困倦驾驶 for 疲劳驾驶) and the page names the question's word too;
- a modifier is in the title but the head is in neither the title nor the lead: another thing;
- the question names a place and the title names another one, not the question's: another place.

Only same-script pages are judged (a Chinese question over English pages is left to the search).
A title that names the whole compound (head and every modifier, no other place) is about the subject.
Anything else returns None: the subject model (research/agents/subject.py) decides.
"""

from __future__ import annotations

from functools import lru_cache

from research import scripts, textre
from research.agents import words as S
from research.agents.clock import today
from research.agents.synonyms import (
    alike_adjectives,
    is_animal,
    noun_compound,
    other_place,
    places_in,
    same_class,
    same_meaning,
    zh_foreign_places,
    zh_home,
)

_ASPECTS_EN = frozenset(S._norm(w) for w in S.ASPECT_NOUNS_EN)
_ASPECTS_ZH = S.ASPECT_NOUNS_ZH


def is_aspect(word: str) -> bool:
    """An attribute noun ("cost", 产能, 利用率): what a question asks about its subject, never the subject."""
    return S._norm(word) in _ASPECTS_EN or word in _ASPECTS_ZH


_MODIFIER_RARE = 4.5
# A head this common (power 5.5, energy 5.2) is often left out ("rooftop solar" is solar power), so a title
# naming only the kind is not another thing; battery (4.5) or 电池 (4.4) is not left out that way.
_HEAD_SPECIFIC = 5.0  # a word before the head rarer than this names a kind (sulfur 3.3, 电动自行车), not "public"
COMMON_HEAD = _HEAD_SPECIFIC  # a head this common is one titles leave out: the subject model's compounds too


def _content_words(text: str) -> list[tuple[str, str]]:
    return [(S._norm(w), lang) for w, lang in S._raw_words(text) if S._wordlike(w) and not S._function_word(w, lang)]


def _title_words(title: str) -> list[str]:
    """A title's content words; in Chinese also a time word written against the word after it, which then
    names a kind (酒后驾驶 is drunk driving, 产后抑郁 a kind of depression), not a time (赛前应该 …)."""
    raw = S._raw_words(title)
    out: list[str] = []
    for i, (w, lang) in enumerate(raw):
        if not S._wordlike(w):
            continue
        if not S._function_word(w, lang):
            out.append(S._norm(w))
            continue
        after = raw[i + 1] if i + 1 < len(raw) else ("", "")
        attached = lang == "zh" and after[1] == "zh" and f"{w}{after[0]}" in title
        if (attached and _zh_time_word(w) and S._wordlike(after[0])
                and not S._function_word(after[0], after[1])):
            out.append(w)
    return out


def _names_thing(content: list[str], at: int, aspects: frozenset[str]) -> bool:
    """The Chinese attribute noun at `at` stands before a noun of the phrase that is no attribute (座椅 of
    儿童安全座椅, by jieba's noun tags; not a verbal noun or adjective: 过剩 of 产能过剩 is said of the thing)."""
    if at + 1 >= len(content) or content[at + 1] in aspects:
        return False
    tags = S.zh_tagged(content[at + 1])
    return len(tags) == 1 and tags[0][1] in ("n", "nz", "nt", "nr")


def _after_head(title: str, head: str, modifier: str) -> bool:
    """The Chinese title names the modifier only after its head, in the same clause (安全 of 儿童座椅安全吗)."""
    start = title.find(head)
    if start < 0 or modifier in title[:start]:
        return False
    clause = textre.split(r"[，,；;？?！!。：:]", title[start:])[0]
    return modifier in clause


def _zipf(word: str, script: str) -> float:
    """How common a word is in its own language: a Latin word in a Chinese title ("capacity" of "DESIGN
    CAPACITY和…：笔记本…") is as common as it is in English, not rare because Chinese text seldom uses it.
    (Not a short one: "Pro", "Air" and "Max" name product tiers, however common in English.)"""
    english = script == "zh" and word.isascii() and word.isalpha() and len(word) >= 5
    return S.zipf(word, "en" if english else script)


def _zh_time_word(word: str) -> bool:
    return any(flag == "t" for _, flag in S.zh_tagged(word))


@lru_cache(maxsize=512)
def _subject_text(question: str) -> str:
    """The question's subject as the parts analysis finds it, as written ("Germany's 49-euro ticket")."""
    from research.agents.engines.offline import parts  # the one place that finds a question's subject

    text = " ".join(question.split()).strip().rstrip("?？!！.。")
    return (parts._zh_parts(text) if scripts.has_han(text) else parts._en_parts(text))[1]


@lru_cache(maxsize=512)
def _phrase(question: str, locale: str) -> tuple[tuple[str, ...], str]:
    """The subject compound's words (modifiers…, head) without attribute nouns, and its script."""
    zh = scripts.has_han(question)
    subject = _subject_text(question)
    if not subject:
        return (), "zh" if zh else "en"
    aspects = _ASPECTS_ZH if zh else _ASPECTS_EN
    places = set() if zh else {S._norm(w.lower()) for w in textre.findall(r"[A-Z][A-Za-z]+", subject) if places_in(w)}
    content = [w for w, _ in _content_words(subject) if not _place(w, zh) and w not in places]
    # "vitamin D deficiency": a word and the capital letter after it name one kind ("vitamin d").
    for word, letter in textre.findall(r"([A-Za-z]+)\s+([A-Z])\b", subject):
        if letter != "I" and S._norm(word.lower()) in content:
            content[content.index(S._norm(word.lower()))] = f"{S._norm(word.lower())} {letter.lower()}"
    # A Chinese attribute noun with a noun of the thing's own after it names the thing (儿童安全座椅 is a safety
    # seat); the trailing ones are asked of it (充电桩的数量, 固态电池量产, 碳酸锂价格走势).
    out = [w for i, w in enumerate(content) if w not in aspects or (zh and _names_thing(content, i, aspects))]
    return tuple(dict.fromkeys(out)), "zh" if zh else "en"


@lru_cache(maxsize=512)
def _question_words(question: str) -> frozenset[str]:
    """The question's content words, normalised: read once per question, not once per page judged."""
    return frozenset(w for w, _ in _content_words(question))


def subject_phrase(question: str, locale: str) -> tuple[str, ...]:
    """The question's subject compound, modifiers then head, normalised ("heart attack")."""
    return _phrase(question, locale)[0]


def _place(word: str, zh: bool) -> bool:
    return zh and any(flag == "ns" and w == word for w, flag in S.zh_tagged(word))


def _places(text: str) -> frozenset[str]:
    """Place names in a Chinese text (jieba's part-of-speech tags)."""
    if not scripts.has_han(text):
        return frozenset()
    return frozenset(w for w, flag in S.zh_tagged(text) if flag == "ns" and len(w) >= 2)


def scope_verdict(question: str, locale: str, title: str, text: str) -> S.Verdict | None:
    """A near-miss verdict from the title (see the module doc), or None where the title does not decide."""
    words, script = _phrase(question, locale)
    if not title.strip() or (script == "zh") != scripts.has_han(title):
        return None
    if script == "zh":
        # The place needs no subject phrase: "美国的房子为什么大多是木结构" has none the parts analysis finds,
        # and a title on 日本的木结构住宅 is still about another place.
        asked, named = _places(question), _places(title)
        if asked and named and not (asked & named):
            return S.Verdict(False, f"its title is about {'、'.join(sorted(named))}, not {'、'.join(sorted(asked))}")
        styled = _styled_place(question, locale, title, asked)
        if styled:
            # 英式橄榄球 (rugby) for a question on 美国橄榄球: the style names another country's kind of the thing.
            # Soft: 意式咖啡 and 美式咖啡 are also kinds of drink, not of places.
            return S.Verdict(False, f"its title is about {styled[0]}{styled[1]}; the question asks of {styled[2]}",
                             firm=False)
        unplaced = not asked and not zh_home(question) and not zh_foreign_places(question)
        abroad = _place_before_subject(question, locale, title) if unplaced and not zh_home(title) else None
        if abroad:
            # A Chinese question that names no place asks of China (航班延误 is China's rules, 幽门螺杆菌感染率
            # China's rate): a title that puts the subject in 日本 or 欧盟 is about another place. Firm only
            # for 日本的幽门螺杆菌 (the place's own, said with 的) on a page that never names China; a place
            # written against a name may be part of it (英国NHS, 日本寿司, 德国牧羊犬): read last.
            place, owned = abroad
            return S.Verdict(False, f"its title is about {place}; the question asks of China",
                             firm=owned and not zh_home(text))
    elif other_place(places_in(question), places_in(title)):
        # "Austria's KlimaTicket" for a question on Germany's ticket; Bavaria or Europe would be no other.
        return S.Verdict(False, "its title is about another place than the question's")
    animal = _animals_for(title) if script == "en" else ""
    if animal and not any(is_animal(S._owner(w)) for w in _TITLE_TOKEN.findall(question) if S._owner(w).isalpha()):
        # "Lyme disease in dogs", "Interval training for racehorses": the subject in animals, where the
        # question asks of people (it names no animal of its own). Soft: WordNet files "python", "females"
        # and "drones" first under animals too, so this is no evidence of another subject on its own.
        return S.Verdict(False, f"its title is about the subject in {animal}", firm=False)
    numbered = _other_number(question, locale, title)
    if numbered:
        return S.Verdict(False, f"its title is about {numbered}")
    old = _old_year(question, locale, title)
    if old:
        # "2004年的航班延误经济补偿指导意见" for a question that names no year: the rules of 2004, which a user asking
        # today does not mean. Soft: an old page may still hold what is true now.
        return S.Verdict(False, f"its title is about {old}; the question asks of today", firm=False)
    if not words:
        return None
    page = S._page(title, text)
    title_seq = _title_words(title)
    classmate = _classmate(question, words, title_seq, page) if script == "zh" else None
    if classmate:
        # 读博士 for a question on 读硕士: the title names another thing of the same class (Cilin) where the
        # question's word would be, and the page never names the question's. Soft: Cilin's classes also hold
        # near-synonyms (买房 and 购房, 公交车 and 巴士), so the page is only read last.
        return S.Verdict(False, f"its title is about {classmate[1]}, not {classmate[0]}", firm=False)
    head, modifiers = words[-1], words[:-1]
    if page.in_title(head):
        # (A Chinese modifier names the kind before its head: 安全 of "电动自行车儿童座椅安全吗" is asked of
        # the seat, so that title does not name 儿童安全座椅; "电池能用几年？新能源汽车车主必看" still names
        # 新能源汽车电池, in another clause.)
        missing = [m for m in modifiers if not page.in_title(m) or (script == "zh" and _after_head(title, head, m))]
        if missing:
            before = _word_before(title_seq, head, script, words)
            named_as = next((m for m in missing if before and same_meaning(before, m) and page.hits(m)), "")
            if named_as:
                # The question's kind by another name (困倦驾驶 for 疲劳驾驶, on a page that says 疲劳 too).
                return S.Verdict(True, f"its title names {' '.join(words)} as {before} {head}")
            alike = next((m for m in missing if before and script == "en" and alike_adjectives(before, m)), "")
            if alike:
                # An English adjective WordNet puts in the cluster of the question's ("synthetic turf" for
                # artificial turf) may name the same kind or another (independent schools are no free schools):
                # read last, never turned away.
                return S.Verdict(False, f"its title names {before} {head}, a kind like {alike} {head}", firm=False)
            # (Not a word the question names elsewhere: "Attic insulation options compared: fibreglass, cellulose
            # and foam" for spray foam insulation *in an attic* names the question's own setting.)
            # Nor a property (心源性 of 心源性猝死: a Chinese word in 性 says what the thing is like) where the
            # question's missing word is none: it fills another slot (马拉松比赛中的猝死 says where), so it
            # is no other kind of the thing; 病毒性肺炎 against 细菌性肺炎 still is.
            if (before and before not in words and _zipf(before, script) < _MODIFIER_RARE
                    and before not in _question_words(question)
                    and not (_property(before) and not any(_property(m) for m in missing))):
                # Unless the page names the question's kind as often as the title's: then the title's word
                # qualifies the same thing (长跑赛事中的心源性猝死 on a page about marathons, "zoster vaccine"
                # on a page that says shingles throughout), not another kind of it.
                least = max(2, page.hits(before))
                kinds = [m for m in missing if _zipf(m, script) < _MODIFIER_RARE] or missing  # not 比赛
                if not all(page.hits(m) >= least for m in kinds):
                    # A class of things in the plural ("Tick-borne diseases in the United States") for one of
                    # them (Lyme disease) that the page names: a survey of the class may hold the subject's own
                    # figures. Read last, not turned away.
                    survey = (_plural_class(question, title, head) and f"-{before}" in title.lower()
                              and page.hits(" ".join(words)) > 0)
                    return S.Verdict(False, f"its title is about {before} {head}, not {' '.join(words)}",
                                     firm=not survey)
                return None
            absent = [m for m in missing if not page.hits(m)]
            if script == "en" and absent and before and before not in words:
                # "white hydrogen" for green hydrogen: a kind named up front, the question's never at all.
                return S.Verdict(False, f"its title is about {before} {head}; it never says {' '.join(absent)}")
            return None
        # A Chinese word that holds the compound's first word with a front of its own is another thing of
        # that name: 禽流感 (avian flu) is one word to the segmenter, not 流感 with a modifier.
        glued = next((w for w in title_seq if script == "zh" and w != words[0] and w.endswith(words[0])
                      and w[: -len(words[0])] not in words), "")
        if glued:
            return S.Verdict(False, f"its title is about {glued}, not {''.join(words)}")
        # An insurance named after the risk it covers (航班延误险 is delay insurance, not a delay; 意外险, 车险): the
        # title's word is the head and 险, where the title never names the head alone first. (Only 险: other
        # characters the segmenter joins to a head name parts or kinds of the same thing.)
        tail = next((w for w in title_seq if script == "zh" and w == f"{head}险"), "")
        if tail and title_seq.index(tail) < (title_seq.index(head) if head in title_seq else len(title_seq)):
            # Soft: the insurance may be what answers the question (失业了怎么办 → 失业险怎么领).
            return S.Verdict(False, f"its title is about {tail}, not {''.join(words)}", firm=False)
        # The compound named as the modifier of a thing with a name of its own: "Heat pump water heaters"
        # are water heaters (an English compound's head is its last noun), not heat pumps.
        wider = _named_after(title, head) if script == "en" else ""
        if wider:
            return S.Verdict(False, f"its title is about {wider}s, not {' '.join(words)}", firm=False)
        # A title that sets another kind beside the question's ("Panic attack or heart attack?") is about
        # the one its page names more.
        joiner = "" if script == "zh" else " "
        whole = joiner.join(words) if len(words) > 1 else head
        # (A kind the question itself names elsewhere is its own: 木结构房子 for "房子为什么大多是木结构".)
        other = next((k for k in _kinds_before(title, title_seq, head, script, words)
                      if _zipf(k, script) < _MODIFIER_RARE and page.hits(k) > page.hits(whole)
                      and k not in _question_words(question)), "")
        if other:
            return S.Verdict(False, f"its title sets {other} {head} beside {whole}, and the page names it more",
                             firm=False)
        # The title names the whole subject, kind and thing (and no other place): it is about it, whatever
        # the frequency rules would make of a term built from the question's other words.
        return S.Verdict(True, f"its title names {' '.join(words)}")
    if page.in_lead(head) and page.hits(head) >= 2:
        return None
    in_lead = [m for m in modifiers if page.in_lead(m) and _zipf(m, script) < _MODIFIER_RARE]
    if (script == "en" and in_lead and _zipf(head, script) < _HEAD_SPECIFIC and not page.names_family(head)
            and not any(page.in_title(m) for m in modifiers)):
        # A rare kind word up front and the thing nowhere, in no form: the word is said of something else ("the
        # new monarch was crowned" on a page on the monarchy, for monarch butterflies; "back up" with rsync
        # for a restic backup repository). Firm for a word rarer than Zipf 4.0 only: a page may call the thing
        # otherwise ("Automated speed enforcement" for speed cameras; "speed", 5.0, is too common to count).
        # The title's own case is below.
        firm = all(_zipf(m, script) < S.SPECIFIC for m in in_lead)
        return S.Verdict(False, f"its lead names {'/'.join(in_lead)} and the page never names {head}", firm=firm)
    if any(page.in_title(m) for m in modifiers) and _zipf(head, script) < _HEAD_SPECIFIC:
        said = '/'.join(m for m in modifiers if page.in_title(m))
        if not page.names_family(head):
            # Not once on the whole page, in no form ("insulates" is a form of insulation): the kind is said
            # of another thing (a solid-state *drive*, roof shingles, 飞行员疲劳): evidence, not the want of it.
            return S.Verdict(False, f"its title names {said} and the page never names {head}")
        if script == "en" and len(modifiers) > 1 and _ends_phrase(title, modifiers):
            # Every word of the subject but its class noun, and nothing after them in the phrase: "Spray
            # polyurethane foam (SPF): a guide" is spray foam, which the page says insulates. ("Spray foam
            # roofing" puts another noun in the class's place: the soft verdict below.)
            return S.Verdict(True, f"its title names {' '.join(modifiers)} and the page says {head} in some form")
        # Soft: "knee arthroplasty" for knee replacement names the thing otherwise as often as "green
        # ammonia" names another thing; both say the thing itself somewhere.
        return S.Verdict(False, f"its title names {said} but not {head}", firm=False)
    # Neither the thing nor its kind up front, the question's attribute words in the title: the same
    # question asked of something else ("中国储能电芯的产能和价格情况" for 光伏组件).
    aspects = _ASPECTS_ZH if script == "zh" else _ASPECTS_EN
    if any(w in aspects for w in title_seq) and not page.hits(head) and not any(page.in_title(m) for m in modifiers):
        return S.Verdict(False, f"its title asks the question of something else, never naming {head}", firm=False)
    return None


def _place_before_subject(question: str, locale: str, title: str) -> tuple[str, bool] | None:
    """(the place outside China the title puts the subject in, whether it says so with 的), or None: the place
    right before a word of the subject compound (日本的幽门螺杆菌感染率, 欧盟航班延误), not one the title names in
    passing (从美国回国后我开了一年网约车)."""
    places = zh_foreign_places(title)
    if not places:
        return None
    names = _phrase(question, locale)[0]
    for place in places:
        for at in (m.start() for m in textre.finditer(textre.escape(place), title)):
            after = title[at + len(place):]
            owned = after.startswith("的")
            after = after.removeprefix("的")
            if any(name and after.lower().startswith(name.lower()) for name in names):
                return place, owned
    return None


# Words that name a kind of thing by a country's style (英式橄榄球 is rugby, 美式橄榄球 American football): a closed
# class. Not 台式 (a desktop computer) nor 西式 (Western, no one country).
_STYLE_PLACES = {"英式": "英国", "美式": "美国", "日式": "日本", "德式": "德国", "法式": "法国", "意式": "意大利",
                 "韩式": "韩国", "中式": "中国", "俄式": "俄罗斯", "泰式": "泰国", "港式": "香港", "欧式": "欧洲"}


def _plural_class(question: str, title: str, head: str) -> bool:
    """The English title says the head in the plural where the question says it in the singular: a class of
    things ("Tick-borne diseases") where the question asks of one (Lyme disease)."""
    def forms(text: str) -> set[str]:
        return {t.lower() for t in _TITLE_TOKEN.findall(text) if S._norm(t.lower()) == head}
    said, titled = forms(question), forms(title)
    return bool(said) and all(not w.endswith("s") for w in said) and any(w.endswith("s") for w in titled)


def _styled_place(question: str, locale: str, title: str, asked: frozenset[str]) -> tuple[str, str, str] | None:
    """(the style word, the subject word after it, the question's places) where the title names the subject in
    another country's style (英式 before 橄榄球) and the question names a place, not that one, nor the style
    itself; or None."""
    places = set(asked) | set(zh_foreign_places(question)) | ({"中国"} if zh_home(question) else set())
    own_styles = [style for style, place in _STYLE_PLACES.items() if place in places]
    if not places or any(p in title for p in places) or any(s in title for s in own_styles) or zh_home(title):
        return None  # the title names the question's place, or its style, too
    names = _phrase(question, locale)[0]
    for style, place in _STYLE_PLACES.items():
        if style in question or place in places or style not in title:
            continue
        for at in (m.end() for m in textre.finditer(style, title)):
            word = next((name for name in names if name and title[at:].startswith(name)), "")
            if word:
                return style, word, "、".join(sorted(places))
    return None


def _classmate(question: str, words: tuple[str, ...], title_seq: list[str], page: S._Page) -> tuple[str, str] | None:
    """(the question's word, the title's) where a word of the subject compound is nowhere on the page and
    the title names a word of its class in Cilin that the question does not (硕士 → 博士), or None."""
    asked = _question_words(question)
    for word in words:
        if page.hits(word):
            continue
        other = next((t for t in title_seq if t not in asked and same_class(word, t)), "")
        if other:
            return word, other
    return None


_TITLE_TOKEN = textre.compile(r"[A-Za-z][A-Za-z'-]*|[^\sA-Za-z]")


_AMONG = frozenset({"in", "for", "among"})


def _animals_for(title: str) -> str:
    """The animal a title puts its topic in or for, right after the preposition or one word after it, and
    ending the title's phrase ("… in dogs:", "… for racehorses", "among dairy cattle"; not "for pet owners",
    nor "in fish and supplements"), or ''."""
    tokens = [S._owner(t.lower()) for t in _TITLE_TOKEN.findall(title)]
    for i, token in enumerate(tokens):
        if token not in _AMONG:
            continue
        for j in (i + 1, i + 2):
            if j >= len(tokens) or not tokens[j].isalpha():
                break
            ends = j + 1 == len(tokens) or not tokens[j + 1].isalpha()
            if ends and is_animal(tokens[j]):
                return tokens[j]
    return ""


def _property(word: str) -> bool:
    """A Chinese word of a property (心源性, 急性, 病毒性): a modifier in 性 says what a thing is like."""
    return len(word) >= 2 and word.endswith("性") and scripts.has_han(word)


def _named_after(title: str, head: str) -> str:
    """The noun WordNet lists as one word pair right after the head in the title ("water heater"), or
    made of the head and the word after it ("battery charger"), with no punctuation between: the head
    only qualifies that thing. '' where there is none, or where it is
    an attribute asked of the head ("battery recycling", "heat pump costs")."""
    tokens = [t.lower() for t in _TITLE_TOKEN.findall(title)]
    for i, token in enumerate(tokens[:-1]):
        if S._norm(token) != head or not tokens[i + 1].isalpha() or is_aspect(tokens[i + 1]):
            continue
        following = tokens[i + 2] if i + 2 < len(tokens) else ""
        if following.isalpha() and not is_aspect(following) and noun_compound(tokens[i + 1], following):
            return f"{tokens[i + 1]} {following}".removesuffix("s")  # heat pump water heaters
        if noun_compound(token, tokens[i + 1]):
            return f"{token} {tokens[i + 1]}".removesuffix("s")  # car battery chargers
    return ""


# A name with a number in it: "49-euro ticket", "GLP-1", "type 2 diabetes", "Windows 11".
_NUMBERED = textre.compile(r"(?:^|[^\w.])(\d+(?:\.\d+)?)-?([A-Za-z]{2,})"
                           r"|([A-Za-z]{2,})[- ](\d+(?:\.\d+)?)(?:$|[^\w.-])")


def _numbers(text: str) -> dict[str, set[str]]:
    """The words of a text named with a number, each with its numbers ("euro" → {"49"})."""
    out: dict[str, set[str]] = {}
    for before, word, named, after in _NUMBERED.findall(text):
        out.setdefault(S._norm((word or named).lower()), set()).add(before or after)
    return out


def _other_number(question: str, locale: str, title: str) -> str:
    """The title's name where it gives the subject's numbered word another number and never the question's:
    "The 9-euro ticket" for Germany's 49-euro ticket, "Type 1 diabetes" for type 2 ('' where none)."""
    asked = _numbers(_subject_text(question))
    if not asked:
        return ""
    for word, numbers in _numbers(title).items():
        if word in asked and not numbers & asked[word]:
            return f"{'/'.join(sorted(numbers))} {word}, not {'/'.join(sorted(asked[word]))} {word}"
    return ""


_YEAR = textre.compile(r"(?:19|20)\d\d")
_PAST = textre.compile(r"(?i)\b(?:was|were|did|caused|happened|history|historical)\b|了|过|曾|当年|历史|的[？?]?$")
_OLD_YEARS = 10  # a year this far back is history, not what a question with no year asks about


def _old_year(question: str, locale: str, title: str) -> str:
    """The year, more than ten years back, that a title puts right before a word of the subject compound
    (2004年的航班延误, "2004 flight delay rules"), where the question names no year; or ''."""
    if _YEAR.search(question) or _PAST.search(question):
        return ""  # a year asked, or the past: "非典是怎么结束的", "What caused the financial crisis"
    names = [n.lower() for n in _phrase(question, locale)[0] if n]
    for match in _YEAR.finditer(title):
        if int(match.group()) > today().year - _OLD_YEARS:
            continue
        after = title[match.end():].lower().removeprefix("年").removeprefix("的").lstrip()
        if any(after.startswith(name) for name in names):
            return match.group()
    return ""


def _ends_phrase(title: str, modifiers: tuple[str, ...]) -> bool:
    """Whether the title names the modifiers in order within one phrase (a word or two may stand between:
    "spray polyurethane foam") and the phrase ends there, with punctuation or the title's end, so no other
    noun takes the place of the question's class noun (an attribute may follow: "what spray foam costs")."""
    tokens = [S._norm(t.lower()) if t[0].isalpha() else t
              for raw in _TITLE_TOKEN.findall(title) for t in raw.strip("-").split("-") if t]
    for start, token in enumerate(tokens):
        if token != modifiers[0]:
            continue
        i, found = start, 1
        while found < len(modifiers) and i + 1 < len(tokens) and tokens[i + 1][0].isalpha() and i - start < 3:
            i += 1
            found += tokens[i] == modifiers[found]
        after = tokens[i + 1] if i + 1 < len(tokens) else ""
        if found == len(modifiers) and (not after[:1].isalpha() or is_aspect(after)):
            return True
    return False


def _kinds_before(title: str, seq: list[str], head: str, script: str, words: tuple[str, ...]) -> list[str]:
    """The kinds the title names of the head other than the question's: the word right before an
    occurrence of the head that is not a question word ("panic" of "Panic attack or heart attack?")."""
    kinds: list[str] = []
    for i, w in enumerate(seq):
        if script == "zh" and w != head and w.endswith(head):
            before = w[: -len(head)]  # 钾离子电池 segmented whole: the kind is its front
        elif w == head and i > 0 and (script == "en" or seq[i - 1] + head in title):
            before = seq[i - 1]  # a Chinese kind is written against its head (not 广场舞为什么在中老年人)
        else:
            continue
        if before not in words and before not in kinds:
            kinds.append(before)
    return kinds


def _word_before(seq: list[str], head: str, script: str, words: tuple[str, ...] = ()) -> str:
    """The word that stands where the question's kind would, before the head and the question's own
    modifiers ("cadmium" of "cadmium solar cells" for perovskite solar cells), or ''."""
    for i, w in enumerate(seq):
        if w == head or (script == "zh" and head in w):
            if script == "zh" and w != head and w.endswith(head) and len(w) > len(head):
                return w[: -len(head)]  # 钾离子电池 segmented whole: the kind is its front
            j = i - 1
            while j >= 0 and seq[j] in words:
                j -= 1
            return seq[j] if j >= 0 else ""
    return ""
