"""render_podcast with the offline espeak-ng backend: real MP3s checked with ffprobe and mutagen."""

from __future__ import annotations

import re
import subprocess
import wave
from pathlib import Path

import pytest
from mutagen.id3 import ID3

from research.agents.types import PodcastLine, PodcastScript
from research.render.podcast import PodcastError, expected_duration_s, render_podcast
from research.render.podcast_script import (
    ScriptProblem,
    podcast_script,
    podcast_script_from_markdown,
    repair_script,
    script_from_model,
    script_problems,
)
from research.render.tts import EspeakTTS, TTSError, choose_backend, speech_segments
from research.report.document import parse_report
from tests.render.reports import all_reports

EN_SCRIPT = PodcastScript(
    locale="en-US",
    title="Solar in 2024",
    lines=[
        PodcastLine(speaker="host", text="Welcome to the show. Today: solar power in 2024.", section="Introduction"),
        PodcastLine(speaker="guest", text="Costs fell by roughly ninety percent since 2010.", section="Introduction"),
        PodcastLine(speaker="host", text="Let's talk about deployment. What happened?", section="Deployment"),
        PodcastLine(
            speaker="guest",
            text="China installed more solar than the whole world the year before.",
            section="Deployment",
        ),  # fmt: skip
        PodcastLine(speaker="host", text="Thanks for listening.", section="Wrap-up"),
    ],
)


def ffprobe_duration(path: Path) -> float:
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", str(path)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return float(out.strip())


def vtt_times(path: Path) -> list[tuple[float, float]]:
    def seconds(stamp: str) -> float:
        h, m, s = stamp.split(":")
        return int(h) * 3600 + int(m) * 60 + float(s)

    return [
        (seconds(a), seconds(b))
        for a, b in re.findall(r"^(\d\d:\d\d:\d\d\.\d{3}) --> (\d\d:\d\d:\d\d\.\d{3})$", path.read_text(), re.M)
    ]


@pytest.fixture(scope="module")
def en_podcast(tmp_path_factory):
    return render_podcast(EN_SCRIPT, tmp_path_factory.mktemp("podcast"), basename="solar", backend=EspeakTTS())


def test_english_podcast_duration_and_loudness(en_podcast):
    assert en_podcast.mp3.name == "solar.mp3" and en_podcast.backend == "espeak-ng"
    duration = ffprobe_duration(en_podcast.mp3)
    assert duration == pytest.approx(en_podcast.duration_s, abs=0.1)
    assert duration == pytest.approx(expected_duration_s(EN_SCRIPT), rel=0.2)
    assert en_podcast.mean_volume_db > -40
    # The temporary per-line files are gone.
    assert sorted(p.name for p in en_podcast.mp3.parent.iterdir()) == ["solar.mp3", "solar.txt", "solar.vtt"]


def test_transcripts_have_monotonic_cues(en_podcast):
    times = vtt_times(en_podcast.transcript_vtt)
    assert len(times) == len(EN_SCRIPT.lines)
    assert en_podcast.transcript_vtt.read_text().startswith("WEBVTT")
    for (start, end), following in zip(times, times[1:] + [(None, None)], strict=True):
        assert start < end
        if following[0] is not None:
            assert end < following[0]  # a pause between lines
    assert times[-1][1] <= ffprobe_duration(en_podcast.mp3) + 0.05
    txt = en_podcast.transcript_txt.read_text()
    assert "Host: Welcome to the show." in txt and "## Deployment" in txt


def test_id3_title_and_chapters(en_podcast):
    tags = ID3(str(en_podcast.mp3))
    assert str(tags["TIT2"]) == "Solar in 2024"
    toc = tags.getall("CTOC")[0]
    chapters = sorted(tags.getall("CHAP"), key=lambda c: c.start_time)
    assert list(toc.child_element_ids) == [c.element_id for c in chapters]
    assert [str(c.sub_frames["TIT2"]) for c in chapters] == ["Introduction", "Deployment", "Wrap-up"]
    assert chapters[0].start_time == 0
    for a, b in zip(chapters, chapters[1:], strict=False):
        assert a.end_time == b.start_time > a.start_time


class FailingBackend(EspeakTTS):
    name = "failing"

    def synthesize(self, text, voice_role, locale, out_path):
        if "deployment" in text:
            raise TTSError("voice server said no")
        return super().synthesize(text, voice_role, locale, out_path)


class SilentBackend:
    name = "silent"

    def synthesize(self, text, voice_role, locale, out_path):
        with wave.open(str(out_path), "wb") as handle:
            handle.setnchannels(1)
            handle.setsampwidth(2)
            handle.setframerate(22050)
            handle.writeframes(b"\x00\x00" * 22050)
        return out_path


def test_a_failing_line_fails_the_podcast_with_its_reason(tmp_path: Path):
    with pytest.raises(PodcastError, match=r"line 3 \(host, section 'Deployment'\).*voice server said no"):
        render_podcast(EN_SCRIPT, tmp_path, backend=FailingBackend())
    assert not (tmp_path / "podcast.mp3").exists()


