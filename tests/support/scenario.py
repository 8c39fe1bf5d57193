"""A scripted "model" that plays a whole research job against the LLM engine's prompts.

Plug it into the fake LLM server (tests/support/fake_llm.py) as its responder:

    fake = FakeLLM(research_scenario).start()            # the default job
    fake = FakeLLM(Scenario(steps=2, bogus_citation=False)).start()

It recognises the agent from the system prompt's first line ("# Role: planner"), or
failing that from the structured-output schema name or the tools offered, reads the
task sections the engine writes ("## Question", "## Current step", …) and answers the
way a cooperative model would:

- coordinator: greetings get a short direct answer; a vague request ("Tell me about …")
  gets up to three clarifying questions when the task allows them; anything else goes to research;
- planner: a valid plan of `steps` steps derived from the question (Chinese titles for
  Chinese questions); a re-plan with feedback returns a different plan built around it;
- researcher: IterResearch rounds (its message text is the whole updated report, its tool
  calls the next action; it sees only its last action's results): web_search, then
  fetch_page on the first two result URLs, then the finished step report whose cited
  sentences are copied verbatim from the fetched pages (so citation checks pass);
  `research_rounds` makes it search and read again until that round;
- followup: one sentence quoted from the numbered source that best matches the question, cited,
  plus one citation to a source that does not exist (the check must remove it);
- coder: a Python block that prints a number and saves a matplotlib PNG (optionally
  failing first), then a short result that embeds the figure;
- reporter: a report reusing the cited sentences of the step results, plus one bogus
  `[99]` citation (knob) so tests can check that unknown numbers are removed;
- podcast / slides: valid JSON built from the report.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from tests.support.fake_llm import Reply

_ROLE = re.compile(r"^#\s*Role:\s*([a-z_]+)", re.IGNORECASE)
_SCHEMA_AGENTS = {
    "CoordinatorReply": "coordinator",
    "Plan": "planner",
    "PodcastScript": "podcast",
    "SlideOutline": "slides",
}
_VAGUE = re.compile(r"^\s*(tell me about|给我讲讲)", re.IGNORECASE)
_GREETING = re.compile(
    r"^\s*(hi|hello|hey|hallo|good (morning|afternoon|evening)|thanks|thank you|how are you|who are you"
    r"|你好|您好|嗨|哈喽|谢谢|早上好|晚上好)\b",
    re.IGNORECASE,
)
_CJK = re.compile(r"[\u4e00-\u9fff]")
_SOURCE_HEAD = re.compile(r"^(?:Source|Knowledge-base passage) \[(\d+)\]: (.*)$", re.MULTILINE)
_URL_LINE = re.compile(r"^\s*URL: (\S+)", re.MULTILINE)
_CITED_LINE = re.compile(r"^- (.+?) ((?:\[\d+\])+)\s*$", re.MULTILINE)
_SOURCE_LIST = re.compile(r"^\[(\d+)\] ", re.MULTILINE)
_FIGURE = re.compile(r"!\[([^\]]*)\]\(figures/([^)\s]+)\)")
# A sentence ends at . ! ? followed by a space (not "$0.42") or at a Chinese full stop.
_SENTENCE = re.compile(r"[^\s][^\n]*?(?:[.!?](?=\s|$)|[。！？])")

EN_FACETS = (
    "Background and key facts",
    "Current developments and data",
    "Comparisons and viewpoints",
    "Impacts and outlook",
    "Open questions and risks",
    "Practical implications",
)
ZH_FACETS = ("背景与基本事实", "最新进展与数据", "比较与不同观点", "影响与展望", "尚待解决的问题与风险", "实际意义")

CHART_CODE = """import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

