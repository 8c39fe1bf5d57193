import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection

from research.knowledge.models import Collection, Document
from tests.knowledge.factories import CORPUS, make_pdf


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {
        "tcp": tmp_path / "tcp.md",
        "pdf": tmp_path / "tidal.pdf",
        "exe": tmp_path / "tool.exe",
        "fake": tmp_path / "fake.pdf",
    }
    paths["tcp"].write_text(CORPUS["tcp.md"], encoding="utf-8")
    paths["pdf"].write_bytes(make_pdf(["Tidal turbines in the Severn estuary."]))
    paths["exe"].write_bytes(b"MZ\x90\x00")
    paths["fake"].write_text("hello", encoding="utf-8")
    return paths


def run_kb(*args: str) -> str:
    out = StringIO()
    call_command("kb", *args, stdout=out)
    return out.getvalue()


def test_add_creates_the_collection_for_the_first_superuser(db, alice, files):
    root = User.objects.create_superuser("root", "root@example.com", "pw")
    output = run_kb("add", "Papers", str(files["tcp"]), str(files["pdf"]))
    assert "created knowledge base 'Papers'" in output
    assert f"added: {files['tcp']}" in output and f"added: {files['pdf']}" in output
    collection = Collection.objects.get(name="Papers")
    assert collection.owner == root
    assert collection.documents.count() == 2
    # Again: nothing new, exit 0.
    output = run_kb("add", "Papers", str(files["tcp"]))
    assert f"already present: {files['tcp']}" in output
    assert Document.objects.count() == 2


def test_rejected_files_are_reported_and_fail_the_command(alice, files):
    out = StringIO()
    with pytest.raises(CommandError, match="3 of 4 file"):
        call_command(
            "kb",
            "add",
            "Mixed",
            str(files["tcp"]),
            str(files["exe"]),
            str(files["fake"]),
            "/nonexistent/x.txt",
            "--user",
            "alice",
            stdout=out,
        )
    lines = out.getvalue().splitlines()
    # One line per file, in order.
    assert lines[1].startswith("added: ") and lines[1].endswith("(1 chunks)")
    assert lines[2].startswith(f"rejected: {files['exe']}: unsupported file type")
    assert lines[3].startswith(f"rejected: {files['fake']}: ") and "not a PDF" in lines[3]
    assert lines[4].startswith("rejected: /nonexistent/x.txt: cannot read the file")
    assert Collection.objects.get(name="Mixed").owner == alice
    # the good file was still saved
    assert Document.objects.filter(collection__name="Mixed").count() == 1


def test_oversize_file_is_refused_without_reading_it(alice, files, settings):
    settings.KB_MAX_UPLOAD_BYTES = 50
    out = StringIO()
    with pytest.raises(CommandError):
        call_command("kb", "add", "Small", str(files["tcp"]), stdout=out)
    assert "too large" in out.getvalue()


def test_default_user_rules(db, alice, bob, files):
    with pytest.raises(CommandError, match="--user"):
        run_kb("add", "X", str(files["tcp"]))  # two ordinary users: ambiguous
    admin = User.objects.create_user("admin", "a@example.com", "pw")
    run_kb("add", "X", str(files["tcp"]))
    assert Collection.objects.get(name="X").owner == admin
    with pytest.raises(CommandError, match="no user named 'nobody'"):
        run_kb("list", "--user", "nobody")


def test_no_users_at_all(db, files):
    with pytest.raises(CommandError, match="no users"):
        run_kb("add", "X", str(files["tcp"]))


def test_list_and_search(alice, files):
    run_kb("add", "Net", str(files["tcp"]), str(files["pdf"]), "--user", "alice")
    listing = run_kb("list", "--user", "alice")
    assert "Net\t2 document(s)" in listing and "tcp.md" in listing
    found = run_kb("search", "Net", "packet loss", "--user", "alice")
    first = found.splitlines()[0]
    assert "kb://" in first and "#chunk-0" in first and "TCP congestion control" in first
    assert "no matches" in run_kb("search", "Net", "zyxwvut", "--user", "alice")
    with pytest.raises(CommandError, match="no knowledge base named"):
        run_kb("search", "Nope", "x", "--user", "alice")


@pytest.mark.django_db(transaction=True)
def test_kb_add_from_a_real_process(files):
    """The operator path end to end, in its own process, against the (file) test database."""
    db_name = str(connection.settings_dict["NAME"])
    if connection.vendor != "sqlite" or "memory" in db_name:
        pytest.skip("needs a file database another process can open")
    root = User.objects.create_superuser("root", "root@example.com", "pw")
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{db_name}", "DJANGO_SETTINGS_MODULE": "research.settings"}

    def kb_add(*paths: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), "kb", "add", "Docs", *map(str, paths)],
            cwd=settings.BASE_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    result = kb_add(files["tcp"], files["exe"])
    assert result.returncode == 1
    assert result.stdout.splitlines()[1:] == [
        f"added: {files['tcp']} -> kb://{Document.objects.get().pk} 'TCP congestion control' (1 chunks)",
        f"rejected: {files['exe']}: unsupported file type (.exe); allowed: PDF, Markdown, plain text, HTML "
        "(.htm, .html, .markdown, .md, .pdf, .text, .txt, .xhtml)",
    ]
    assert "1 of 2 file(s) rejected" in result.stderr

    result = kb_add(files["tcp"], files["pdf"])
    assert result.returncode == 0, result.stderr
    assert f"already present: {files['tcp']}" in result.stdout
    assert f"added: {files['pdf']}" in result.stdout
    assert Collection.objects.get(name="Docs").owner == root
    assert Document.objects.count() == 2