def test_silent_audio_is_never_reported_as_done(tmp_path: Path):
    with pytest.raises(PodcastError, match="silent"):
        render_podcast(EN_SCRIPT, tmp_path, backend=SilentBackend())
    assert list(tmp_path.iterdir()) == []


def test_chinese_podcast_with_espeak_cmn(tmp_path: Path, zh_report: str):
    script = podcast_script_from_markdown(zh_report, locale="zh-CN", max_sentences=2)
    script.lines = script.lines[:4]  # keep the test short: intro + first section
    result = render_podcast(script, tmp_path, basename="zh", backend=EspeakTTS())
    assert ffprobe_duration(result.mp3) == pytest.approx(expected_duration_s(script), rel=0.2)
    transcript = result.transcript_txt.read_text(encoding="utf-8")
    assert "主持人: 欢迎收听深度研究。今天我们来聊聊中国新能源汽车市场研究。" in transcript
    assert "嘉宾: 先说结论：近年来，中国新能源汽车市场快速增长。2023年销量超过九百万辆。" in transcript
    assert [c.title for c in result.chapters] == ["开场", "市场规模"]


def test_derived_script_alternates_and_strips_markup(en_report: str):
    script = podcast_script_from_markdown(en_report)
    speakers = [line.speaker for line in script.lines]
    assert all(a != b for a, b in zip(speakers, speakers[1:], strict=False))  # they take turns
    assert all("[" not in line.text and "](" not in line.text and "<" not in line.text for line in script.lines)
    sections = list(dict.fromkeys(line.section for line in script.lines))
    assert sections == ["Introduction", "Cost trends", "Deployment", "Grid integration", "Wrap-up"]
    assert script_problems(script) == []


def test_choose_backend_settings():
    assert choose_backend("espeak", "zh-CN").name == "espeak-ng"
    assert choose_backend("flite", "en-US").name == "flite"
    assert choose_backend("edge", "en-US").name == "edge-tts"
    with pytest.raises(TTSError):
        choose_backend("flite", "zh-CN")
    with pytest.raises(TTSError):
        choose_backend("nonsense", "en-US")


# ---------------------------------------------------------------- scripts a listener would finish

FILLER = re.compile(r"offline engine|language model|already appear|离线引擎|语言模型|已在上文|interesting\. what else|"
                    r"很有意思。还有呢|https?://|references?:|参考文献", re.I)  # fmt: skip


@pytest.mark.parametrize("name", sorted(all_reports()))
def test_derived_scripts_read_like_a_show(name: str):
    md = all_reports()[name]
    doc = parse_report(md)
    script = podcast_script(doc)
    assert script_problems(script) == []
    texts = [line.text for line in script.lines]
    assert len(texts) == len(set(texts))
    assert not [t for t in texts if FILLER.search(t)]
    assert not [t for t in texts for ref in doc.references if ref.title in t]  # the reference list is never read
    assert not [t for t in texts if re.search(r"[？?！!][。.]|。。|\.\.(?!\.)|[，,][。.]", t)]
    speakers = [line.speaker for line in script.lines]
    assert all(a != b for a, b in zip(speakers, speakers[1:], strict=False))
    chapters = list(dict.fromkeys(line.section for line in script.lines))
    assert chapters[0] in {"Introduction", "开场"} and chapters[-1] in {"Wrap-up", "结语"} and len(chapters) >= 3
    # Every content sentence spoken comes from the report.
    report_text = " ".join(s.text for s in doc.sentences())
    spoken = [t for line in script.lines if line.section not in {"Introduction", "开场", "Wrap-up", "结语"}
              for t in [line.text]]  # fmt: skip
    assert spoken and all(any(s.text[1:25] in t for s in doc.sentences()) or len(t) < 60 for t in spoken), report_text


def test_each_sentence_gets_the_voice_of_its_language():
    line = "欢迎收听深度研究。The world installed about 447 gigawatts in 2023. 比亚迪的LCOE下降了。"
    assert speech_segments(line, "zh-CN") == [
        ("欢迎收听深度研究。", "zh-CN"),
        ("The world installed about 447 gigawatts in 2023.", "en-US"),
        ("比亚迪的LCOE下降了。", "zh-CN"),
    ]
    assert speech_segments("Costs fell. The term 新能源汽车 means new energy vehicle.", "en-US") == [
        ("Costs fell. The term", "en-US"),
        ("新能源汽车", "zh-CN"),
        ("means new energy vehicle.", "en-US"),
    ]


class RecordingTTS(EspeakTTS):
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def synthesize(self, text, voice_role, locale, out_path):
        self.calls.append((text, locale))
        return super().synthesize(text, voice_role, locale, out_path)


def test_mixed_language_line_is_spoken_by_two_voices(tmp_path: Path):
    script = PodcastScript(
        locale="zh-CN",
        title="混合",
        lines=[
            PodcastLine(speaker="host", text="欢迎收听。今天看一份英文资料。", section="开场"),
            PodcastLine(
                speaker="guest", text="资料说：Solar power is now the cheapest source of electricity.", section="开场"
            ),
        ],
    )  # fmt: skip
    backend = RecordingTTS()
    result = render_podcast(script, tmp_path, backend=backend)
    assert ("Solar power is now the cheapest source of electricity.", "en-US") in backend.calls
    assert ("资料说：", "zh-CN") in backend.calls
    assert result.duration_s > 3


