"""Reading for the offline engine: each step's own searches, reading past the top results until the
step's part is covered, and the key facts (commands) a source states (docs/offline-engine.md,
"Reading until the part is covered").

A part's step searches its sub-question first; while the part has no supported answer it reads the
next hits of that search, then its next search (the step's own query, then a variant for what the
part asks), within a budget of pages and seconds. A part that stays unanswered says so ("No source
found on …").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from research import scripts, textre
from research.agents.engines.offline.numbers import _numbers
from research.agents.engines.offline.question import (  # noqa: F401  (what a part asks: read from here too)
    UNIT_KINDS,
    Aspect,
    _padded_words,
    _says,
    asked_unit,
    part_kind,
)
from research.agents.engines.offline.select import _on_subject, _SubjectCheck
from research.agents.rank import RankedSentence, held, tokenize, unescaped
from research.agents.subject import _norm, subject_of
from research.agents.types import AgentContext, SourceRef, ToolError
from research.agents.words import zipf

READ_PAGES = 10  # pages (or knowledge-base chunks) one step may read in all
MORE_PAGES = 2  # pages read per "read further" move
STEP_SECONDS = 120.0  # a step stops reading further after this long (ctx.options["step_time_budget_s"])

def about_subject(question: str, locale: str, sources: Sequence[SourceRef]) -> _SubjectCheck:
    """Whether a sentence is about the question's subject: the one switch point for the subject check
    (select.py's `_on_subject` until research/agents/subject.py replaces it)."""
    return _on_subject(question, locale, sources)


# ---------------------------------------------------------------- key facts (commands)

_SHELL_START = frozenset(
    "pip pip3 python python3 uv poetry conda npm npx yarn pnpm apt apt-get brew docker git cargo go make "
    "curl wget sudo gem composer dotnet mvn gradle helm kubectl".split()
)


def _command(line: str) -> str:
    """The command a code line holds ("" when it is not one): a shell prompt dropped, a known tool first."""
    text = line.strip()
    if text.startswith(("$ ", "> ", "% ")):
        text = text[2:].strip()
    first = text.split(" ", 1)[0] if text else ""
    if first not in _SHELL_START and not (text.startswith("./") and " " not in first):
        return ""
    if "`" in text:  # a code span's or fence's backticks are markup, not the command
        return ""
    return text if 4 <= len(text) <= 200 and "\n" not in text else ""


def command_facts(text: str) -> list[str]:
    """Commands a page states, in order, each a verbatim slice of one of its lines: lines of fenced or
    indented code blocks, shell-prompt lines and inline code spans that start with a known tool."""
    found: list[str] = []
    fenced = False
    for raw in text.splitlines():
        stripped = raw.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
            continue
        in_code = fenced or (raw.startswith(("    ", "\t")) and bool(stripped)) or stripped.startswith("$ ")
        if fenced and stripped.endswith(("```", "~~~")):
            # A chunker may join the closing fence to the last code line: 'pip install x ```'.
            stripped, fenced = stripped[:-3].rstrip(), False
        candidates = [stripped] if in_code else []
        if not in_code and "`" in stripped:
            pieces = stripped.split("`")
            candidates += [pieces[i] for i in range(1, len(pieces) - 1, 2)]
        for candidate in candidates:
            command = _command(candidate)
            if command and command not in found:
                found.append(command)
    return found


_ENV_VAR = textre.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z][A-Z0-9]*)+\b")  # RESTIC_PASSWORD_FILE, not COVID_19
_FLAG = textre.compile(r"^--?[a-z][\w-]*(?:=\S+)?$")
_RUN_WORDS = frozenset("run runs running use using with type enter execute call invoke".split())
_PUNCT_EDGES = ".,;:!?()[]\"'“”‘’"


def procedure_prior(tools: frozenset[str]) -> Callable[[str], float]:
    """A "how do I …" step's prior: a sentence that states a step as code (`inline_command`) first."""
    return lambda sentence: 1.8 if inline_command(sentence, tools) else 1.0


def command_tools(question: str, locale: str) -> frozenset[str]:
    """The question's own names a command may start with ("restic" of "set up a restic repository")."""
    terms = subject_of(question, locale).terms
    if not terms or terms[0].common:  # a rare name ("restic"), not "home folder"
        return frozenset()
    main = terms[0]
    return frozenset(w.lower() for w in main.text.split() if w.isascii() and _norm(w) in main.core)