values = {"2021": 3, "2022": 5, "2023": 8, "2024": 13}
total = sum(values.values())
print(f"total = {total}")
plt.figure(figsize=(6, 4))
plt.bar(list(values), list(values.values()), color="#4472c4")
plt.title("Example values per year")
plt.ylabel("value")
plt.savefig("chart.png", dpi=100, bbox_inches="tight")
print("saved chart.png")
"""

FAILING_CODE = """values = [3, 5, 8, 13]
print(values[10])  # IndexError on purpose: the coder is expected to fix it
"""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else str(content)


def section(text: str, name: str, *, to_end: bool = False) -> str:
    """The body of the `## name` section of an engine task message ("" if absent).

    `to_end` reads to the end of the message: for the last section, whose body (a
    report, step results) may contain `## ` headings of its own.
    """
    end = r"\Z" if to_end else r"(?=^## |\Z)"
    match = re.search(rf"^## {re.escape(name)}[^\n]*\n(.*?){end}", text, re.MULTILINE | re.DOTALL)
    return match.group(1).strip() if match else ""


def is_zh(text: str) -> bool:
    return bool(_CJK.search(text))


def topic_of(question: str, limit: int = 80) -> str:
    topic = re.sub(r"\s+", " ", question).strip().rstrip("?？。.!！")
    return topic[:limit].rstrip() or "the question"


def quotable_sentences(body: str, limit: int = 2) -> list[str]:
    """Sentences copied verbatim from a source's text, skipping markup and cut-off text."""
    found: list[str] = []
    for line in body.splitlines():
        line = line.strip()
        if not line or line[0] in "#|>*-[!`" or "truncated" in line:
            continue
        for match in _SENTENCE.finditer(line):
            sentence = match.group(0).strip()
            size = len(sentence) if not is_zh(sentence) else len(sentence) * 3
            if size >= 30 and "[" not in sentence and "](" not in sentence:
                found.append(sentence)
            if len(found) >= limit:
                return found
    return found