def audio_report(path: Path) -> tuple[float, list[float]]:
    """(integrated loudness in LUFS, lengths of silences over 1.2 s) from ffmpeg's ebur128 and silencedetect."""

    def stderr(audio_filter: str) -> str:
        return subprocess.run(
            ["ffmpeg", "-nostdin", "-hide_banner", "-i", str(path), "-af", audio_filter, "-f", "null", "-"],
            capture_output=True, text=True, check=True,
        ).stderr  # fmt: skip

    loudness = float(re.findall(r"I:\s*(-?[\d.]+) LUFS", stderr("ebur128"))[-1])
    silences = [float(x) for x in re.findall(r"silence_duration: ([\d.]+)", stderr("silencedetect=noise=-45dB:d=1.2"))]
    return loudness, silences


def test_whole_offline_episode_audio_and_transcript(tmp_path: Path):
    doc = parse_report(all_reports()["offline-en-US"])
    script = podcast_script(doc)
    result = render_podcast(script, tmp_path, basename="episode", backend=EspeakTTS())
    loudness, silences = audio_report(result.mp3)
    assert loudness == pytest.approx(-16.0, abs=2.0)  # EBU R128 target of the mixer
    assert silences == []  # no dead air: pauses between lines are well under a second
    assert 45 < ffprobe_duration(result.mp3) < 600
    chapters = [c.title for c in result.chapters]
    assert chapters[0] == "Introduction" and chapters[-1] == "Wrap-up" and len(chapters) >= 4
    tags = ID3(str(result.mp3))
    assert len(tags.getall("CHAP")) == len(chapters)
    transcript = result.transcript_txt.read_text()
    assert "offline engine" not in transcript and "site.test" not in transcript
    lines = [re.sub(r"^\[\d+:\d+\] ", "", t) for t in transcript.splitlines() if t.startswith("[")]
    assert len(lines) == len(set(lines)) == len(script.lines)


def test_a_model_script_is_repaired_before_it_is_spoken():
    doc = parse_report(all_reports()["offline-zh-CN"])
    welcome = "欢迎收听！今天的问题是：中国新能源汽车的发展现状如何？。"
    bad = PodcastScript(
        locale="zh-CN",
        title="中国新能源汽车的发展现状如何？",
        lines=[
            PodcastLine(speaker="host", text=welcome, section="开场"),
            PodcastLine(speaker="guest", text="本报告由离线引擎生成，未使用语言模型。", section="开场"),
            PodcastLine(speaker="guest", text="2023年销量达到949.5万辆[1]。", section="关键数据"),
            PodcastLine(speaker="host", text="很有意思。还有呢？", section="关键数据"),
            # A line must carry a sentence of the report (issue 31): this one says what the report says.
            PodcastLine(speaker="host", text="新能源汽车出口也快速增长，https://site.test/zh 有详细数据。", section="关键数据"),  # noqa: E501
            PodcastLine(speaker="guest", text="2023年销量达到949.5万辆[1]。", section="关键数据"),
            PodcastLine(speaker="guest", text="比亚迪是主要出口企业，", section="关键数据"),
            PodcastLine(speaker="host", text="感谢收听。", section=""),
        ],
    )  # fmt: skip
    assert script_problems(bad)
    fixed = repair_script(bad, doc)
    assert script_problems(fixed) == []
    texts = [line.text for line in fixed.lines]
    assert texts[0] == "欢迎收听！今天的问题是：中国新能源汽车的发展现状如何？"
    assert not any("离线引擎" in t or "还有呢" in t or "http" in t or "[1]" in t for t in texts)
    assert "比亚迪是主要出口企业。" in " ".join(texts)
    assert fixed.lines[-1].section == "关键数据"  # a line with no section stays in the chapter it follows
    with pytest.raises(ScriptProblem):
        stock = PodcastLine(speaker="host", text="Interesting. What else?")
        repair_script(PodcastScript(locale="en-US", lines=[stock]))


def test_model_script_is_used_when_repairable_and_replaced_when_not(en_report: str):
    model = PodcastScript(
        locale="en-US",
        title="Solar",
        lines=[
            PodcastLine(speaker="host", text="Welcome! Today: solar power [1].", section="Intro"),
            PodcastLine(speaker="guest", text="Costs fell by roughly 90 percent since 2010.", section="Intro"),
            PodcastLine(speaker="host", text="What about deployment?", section="Deployment"),
            PodcastLine(speaker="guest", text="The EU added 56 gigawatts.", section="Deployment"),
        ],
    )
    used = script_from_model(model, en_report, locale="en-US")
    assert [line.text for line in used.lines][0] == "Welcome! Today: solar power."
    junk = PodcastScript(locale="en-US", lines=[PodcastLine(speaker="host", text="Interesting. What else?")] * 5)
    derived = script_from_model(junk, en_report, locale="en-US")
    assert derived == podcast_script(parse_report(en_report, locale="en-US"))
    assert script_from_model(None, en_report, locale="en-US") == derived
