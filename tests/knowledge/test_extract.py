import pytest

from research.knowledge.extract import DocumentRejected, clean_filename, extract_document
from tests.knowledge.factories import CORPUS, make_pdf


def test_pdf_is_accepted_and_its_text_extracted():
    data = make_pdf(["Quarterly report on tidal energy.", "Turbines in the Severn estuary."], title="Tidal energy")
    result = extract_document(filename="report.PDF", data=data)
    assert result.kind == "pdf"
    assert result.content_type == "application/pdf"
    assert result.title == "Tidal energy"
    assert "tidal energy" in result.text
    assert "Severn estuary" in result.text


def test_pdf_without_title_is_named_after_the_file():
    result = extract_document(filename="notes-2024.pdf", data=make_pdf(["Hello PDF world"]))
    assert result.title == "notes-2024"


def test_markdown_title_from_first_heading():
    result = extract_document(filename="coffee.md", data=CORPUS["coffee.md"].encode())
    assert (result.kind, result.title) == ("markdown", "Brewing coffee")
    assert "Espresso forces hot water" in result.text


def test_html_main_text_is_extracted_without_markup_or_scripts():
    html = (
        "<!DOCTYPE html><html><head><title>Bees</title><script>var secret = 1;</script></head>"
        "<body><nav>Home | About</nav><article><h1>Honeybees</h1>"
        "<p>The waggle dance tells other bees where the flowers are, and how far away.</p>"
        "<p>Foragers collect nectar and pollen from many kinds of flowers.</p></article></body></html>"
    )
    result = extract_document(filename="bees.html", data=html.encode())
    assert result.kind == "html"
    assert result.title == "Bees"
    assert "waggle dance" in result.text
    assert "<p>" not in result.text and "secret" not in result.text


def test_plain_text_utf8_and_gb18030():
    assert extract_document(filename="a.txt", data="naïve café".encode()).text == "naïve café"
    chinese = CORPUS["panda.txt"]
    result = extract_document(filename="panda.txt", data=chinese.encode("gb18030"))
    assert "大熊猫" in result.text
    assert result.title == "panda"


@pytest.mark.parametrize(
    ("filename", "data", "reason"),
    [
        ("tool.exe", b"MZ\x90\x00binary", "unsupported file type (.exe)"),
        ("README", b"plain words", "unsupported file type (no extension)"),
        ("slides.docx", b"PK\x03\x04", "unsupported file type (.docx)"),
        ("fake.pdf", b"This is just text pretending to be a PDF.", "not a PDF"),
        ("broken.pdf", b"%PDF-1.4\n garbage that is no pdf", "could not be read"),
        ("empty.txt", b"", "empty"),
        ("blank.md", b"   \n\n\t ", "empty"),
        ("image.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"),
        ("latin1.txt", "caf\xe9 cr\xe8me br\xfbl\xe9e".encode("latin-1"), "not valid UTF-8"),
        ("page.html", b"Just some words, no markup at all.", "does not look like HTML"),
        ("punct.txt", b"... --- !!!", "no text could be extracted"),
        ("blank.pdf", make_pdf([]), "no text could be extracted"),
    ],
)
def test_rejections_have_clear_reasons(filename, data, reason):
    with pytest.raises(DocumentRejected, match=None) as info:
        extract_document(filename=filename, data=data)
    assert reason in str(info.value)
    assert isinstance(info.value, ValueError)


def test_size_limit_uses_setting(settings):
    settings.KB_MAX_UPLOAD_BYTES = 100
    extract_document(filename="ok.txt", data=b"x" * 100)
    with pytest.raises(DocumentRejected, match="too large"):
        extract_document(filename="big.txt", data=b"x" * 101)


def test_clean_filename_strips_paths_and_control_characters():
    assert clean_filename("../../etc/passwd.txt") == "passwd.txt"
    assert clean_filename("C:\\Users\\me\\notes.md") == "notes.md"
    assert clean_filename("bad\x00name\n.txt") == "badname.txt"
    long = clean_filename("a" * 400 + ".pdf")
    assert len(long) == 255 and long.endswith(".pdf")
