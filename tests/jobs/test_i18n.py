"""The UI in Simplified Chinese: chosen from Accept-Language or the language switch; the catalog is complete."""

from __future__ import annotations

import ast
import gettext
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

from research.jobs import dispatch, services
from research.knowledge import services as kb_services

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh-Hans;q=0.9,en;q=0.5"}
EN = {"HTTP_ACCEPT_LANGUAGE": "en-US,en;q=0.9"}
LOCALE_DIR = Path(settings.BASE_DIR) / "locale" / "zh_Hans" / "LC_MESSAGES"
PO_PATH = LOCALE_DIR / "django.po"
MO_PATH = LOCALE_DIR / "django.mo"


@pytest.fixture(autouse=True)
def _no_enqueue(monkeypatch):
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)


@pytest.fixture
def job(alice):
    return services.job_create(user=alice, question="What limits grid battery storage?",
                               options={"engine": "offline", "outputs": ["pdf"]})


@pytest.fixture
def collection(alice):
    return kb_services.collection_create(owner=alice, name="Papers", description="My papers")


@pytest.fixture
def document(collection):
    return kb_services.document_add(collection=collection, filename="notes.md",
                                    data=b"# Battery notes\n\nLithium iron phosphate cells last longer.")


def _page(client, url: str, **headers: str) -> str:
    response = client.get(url, **headers)
    assert response.status_code == 200, (url, response.status_code)
    return response.content.decode()


# --- pages in Chinese ------------------------------------------------------------------------------


def test_job_list_in_chinese_from_accept_language(alice_client, job):
    body = _page(alice_client, "/", **ZH)
    assert '<html lang="zh-hans">' in body
    for text in ("研究任务", "新建研究", "知识库", "问题", "状态", "创建时间", "排队中", "切换", "退出登录"):
        assert text in body, text
    assert "Research jobs" not in body and "Sign out" not in body


def test_empty_job_list_in_chinese(alice_client):
    assert "还没有任务。提出一个研究问题即可开始。" in _page(alice_client, "/", **ZH)


def test_new_job_form_in_chinese(alice_client):
    body = _page(alice_client, "/jobs/new/", **ZH)
    for text in ("研究问题", "报告风格", "学术", "科普", "报告语言", "与问题相同", "最大步骤数", "输出格式",
                 "幻灯片（PPTX）", "无需审阅，直接执行计划", "搜索网络", "离线引擎", "开始研究"):
        assert text in body, text
    assert "Start research" not in body


def test_new_job_errors_in_chinese(alice_client, collection):
    response = alice_client.post("/jobs/new/", {
        "question": "Only my papers?", "style": "academic", "locale": "auto", "max_steps": 3, "engine": "offline",
    }, **ZH)  # no web search and no knowledge base: the service refuses
    assert response.status_code == 400
    assert "不搜索网络的任务必须选择一个知识库。" in response.content.decode()


def test_job_page_in_chinese(alice_client, job):
    body = _page(alice_client, f"/jobs/{job.pk}/", **ZH)
    for text in ("排队中", "取消", "实时进度", "正在连接…", "离线引擎"):
        assert text in body, text
    assert "Live timeline" not in body


def _job_i18n(body: str) -> dict:
    class Finder(HTMLParser):
        found: str | None = None

        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if attrs.get("id") == "job":
                self.found = attrs.get("data-i18n")

    finder = Finder()
    finder.feed(body)
    assert finder.found is not None, "#job has no data-i18n"
    return json.loads(finder.found)


def test_job_page_hands_translated_timeline_labels_to_the_script(alice_client, job):
    labels = _job_i18n(_page(alice_client, f"/jobs/{job.pk}/", **ZH))
    assert labels["step_started"] == "开始“{title}”"
    assert labels["conn_live"] == "实时"
    assert labels["statuses"]["awaiting_review"] == "等待审阅"
    english = _job_i18n(_page(alice_client, f"/jobs/{job.pk}/", **EN))
    assert english["step_started"] == "Started “{title}”"
    assert english["statuses"]["awaiting_review"] == "Awaiting review"
    # Every label the script knows in English is supplied by the server.
    script = (Path(settings.BASE_DIR) / "static" / "js" / "job.js").read_text()
    en_block = script[script.index("const EN = {"):script.index("};", script.index("const EN = {"))]
    keys = set(re.findall(r"(\w+): \"", en_block))
    assert keys and keys <= set(labels), keys - set(labels)