@dataclass
class Scenario:
    """Knobs for the scripted job; call it with a request body to get a Reply."""

    steps: int = 3
    step_types: tuple[str, ...] = ("research", "research", "processing")
    latency_s: float = 0.0  # extra delay per call, on top of FakeLLM's ttft / tokens_per_s
    bogus_citation: bool = True  # the reporter cites a non-existent [99]
    fetch_per_step: int = 2
    code_failures: int = 0  # the coder's first N programs fail (tests the fix loop)
    research_rounds: int = 0  # > 0: the researcher keeps searching and reading until this round
    calls: list[str] = field(default_factory=list)  # agent of every request, in order
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __call__(self, request: dict[str, Any]) -> Reply:
        if self.latency_s:
            time.sleep(self.latency_s)
        agent = agent_of(request)
        with self._lock:
            self.calls.append(agent)
        handler = getattr(self, f"_{agent}", None)
        if handler is None:
            return Reply(content="I can only play the research scenario.")
        return handler(request)

    # ---- helpers --------------------------------------------------------------------

    @staticmethod
    def _messages(request: dict[str, Any]) -> list[dict[str, Any]]:
        return list(request.get("messages") or [])

    def _task(self, request: dict[str, Any]) -> str:
        # The engine's first user message carries the task sections.
        for message in self._messages(request):
            if message.get("role") == "user":
                return _text(message.get("content"))
        return ""

    def _tool_results(self, request: dict[str, Any]) -> list[str]:
        results: list[str] = []
        for message in self._messages(request):
            content = _text(message.get("content"))
            if message.get("role") == "tool":
                results.append(content)
            elif message.get("role") == "user" and "<tool_response>" in content:  # text-tag profiles
                results.extend(re.findall(r"<tool_response>\n?(.*?)\n?</tool_response>", content, re.DOTALL))
        return results

    def _called(self, request: dict[str, Any], tool: str) -> bool:
        """Whether an earlier assistant turn already called `tool` (then give up on it, as a model would)."""
        for message in self._messages(request):
            for call in message.get("tool_calls") or []:
                if (call.get("function") or {}).get("name") == tool:
                    return True
            if message.get("role") == "assistant" and f'"name": "{tool}"' in _text(message.get("content")):
                return True
        return False

    @staticmethod
    def _tool_names(request: dict[str, Any]) -> set[str]:
        names = {str((t.get("function") or t).get("name", "")) for t in request.get("tools") or []}
        system = next((m for m in request.get("messages") or [] if m.get("role") == "system"), None)
        if system is not None and "<tools>" in _text(system.get("content")):
            names |= set(re.findall(r'"name":\s*"([A-Za-z0-9_-]+)"', _text(system.get("content")).split("<tools>")[1]))
        return names - {""}

    # ---- agents ---------------------------------------------------------------------

    def _coordinator(self, request: dict[str, Any]) -> Reply:
        question = section(self._task(request), "Question")
        zh = is_zh(question)
        locale = "zh-CN" if zh else "en-US"
        if _GREETING.match(question) and len(question) < 60:
            answer = (
                "你好！我是深度研究助手。请告诉我你想研究的问题。"
                if zh
                else "Hello! I am a deep-research assistant. Ask me a research question and I will write a report."
            )
            decision = {"action": "answer", "locale": locale, "answer": answer}
            return Reply(content=json.dumps(decision, ensure_ascii=False))
        if "## Clarification allowed\nyes" in self._task(request) and _VAGUE.match(question):
            questions = (["你关心哪个国家或地区？", "你需要多长时间范围的数据？"] if zh
                         else ["Which country or region do you care about?", "What time span should it cover?"])
            return Reply(content=json.dumps({"action": "clarify", "locale": locale, "answer": questions[0],
                                             "questions": questions}, ensure_ascii=False))
        return Reply(content=json.dumps({"action": "research", "locale": locale, "answer": ""}))

    def _planner(self, request: dict[str, Any]) -> Reply:
        task = self._task(request)
        question = section(task, "Question")
        zh = is_zh(question)
        topic = topic_of(question)
        max_steps = int(section(task, "Maximum number of steps") or self.steps)
        count = max(1, min(self.steps, max_steps))
        feedback = section(task, "User feedback on the previous plan")
        facets = list(ZH_FACETS if zh else EN_FACETS)
        if feedback:
            focus = topic_of(feedback, 120)
            facets = [f"重点：{focus}" if zh else f"Focus: {focus}"] + facets
        answers = re.findall(r"^\s*A: (.+)$", section(task, "Clarifications from the user"), re.MULTILINE)
        if answers:  # a cooperative planner builds the plan around the user's answers
            facets = [f"重点：{a.strip()}" if zh else f"Focus: {a.strip()}" for a in answers] + facets
        steps: list[dict[str, Any]] = []
        for index in range(count):
            step_type = self.step_types[index] if index < len(self.step_types) else "research"
            sid = f"s{index + 1}"
            if step_type == "processing":
                facet = "定量分析与图表" if zh else "Quantitative analysis and chart"
                deps = [s["id"] for s in steps if s["step_type"] != "processing"]
            else:
                facet = facets[index % len(facets)]
                deps = []
            title = f"{topic}：{facet}" if zh else f"{facet}: {topic}"
            description = (f"围绕“{topic}”调查{facet}。" if zh else f"Investigate {facet.lower()} for: {topic}.") + (
                f" {('用户反馈：' if zh else 'User feedback: ')}{feedback}" if feedback else ""
            )
            steps.append(
                {
                    "id": sid,
                    "title": title[:300],
                    "description": description[:4000],
                    "step_type": step_type,
                    "need_search": step_type == "research",
                    "depends_on": deps,
                }
            )
        plan = {
            "locale": "zh-CN" if zh else "en-US",
            "title": (f"{topic}（修订版）" if zh else f"{topic} (revised)") if feedback else topic,
            "thought": (f"按反馈修改：{feedback}" if zh else f"Revised after feedback: {feedback}")
            if feedback
            else ("先了解背景，再收集数据和观点。" if zh else "Cover the background first, then data and viewpoints."),
            "has_enough_context": False,
            "steps": steps,
        }
        return Reply(content=json.dumps(plan, ensure_ascii=False))

    def _last_action(self, request: dict[str, Any]) -> tuple[str, list[str]]:
        """The researcher's previous message as its workspace shows it: the report and the tools it called."""
        for message in reversed(self._messages(request)):
            if message.get("role") != "assistant":
                continue
            content = _text(message.get("content"))
            names = [str((c.get("function") or {}).get("name", "")) for c in message.get("tool_calls") or []]
            names += re.findall(r'<tool_call>\s*\{"name":\s*"([A-Za-z0-9_-]+)"', content)  # text-tag profiles
            report = re.sub(r"<tool_call>.*?(?:</tool_call>|\Z)", "", content, flags=re.DOTALL).strip()
            return report, names
        return "", []

    def _researcher(self, request: dict[str, Any]) -> Reply:
        """One IterResearch round: the message text is the whole updated report (the memory), the tool
        calls the next action. It sees only its last action's results, so it folds them into the report
        at once: search, then read `fetch_per_step` of the hits, then finish (or, with `research_rounds`,
        search and read again until that round)."""
        task = self._task(request)
        tools = self._tool_names(request)
        results = self._tool_results(request)
        step = section(task, "Current step")
        step_title = re.search(r"^title: (.*)$", step, re.MULTILINE)
        title = step_title.group(1).strip() if step_title else topic_of(section(task, "Question"))
        previous, last = self._last_action(request)
        report = _fold_sources(previous or f"### {title}", results)
        round_no = int((re.findall(r"\d+", section(task, "Round")) or ["0"])[0])
        if tools and "web_search" in tools:
            if "web_search" in last and "fetch_page" in tools:
                urls: list[str] = []
                for result in results:
                    if result.startswith("Search results for"):
                        urls.extend(u for u in _unread_urls(result) if u not in urls)
                if urls:
                    calls = [{"name": "fetch_page", "arguments": {"url": u}} for u in urls[: self.fetch_per_step]]
                    return Reply(content=report, tool_calls=calls)
            more = self.research_rounds and 0 < round_no < self.research_rounds
            if not last or more or not ({"web_search", "fetch_page"} & set(last)):
                query = title if not last else f"{title} (part {round_no})"
                calls = [{"name": "web_search", "arguments": {"query": query}}]
                if "knowledge_search" in tools and not last:
                    calls.append({"name": "knowledge_search", "arguments": {"query": title}})
                return Reply(content=report if last else "", tool_calls=calls)
        return Reply(content=self._finish_report(task, report))

    def _finish_report(self, task: str, report: str) -> str:
        zh = is_zh(section(task, "Question"))
        lines = [report]
        # Earlier steps' cited lines may be reused (analysis steps without tools).
        for line, cites in _CITED_LINE.findall(section(task, "Results of earlier steps")):
            if f"- {line} {cites}" not in report:
                lines.append(f"- {line} {cites}")
        if not _CITED_LINE.search("\n".join(lines)):
            lines.append("没有找到可以引用的来源。" if zh else "No citable sources were found for this step.")
        return "\n".join(lines)

    def _coder(self, request: dict[str, Any]) -> Reply:
        messages = self._messages(request)
        runs = [_text(m.get("content")) for m in messages if "Exit code:" in _text(m.get("content"))]
        if self._tool_names(request):
            code = FAILING_CODE if len(runs) < self.code_failures else CHART_CODE
            return Reply(content=f"Here is the program.\n\n```python\n{code}```\n")
        zh = is_zh(section(self._task(request), "Question"))
        last = runs[-1] if runs else ""
        figures = re.search(r"^Figures saved: (.*)$", last, re.MULTILINE)
        names = [n.strip() for n in figures.group(1).split(",")] if figures and figures.group(1) != "none" else []
        stdout = re.search(r"stdout:\n```\n(.*?)```", last, re.DOTALL)
        number = re.search(r"\d+(?:\.\d+)?", stdout.group(1) if stdout else "")
        value = number.group(0) if number else "?"
        text = f"计算得到的总和为 {value}。" if zh else f"The computation gives a total of {value}."
        for name in names:
            text += f"\n\n![{'示例数值' if zh else 'Example values per year'}](figures/{name})"
        return Reply(content=text)

    def _synthesis(self, request: dict[str, Any]) -> Reply:
        """Heavy mode's merge: every cited line of the runs' reports once, as a model following the prompt would
        keep what the runs found (the engine's checks then filter what it may cite)."""
        reports = section(self._task(request), "Reports", to_end=True)
        lines: list[str] = []
        for line in reports.splitlines():
            text = line.strip()
            if text.startswith("#") or not re.search(r"\[\d+\]", text):
                continue
            if text not in lines:
                lines.append(text)
        return Reply(content="\n".join(lines[:12]) or "The runs found nothing to merge.")

    def _reporter(self, request: dict[str, Any]) -> Reply:
        task = self._task(request)
        question = section(task, "Question")
        zh = is_zh(question) or section(task, "Locale").lower().startswith("zh")
        known = {int(n) for n in _SOURCE_LIST.findall(section(task, "Sources"))}
        steps_text = section(task, "Step results", to_end=True)
        findings: list[str] = []
        for sentence, cites in _CITED_LINE.findall(steps_text):
            numbers = [int(n) for n in re.findall(r"\d+", cites)]
            if all(n in known for n in numbers) and f"- {sentence} {cites}" not in findings:
                findings.append(f"- {sentence} {cites}")
        figures = [f"![{caption}](figures/{name})" for caption, name in _FIGURE.findall(steps_text)]
        topic = topic_of(question)
        if zh:
            parts = [f"# 研究报告：{topic}", "", "## 摘要", "", f"本报告围绕“{topic}”整理了各研究步骤的发现。", ""]
            parts += ["## 主要发现", ""] + (findings or ["- 未找到可引用的来源。"])
        else:
            summary = f"This report collects what the research found on {topic}."
            parts = [f"# Research report: {topic}", "", "## Summary", "", summary, ""]
            parts += ["## Key findings", ""] + (findings or ["- No citable sources were found."])
        if figures:
            parts += ["", "## 图表" if zh else "## Figures", ""] + figures
        if self.bogus_citation:
            parts += ["", "一些说法尚未得到证实 [99]。" if zh else "Some claims remain unverified [99]."]
        parts += ["", "## 结论" if zh else "## Conclusion", ""]
        conclusion_en = "The findings above answer the question as far as the sources allow."
        parts.append("以上发现回答了用户的问题。" if zh else conclusion_en)
        return Reply(content="\n".join(parts) + "\n")

    def _verifier(self, request: dict[str, Any]) -> Reply:
        """A literal-minded judge: the claim is supported when nearly all of its words are in the passage."""
        task = self._task(request)
        claim, passage = section(task, "Claim").lower(), section(task, "Passage").lower()
        words = set(re.findall(r"\w{4,}", claim))
        found = words & set(re.findall(r"\w{4,}", passage))
        supported = not words or len(found) >= 0.8 * len(words)
        return Reply(content=json.dumps({"supported": supported}))

    def _followup(self, request: dict[str, Any]) -> Reply:
        """Quote one sentence of the best-matching numbered source, cited, plus one bogus citation."""
        task = self._task(request)
        question = section(task, "Follow-up question")
        blocks = re.findall(r"^\[(\d+)\] [^\n]*\n(.*?)(?=^\[\d+\] |\Z)", section(task, "Sources"), re.M | re.S)
        words = {w.lower() for w in re.findall(r"\w{4,}", question)}
        blocks.sort(key=lambda b: -len(words & {w.lower() for w in re.findall(r"\w{4,}", b[1])}))
        for number, body in blocks:
            for sentence in quotable_sentences(body, 1):
                return Reply(content=f"{sentence} [{number}] This is certain [99].")
        return Reply(content="The sources do not say.")

    def _podcast(self, request: dict[str, Any]) -> Reply:
        task = self._task(request)
        zh = section(task, "Locale").lower().startswith("zh")
        title, sections = _report_sections(section(task, "Report", to_end=True))
        lines = [
            {
                "speaker": "host",
                "text": f"欢迎收听！今天我们聊聊：{title}。" if zh else f"Welcome! Today we talk about {title}.",
                "section": title,
            },
        ]
        for heading, sentences in sections:
            lines.append(
                {
                    "speaker": "host",
                    "text": f"说说{heading}吧？" if zh else f"What about {heading}?",
                    "section": heading,
                }
            )
            text = " ".join(sentences[:2]) or ("这部分没有更多细节。" if zh else "There is not much more detail here.")
            lines.append({"speaker": "guest", "text": text, "section": heading})
        lines.append(
            {
                "speaker": "host",
                "text": "感谢收听，再见！" if zh else "Thanks for listening, goodbye!",
                "section": title,
            }
        )
        script = {"locale": "zh-CN" if zh else "en-US", "title": title, "lines": lines}
        return Reply(content=json.dumps(script, ensure_ascii=False))

    def _slides(self, request: dict[str, Any]) -> Reply:
        task = self._task(request)
        report = section(task, "Report", to_end=True)
        title, sections = _report_sections(report)
        figures = dict((heading, name) for heading, name in _section_figures(report))
        slides = [
            {
                "title": heading,
                "bullets": [s[:120] for s in sentences[:5]],
                "notes": " ".join(sentences[:3]) or heading,
                "figure": figures.get(heading),
                "table": None,
            }
            for heading, sentences in sections
        ]
        outline = {"title": title, "subtitle": "", "slides": slides}
        return Reply(content=json.dumps(outline, ensure_ascii=False))