def _bare_words(sentence: str) -> list[str]:
    """The sentence's words as written, without the punctuation around them ("restic," → "restic")."""
    return [w.strip(_PUNCT_EDGES) for w in sentence.split()]


def names_tool(sentence: str, tools: frozenset[str]) -> bool:
    """The sentence names one of the question's tools ("… sudo apt install restic …")."""
    return bool(tools) and any(w.lower() in tools for w in _bare_words(sentence))


def inline_command(sentence: str, tools: frozenset[str] = frozenset()) -> bool:
    """Whether a prose sentence states a step as code inline: "… with restic init --repo /srv/restic-repo
    …", "install it with sudo apt install restic", "run restic snapshots", a flag ("--exclude-caches") or
    an environment variable (RESTIC_PASSWORD_FILE). A tool is a known shell program or one of `tools`
    (the subject's own name); "restic is a backup program" states none: after the tool comes a flag or a
    path, or the tool follows "run"/"with" and a word follows it, or the tool is a shell program."""
    sentence = unescaped(sentence)  # a page stored as Markdown escapes RESTIC\_PASSWORD\_FILE and "\~"
    if _ENV_VAR.search(sentence):
        return True
    words = _bare_words(sentence)
    for i, word in enumerate(words):
        if _FLAG.match(word):
            return True
        low = word.lower()
        if low not in _SHELL_START and low not in tools:
            continue
        after = words[i + 1 : i + 4]
        if any(_FLAG.match(a) or a.startswith(("/", "~", "./")) for a in after):
            return True
        # A shell program that is also a common English word ("make restic back up", "cargo ships") is a
        # tool only after "run"/"with", like the subject's own name.
        program = low in _SHELL_START and zipf(low, "en") < _PROSE_WORD
        if after and after[0][:1].islower() and (program or (i and words[i - 1].lower() in _RUN_WORDS)):
            return True
    return False


_PROSE_WORD = 4.0  # make 6.1, go 6.0, poetry 4.4, cargo 4.2; apt 3.7, pip 3.4, sudo 2.4


_LEAD_MARKUP = frozenset("[]|*_`<>{}#\\")


def command_lead(text: str, command: str) -> str:
    """The prose line that introduces `command` in `text` ("To install it with Redis support, run:"),
    verbatim, or "": the last non-empty line before the command's line, when it is plain prose that
    ends in a colon or a full stop."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if command not in line:
            continue
        for before in reversed(lines[max(0, index - 3) : index]):
            lead = before.strip()
            if not lead or lead.startswith(("```", "~~~")):
                continue
            plain = not _LEAD_MARKUP & set(lead) and lead[:1].isupper()
            if plain and lead[-1:] in ":." and 20 <= len(lead) <= 300 and len(lead.split()) >= 4:
                return lead
            break
        break
    return ""


def best_command(words: str, sources: Sequence[SourceRef]) -> tuple[str, int] | None:
    """The command of `sources` that shares most words with `words` (the part asked; at least one
    besides the tool's name; its lead-in line's words count too), with its source's number; None when
    no source states one."""
    wanted = set(tokenize(words))
    best: tuple[int, str, int] | None = None
    for ref in sources:
        for command in command_facts(ref.text):
            said = set(tokenize(f"{command} {command_lead(ref.text, command)}"))
            shared = len(wanted & said - set(tokenize(command.split(" ", 1)[0])))
            if shared and (best is None or shared > best[0]):
                best = (shared, command, ref.number)
    return (best[1], best[2]) if best else None


def fact_note(words: str, sources: Sequence[SourceRef]) -> list[dict[str, Any]]:
    """A step's `facts` note: the best command its sources state, with its source and lead-in line."""
    found = best_command(words, sources)
    if found is None:
        return []
    text = next(ref.text for ref in sources if ref.number == found[1])
    return [{"text": found[0], "source": found[1], "lead": command_lead(text, found[0])}]


# ---------------------------------------------------------------- covered?