def test_job_status_messages_in_chinese(alice_client, job):
    response = alice_client.post(f"/jobs/{job.pk}/retry/", follow=True, **ZH)
    assert "只有失败或已取消的任务才能重试。" in response.content.decode()


def test_knowledge_pages_in_chinese(alice_client, collection, document):
    body = _page(alice_client, "/kb/", **ZH)
    for text in ("上传您自己的文档", "新建知识库", "名称", "描述", "文档", "创建"):
        assert text in body, text
    body = _page(alice_client, f"/kb/{collection.pk}/", **ZH)
    for text in ("添加文档", "上传", "支持 PDF、Markdown、纯文本或 HTML", "分块数", "搜索此知识库", "删除此知识库…"):
        assert text in body, text
    body = _page(alice_client, f"/kb/{collection.pk}/?q=zebra", **ZH)
    assert "没有匹配的结果。" in body
    body = _page(alice_client, f"/kb/documents/{document.pk}/", **ZH)
    for text in ("引用标识", "提取的文本", "删除文档"):
        assert text in body, text
    body = _page(alice_client, f"/kb/{collection.pk}/delete/", **ZH)
    assert "删除“Papers”？" in body and "此操作无法撤销" in body


def test_knowledge_messages_in_chinese(alice_client, collection):
    response = alice_client.post("/kb/", {"name": "Reports", "description": ""}, follow=True, **ZH)
    assert "知识库“Reports”已创建。" in response.content.decode()
    response = alice_client.post(f"/kb/{collection.pk}/upload/",
                                 {"files": [SimpleUploadedFile("empty.txt", b""),
                                            SimpleUploadedFile("tool.exe", b"MZ")]},
                                 follow=True, **ZH)
    body = response.content.decode()
    assert "empty.txt：已拒绝：文件为空" in body
    assert "tool.exe：已拒绝：不支持的文件类型（.exe）" in body


def test_login_and_signup_in_chinese(client, db):
    assert "登录" in _page(client, "/accounts/login/", **ZH)
    body = _page(client, "/accounts/signup/", **ZH)
    assert "创建账户" in body and "用户名" in body and "密码" in body


# --- switching, and English staying English -----------------------------------------------------------


def test_language_switch_sets_chinese_then_back(alice_client, job):
    response = alice_client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
    assert response.status_code == 302
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "zh-hans"
    body = _page(alice_client, "/", **EN)  # the chosen language wins over the browser's
    assert "研究任务" in body and "Research jobs" not in body
    assert "新建知识库" in _page(alice_client, "/kb/", **EN)
    alice_client.post("/i18n/setlang/", {"language": "en", "next": "/"})
    body = _page(alice_client, "/", **ZH)
    assert "Research jobs" in body and "研究任务" not in body


def test_english_stays_english(alice_client, job, collection):
    for url in ("/", "/jobs/new/", f"/jobs/{job.pk}/", "/kb/", f"/kb/{collection.pk}/"):
        body = _page(alice_client, url, **EN)
        assert '<html lang="en">' in body
        assert not re.search(r"[\u4e00-\u9fff]", body.replace("简体中文", "")), url
    assert "Research jobs" in _page(alice_client, "/", **EN)
    assert "Live timeline" in _page(alice_client, f"/jobs/{job.pk}/")  # no Accept-Language: the default


# --- the catalog --------------------------------------------------------------------------------------