def _fold_sources(report: str, results: list[str]) -> str:
    """`report` plus a cited line for each quotable sentence of the sources in `results` (once each)."""
    new: list[str] = []
    for result in results:
        for match in _SOURCE_HEAD.finditer(result):
            number = int(match.group(1))
            body = result[match.end() :].split("\n---\n", 1)[0]
            body = _URL_LINE.sub("", body, count=1)
            for sentence in quotable_sentences(body):
                line = f"- {sentence} [{number}]"
                if line not in report and line not in new:
                    new.append(line)
    report = report.strip()
    if not new:
        return report
    if not report:
        return "\n".join(new)
    return report + ("\n" if report.splitlines()[-1].startswith("- ") else "\n\n") + "\n".join(new)


def _unread_urls(search_result: str) -> list[str]:
    """The URLs of a search result listing, skipping hits marked as already fetched."""
    urls: list[str] = []
    for hit in re.split(r"^\d+\. ", search_result, flags=re.MULTILINE)[1:]:
        url = _URL_LINE.search(hit)
        if url and "(already fetched as" not in hit.split("\n", 1)[0]:
            urls.append(url.group(1))
    return urls


def agent_of(request: dict[str, Any]) -> str:
    """Which engine agent sent `request`: the system prompt marker, else schema name, else tools."""
    for message in request.get("messages") or []:
        if message.get("role") == "system":
            match = _ROLE.match(_text(message.get("content")).lstrip())
            if match:
                return match.group(1).lower()
    response_format = request.get("response_format") or {}
    name = (response_format.get("json_schema") or {}).get("name", "")
    if name in _SCHEMA_AGENTS:
        return _SCHEMA_AGENTS[name]
    tools = {str((t.get("function") or t).get("name", "")) for t in request.get("tools") or []}
    if "run_python" in tools:
        return "coder"
    if tools & {"web_search", "fetch_page"}:
        return "researcher"
    return ""