def covered(
    ranked: Sequence[RankedSentence],
    *,
    shown: int,
    asked: set[str],
    kind: str,
    on_subject: _SubjectCheck,
    sources: Sequence[SourceRef],
    words: str,
) -> bool:
    """Whether the step's part has a supported answer: an on-subject sentence among those it shows that
    holds a word of what the part asks (`asked`: its own words and its facet's, the subject's left out;
    any sentence when that is empty), with a figure for "how much", one naming people who should for "who
    should", and for "how do I" a command in a source it read. `kind=""` asks only for the sentence (is
    anything on the part at all?)."""
    if kind == "how" and best_command(words, sources) is not None:
        return True
    # A page in another script than the part cannot show the part's words (an English page for 防火性能):
    # as in the ranking, the search's order speaks for its sentences there.
    locale = "zh-CN" if scripts.has_han(words) else "en-US"
    foreign = {ref.number for ref in sources if not scripts.same_script(ref.text[:3000], locale)}
    # A figure in the unit the part asks for answers it in any words: "within 90 minutes" answers "how soon
    # should treatment start", "4岁以前" answers "几岁以前都要用".
    unit = asked_unit(words) if kind in (*UNIT_KINDS, "") else None
    for r in ranked[:shown]:
        if not on_subject({"text": r.text, "source": r.source}):
            continue
        in_unit = unit is not None and unit.search(r.text) is not None
        if asked and not held(asked, r.text) and r.source not in foreign and not in_unit:
            continue
        if kind == "much" and not _numbers([r.text]) and not in_unit:  # "about six weeks" is a figure too
            continue
        if kind == "who" and not in_unit:  # "who should get it": a sentence that names people answers it
            continue
        if kind == "how":
            continue  # a procedure is a command: the sentences alone do not cover it
        return True
    return False


# ---------------------------------------------------------------- the reader


def _same_query(a: str, b: str) -> bool:
    return set(tokenize(a)) == set(tokenize(b))


_KIND_WORDS = {"how": ("install guide command", "安装 命令 教程"), "much": ("price figures data", "数据 价格 规模"),
               "who": ("recommended eligible groups", "适用人群 建议")}


def step_queries(first: str, *, title: str, aspect: Aspect | None, terms: Sequence[str], zh: bool = False,
                 ) -> list[str]:
    """A step's searches in order. A part's step: its sub-question as asked (the other parts' words
    left out), then the step's own query, then the part's words and subject with what it asks for
    ("price figures"). Any other step: its own query, then its title with the key terms. No query twice (the
    same words in another order are the same search)."""
    if aspect:
        words = _KIND_WORDS.get(part_kind(title), ("", ""))[1 if zh else 0]
        # The third names the subject too (the part's query is its own words and the subject's): the
        # part's words alone ("makes") search for nothing in particular.
        queries = [title.rstrip("?？"), first, " ".join(dict.fromkeys([*aspect.query.split(), *words.split()]))]
    else:
        missing = [t for t in terms if t.lower() not in title.lower()]
        queries = [first, " ".join([title.rstrip("?？"), *missing])]
    out: list[str] = []
    for query in queries:
        query = query.strip()[:400]
        if query and not any(_same_query(query, q) for q in out):
            out.append(query)
    return out