def _po_entries(path: Path) -> list[dict]:
    """msgid, msgstr and flags of each entry; enough of the PO format for what makemessages writes."""
    entries: list[dict] = []
    entry: dict = {"flags": set()}
    field = None
    for raw in path.read_text(encoding="utf-8").splitlines() + [""]:
        line = raw.strip()
        if "msgstr" in entry and field == "msgstr" and line.startswith(("#", "msgid ")):
            entries.append(entry)  # a new entry without a blank line before it
            entry, field = {"flags": set()}, None
        if not line:
            if "msgid" in entry:
                entries.append(entry)
            entry, field = {"flags": set()}, None
        elif line.startswith("#,"):
            entry["flags"].update(f.strip() for f in line[2:].split(","))
        elif line.startswith("#~"):
            entry["obsolete"] = True
        elif line.startswith("#"):
            continue
        elif line.startswith(("msgid_plural ", "msgctxt ")):
            raise AssertionError(f"plural/context entries are not expected here: {line}")
        elif line.startswith(("msgid ", "msgstr ")):
            field, _, literal = line.partition(" ")
            entry[field] = ast.literal_eval(literal)
        elif line.startswith('"') and field:
            entry[field] += ast.literal_eval(line)
    return entries


def _real_entries() -> list[dict]:
    return [e for e in _po_entries(PO_PATH) if e["msgid"]]


def test_po_is_complete_and_not_fuzzy():
    entries = _po_entries(PO_PATH)
    header = next(e for e in entries if e["msgid"] == "")
    assert "fuzzy" not in header["flags"]
    real = _real_entries()
    assert len(real) > 150
    assert not [e["msgid"] for e in real if "fuzzy" in e["flags"]]
    assert not [e["msgid"] for e in real if not e["msgstr"].strip()]
    assert not [e["msgid"] for e in entries if e.get("obsolete")]
    for e in real:  # placeholders survive translation
        for pattern in (r"%\(\w+\)[sdr]", r"\{\w+\}"):
            assert sorted(re.findall(pattern, e["msgid"])) == sorted(re.findall(pattern, e["msgstr"])), e["msgid"]


def test_mo_matches_po():
    with MO_PATH.open("rb") as fh:
        catalog = gettext.GNUTranslations(fh)
    stale = [e["msgid"] for e in _real_entries() if catalog.gettext(e["msgid"]) != e["msgstr"]]
    assert not stale, f"django.mo is out of date; run compilemessages: {stale[:5]}"


def _template_msgids() -> set[str]:
    found: set[str] = set()
    for path in (Path(settings.BASE_DIR) / "templates").rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        found.update(m.group(2) for m in re.finditer(r"{%\s*(?:translate|trans)\s+([\"'])(.*?)\1", text))
        for m in re.finditer(r"{%\s*blocktranslate[^%]*%}(.*?){%\s*endblocktranslate\s*%}", text, re.S):
            found.add(re.sub(r"{{\s*(\w+)\s*}}", r"%(\1)s", m.group(1)))
    return found


def _python_msgids() -> set[str]:
    found: set[str] = set()
    for name in ("jobs/web/forms.py", "jobs/web/views.py", "jobs/models.py", "jobs/services.py", "knowledge/forms.py",
                 "knowledge/views.py", "knowledge/services.py", "knowledge/extract.py", "knowledge/models.py",
                 # the output formats' labels (one module per format)
                 *sorted(p.relative_to(Path(settings.BASE_DIR) / "research").as_posix()
                         for p in (Path(settings.BASE_DIR) / "research" / "render" / "formats").glob("*.py")),
                 "jobs/web/failures.py"):
        tree = ast.parse((Path(settings.BASE_DIR) / "research" / name).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_"
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                found.add(node.args[0].value)
    return found


def test_every_marked_string_is_translated():
    """A string marked in a template or the UI code but missing from the catalog means: run makemessages."""
    known = {e["msgid"] for e in _real_entries()}
    template_ids, python_ids = _template_msgids(), _python_msgids()
    assert len(template_ids) > 80 and len(python_ids) > 60
    missing = sorted((template_ids | python_ids) - known)
    assert not missing, f"not in locale/zh_Hans/LC_MESSAGES/django.po: {missing}"