def _plain(text: str) -> str:
    text = _FIGURE.sub("", text)
    text = re.sub(r"\[\d+\]", "", text)
    text = re.sub(r"[*_`#>]", "", text)
    text = re.sub(r"\s+([。，.,;；])", r"\1", text)
    return re.sub(r"\s+", " ", text).strip()


def _report_sections(report: str) -> tuple[str, list[tuple[str, list[str]]]]:
    title_match = re.search(r"^# (.+)$", report, re.MULTILINE)
    title = title_match.group(1).strip() if title_match else "Report"
    sections: list[tuple[str, list[str]]] = []
    for match in re.finditer(r"^## ([^\n]+)\n(.*?)(?=^## |\Z)", report, re.MULTILINE | re.DOTALL):
        body = _plain(match.group(2).replace("\n- ", "\n"))
        sentences = [s.strip() for s in _SENTENCE.findall(body) if s.strip()]
        sections.append((match.group(1).strip(), sentences))
    if not sections:
        sections = [(title, [s.strip() for s in _SENTENCE.findall(_plain(report))][:5])]
    return title, sections


def _section_figures(report: str) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for match in re.finditer(r"^## ([^\n]+)\n(.*?)(?=^## |\Z)", report, re.MULTILINE | re.DOTALL):
        figure = _FIGURE.search(match.group(2))
        if figure:
            pairs.append((match.group(1).strip(), figure.group(2)))
    return pairs


DEFAULT_SCENARIO = Scenario()


def research_scenario(request: dict[str, Any]) -> Reply:
    """The default responder for FakeLLM: a plausible three-step job (see Scenario for knobs)."""
    return DEFAULT_SCENARIO(request)
