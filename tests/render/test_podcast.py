"""render_podcast with the offline espeak-ng backend: real MP3s checked with ffprobe and mutagen."""

from __future__ import annotations

import re
import subprocess
import wave
from pathlib import Path

import pytest
from mutagen.id3 import ID3

from research.agents.types import PodcastLine, PodcastScript
from research.render.derive import podcast_script_from_markdown
from research.render.podcast import PodcastError, expected_duration_s, render_podcast
from research.render.tts import EspeakTTS, TTSError, choose_backend

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
    assert "主持人: 欢迎收听本期节目" in result.transcript_txt.read_text(encoding="utf-8")
    assert [c.title for c in result.chapters] == ["开场", "市场规模"]


def test_derived_script_alternates_and_strips_markup(en_report: str):
    script = podcast_script_from_markdown(en_report)
    speakers = [line.speaker for line in script.lines]
    assert speakers == ["host", "guest"] * (len(speakers) // 2)
    assert all("[" not in line.text and "](" not in line.text and "<" not in line.text for line in script.lines)
    sections = list(dict.fromkeys(line.section for line in script.lines))
    assert sections == ["Introduction", "Cost trends", "Deployment", "Grid integration", "Wrap-up"]


def test_choose_backend_settings():
    assert choose_backend("espeak", "zh-CN").name == "espeak-ng"
    assert choose_backend("flite", "en-US").name == "flite"
    assert choose_backend("edge", "en-US").name == "edge-tts"
    with pytest.raises(TTSError):
        choose_backend("flite", "zh-CN")
    with pytest.raises(TTSError):
        choose_backend("nonsense", "en-US")