@dataclass
class Reader:
    """What one step searched and read: search hits are read in order, a few at a time."""

    ctx: AgentContext
    first_pages: int
    use_web: bool = True
    use_kb: bool = False
    max_results: int = 8
    kb_skip: int = 0  # a heavy run reads the knowledge base's chunks (and search hits) past the first ones
    budget: int = READ_PAGES
    seconds: float = STEP_SECONDS
    started: float = field(default_factory=time.monotonic)
    sources: list[SourceRef] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)  # hit URLs not read yet, in search order
    kb_depth: dict[str, int] = field(default_factory=dict)  # knowledge-base chunks taken per query
    _urls: set[str] = field(default_factory=set)  # the URLs read or tried
    _numbers: set[int] = field(default_factory=set)

    @property
    def read(self) -> int:
        return len(self.sources)

    def left(self) -> int:
        """Pages the budget still allows (0 once the step's seconds are spent)."""
        if time.monotonic() - self.started >= self.seconds:
            return 0
        return max(0, self.budget - self.read)

    def _keep(self, ref: SourceRef) -> bool:
        if ref.number in self._numbers or not ref.text.strip():
            return False
        self._numbers.add(ref.number)
        self.sources.append(ref)
        return True

    def search(self, query: str, pages: int) -> None:
        """Search `query` (knowledge base and web), then read its first `pages` hits."""
        self.queries.append(query)
        if self.use_kb:
            self._kb(query, pages)
        if self.use_web:
            self.ctx.check_cancelled()
            try:
                results = self.ctx.search(query, max_results=self.max_results)
            except ToolError as exc:
                self.errors.append(f"search: {exc}")
                self.ctx.emit("step.activity", {"kind": "search", "query": query, "error": str(exc)})
                results = []
            # Knowledge-base hits that a search provider mixed in are read through kb_search, not fetched.
            fresh: list[str] = []
            for hit in results:
                if hit.url and hit.provider != "knowledge" and not hit.url.startswith("kb://"):
                    if hit.url not in self._urls and hit.url not in fresh:
                        fresh.append(hit.url)
            if self.kb_skip:
                # A heavy run reads past the hits the anchor run read, while enough are left to read.
                k = min(self.kb_skip, max(0, len(fresh) - pages))
                fresh = fresh[k:] + fresh[:k]
            # This search's own hits first (also one an earlier search found), then what earlier
            # searches found and the step has not read yet.
            self.pending = fresh + [url for url in self.pending if url not in fresh]
            self.fetch(pages)

    def _kb(self, query: str, count: int) -> int:
        taken = self.kb_depth.get(query, 0)
        limit = self.kb_skip + taken + count
        self.ctx.check_cancelled()
        try:
            hits = self.ctx.kb_search(query, limit=limit)
        except ToolError as exc:
            self.errors.append(f"knowledge base: {exc}")
            self.ctx.emit("step.activity", {"kind": "kb", "query": query, "error": str(exc)})
            return 0
        self.ctx.emit("step.activity", {"kind": "kb", "query": query, "count": len(hits)})
        # A heavy run's variant reads past the chunks the anchor run read (the synthesis keeps those);
        # in a small knowledge base it reads them from another start, so its first chunks differ.
        start = 0
        if self.kb_skip and len(hits) > 1:
            start = self.kb_skip if self.kb_skip < len(hits) else 1 + (self.kb_skip - 1) % (len(hits) - 1)
        chosen = hits[start:] + hits[:start]
        self.kb_depth[query] = taken + count
        return sum(self._keep(ref) for ref in chosen)

    def fetch(self, count: int) -> int:
        """Read the next `count` pending hits (a failed fetch is skipped for the next one)."""
        got = 0
        while self.pending and got < count and self.left() > 0:
            url = self.pending.pop(0)
            self._urls.add(url)  # read (or tried): never fetched twice
            self.ctx.check_cancelled()
            try:
                got += self._keep(self.ctx.fetch(url))
            except ToolError as exc:
                self.errors.append(f"{url}: {exc}")
                self.ctx.emit("step.activity", {"kind": "fetch_failed", "url": url, "error": str(exc)})
        return got

    def more(self) -> int:
        """Read further down what was searched: the next web hits, else more knowledge-base chunks."""
        got = self.fetch(MORE_PAGES) if self.pending else 0
        if not got and self.use_kb and self.queries:
            got = self._kb(self.queries[-1], MORE_PAGES)
        return got


def reader_for(ctx: AgentContext, first_pages: int, *, kb_skip: int = 0) -> Reader:
    options: dict[str, Any] = ctx.options or {}
    seconds = options.get("step_time_budget_s")
    return Reader(
        ctx,
        first_pages,
        use_web=options.get("web", True) is not False,
        use_kb=bool(options.get("kb")),
        max_results=max(int(options.get("max_results") or 8), READ_PAGES),
        kb_skip=kb_skip,
        seconds=float(seconds) if isinstance(seconds, int | float) and seconds > 0 else STEP_SECONDS,
    )


def read_more_reason(title: str, read: int, zh: bool) -> str:
    if zh:
        return f"已读的 {read} 个来源还没有回答“{title}”"
    return f"the {read} sources read so far do not answer “{title}”"


def no_source_line(title: str, zh: bool, *, italic: bool = True) -> str:
    """What a part's step and the report say when no source answered it (naming the part): in italics
    in the report, plain in the step's own text (its card shows that text as is)."""
    part = title.rstrip("?？").strip()
    line = f"未找到关于“{part}”的来源。" if zh else f"No source found on “{part}”."
    return f"_{line}_" if italic else line
