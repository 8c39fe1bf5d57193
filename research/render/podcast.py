"""Podcast: TTS per line (parallel, one process per core) → one WAV with the pauses → loudness measured →
one ffmpeg encode (gain, peak limiter, MP3) → ID3 chapters + transcripts.

Fails loudly: a line that errors or comes back silent fails the whole podcast with a
`PodcastError` naming the line, and the final MP3 is checked (duration against the
expected sum, mean volume above a floor) before anything is reported as done.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import tempfile
import wave
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from mutagen.id3 import CHAP, CTOC, ID3, TIT2, TLAN, TPE1, CTOCFlags

from research import scripts, textre
from research.agents.text import is_chinese
from research.agents.types import PodcastScript
from research.render.tts import TTSBackend, TTSError, choose_backend, speech_segments

SAMPLE_RATE = 24000
PAUSE_S = 0.35  # between lines of one section
SECTION_PAUSE_S = 0.5  # a slightly longer breath where the topic changes
MIN_LINE_DB = -50.0  # a line quieter than this (RMS dBFS) is treated as silent
MIN_OUTPUT_MEAN_DB = -60.0
TARGET_LUFS = -16.0  # EBU R128 loudness for speech
LIMIT = 10 ** (-1.5 / 20)  # peaks under -1.5 dBFS
DURATION_TOLERANCE_S = 1.0
FFMPEG_TIMEOUT_S = 600.0

# espeak-ng's measured speaking rate (seconds per unit), fitted on English and Mandarin samples
# at the speeds EspeakTTS uses; numbers cost more than letters because they are read out in words.
_EN_RATE = {"letter": 0.053, "digit": 0.21, "punct": 0.26, "word": 0.10}
_ZH_RATE = {"char": 0.34, "digit": 0.32, "punct": 0.57}


class PodcastError(RuntimeError):
    """The podcast could not be produced; the message says which line or check failed and why."""


@dataclass(frozen=True)
class Chapter:
    title: str
    start_s: float
    end_s: float


@dataclass(frozen=True)
class Cue:
    start_s: float
    end_s: float
    speaker: str
    text: str


@dataclass
class PodcastResult:
    mp3: Path
    transcript_txt: Path
    transcript_vtt: Path
    duration_s: float
    backend: str
    chapters: list[Chapter] = field(default_factory=list)
    cues: list[Cue] = field(default_factory=list)
    mean_volume_db: float = 0.0


def pauses(script: PodcastScript) -> list[float]:
    """The pause after each line but the last: longer where the section changes."""
    lines = script.lines
    return [SECTION_PAUSE_S if lines[i].section != lines[i + 1].section else PAUSE_S for i in range(len(lines) - 1)]


def _line_seconds(text: str, zh: bool, wpm: float | None, cps: float | None) -> float:
    cjk = scripts.count_han(text)
    latin_words = textre.findall(r"[A-Za-z][A-Za-z'’-]*", text)
    digits = len(textre.findall(r"\d", text))
    if zh or cjk > len(latin_words):
        if cps:
            return (cjk + digits) / cps + len(latin_words) * 0.4
        punct = len(textre.findall(r"[。！？；：，、.!?;:,]", text))
        letters = sum(len(w) for w in latin_words)
        return (
            cjk * _ZH_RATE["char"]
            + digits * _ZH_RATE["digit"]
            + punct * _ZH_RATE["punct"]
            + letters * _EN_RATE["letter"]
            + len(latin_words) * _EN_RATE["word"]
        )
    if wpm:
        return (len(latin_words) + len(textre.findall(r"\d+", text))) / wpm * 60.0
    return (
        sum(len(w) for w in latin_words) * _EN_RATE["letter"]
        + digits * _EN_RATE["digit"]
        + len(textre.findall(r"[.!?;:,]", text)) * _EN_RATE["punct"]
        + (len(latin_words) + len(textre.findall(r"\d+", text))) * _EN_RATE["word"]
    )


def expected_duration_s(script: PodcastScript, *, wpm: float | None = None, cps: float | None = None) -> float:
    """Predicted length of the podcast in seconds, pauses included.

    By default calibrated on espeak-ng (the offline backend); pass `wpm` (English words per
    minute) or `cps` (Chinese characters per second) to predict for another voice.
    """
    zh = is_chinese(script.locale)
    speech = sum(_line_seconds(line.text, zh, wpm, cps) for line in script.lines)
    return speech + sum(pauses(script))


@dataclass(frozen=True)
class _LineAudio:
    path: Path
    duration_s: float
    rms_db: float


def _wav_stats(path: Path) -> tuple[float, float]:
    """(duration seconds, RMS dBFS) of a 16-bit PCM WAV; other formats go through ffmpeg."""
    try:
        with wave.open(str(path), "rb") as handle:
            rate, width, channels = handle.getframerate(), handle.getsampwidth(), handle.getnchannels()
            data = handle.readframes(handle.getnframes())
    except (wave.Error, EOFError) as exc:
        raise TTSError(f"unreadable WAV: {exc}") from exc
    if width != 2:
        return _probe_duration(path), _volume(path)[0]
    samples = np.frombuffer(data[: len(data) - len(data) % 2], dtype="<i2").astype(np.float64)
    if not samples.size or rate <= 0:
        return 0.0, -math.inf
    mean_square = float(np.mean(samples * samples))
    rms_db = 10 * math.log10(mean_square / 32768.0**2) if mean_square > 0 else -math.inf
    return len(samples) / max(1, channels) / rate, rms_db


def _join_wavs(parts: list[Path], out_path: Path) -> None:
    """Concatenate WAV files of one backend (same format) into one; other formats go through ffmpeg."""
    params = []
    for part in parts:
        if not part.exists() or part.stat().st_size <= 44:
            raise TTSError("the backend wrote no audio")
        with wave.open(str(part), "rb") as handle:
            params.append((handle.getnchannels(), handle.getsampwidth(), handle.getframerate()))
    if len(set(params)) != 1:
        for part in parts:  # bring every piece to one format first
            fixed = part.with_suffix(".fixed.wav")
            proc = _ffmpeg(["-v", "error", "-y", "-i", str(part), "-ac", "1", "-ar", str(SAMPLE_RATE),
                            "-sample_fmt", "s16", str(fixed)])  # fmt: skip
            if proc.returncode != 0:
                raise TTSError(f"could not convert a speech segment: {proc.stderr.strip()[-200:]}")
            fixed.replace(part)
    with wave.open(str(parts[0]), "rb") as first:
        channels, width, rate = first.getnchannels(), first.getsampwidth(), first.getframerate()
    with wave.open(str(out_path), "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(width)
        out.setframerate(rate)
        for part in parts:
            with wave.open(str(part), "rb") as handle:
                out.writeframes(handle.readframes(handle.getnframes()))


def _synthesize_line(backend: TTSBackend, index: int, text: str, speaker: str, locale: str, work: Path) -> _LineAudio:
    path = work / f"line-{index:04d}.wav"
    segments = speech_segments(text, locale)
    if len(segments) == 1:
        backend.synthesize(segments[0][0], speaker, segments[0][1], path)
    else:  # each language with its own voice, joined into the one clip of this line
        parts = [work / f"line-{index:04d}-{n:02d}.wav" for n in range(len(segments))]
        for part, (piece, piece_locale) in zip(parts, segments, strict=True):
            backend.synthesize(piece, speaker, piece_locale, part)
        _join_wavs(parts, path)
        for part in parts:
            part.unlink(missing_ok=True)
    if not path.exists() or path.stat().st_size <= 44:
        raise TTSError("the backend wrote no audio")
    duration, rms_db = _wav_stats(path)
    if duration < 0.2:
        raise TTSError(f"audio is empty ({duration:.2f}s)")
    if rms_db < MIN_LINE_DB:
        raise TTSError(f"audio is silent (RMS {rms_db:.1f} dBFS)")
    return _LineAudio(path, duration, rms_db)


def _ffmpeg(args: list[str]) -> subprocess.CompletedProcess[str]:
    if shutil.which("ffmpeg") is None:
        raise PodcastError("ffmpeg is not installed")
    return subprocess.run(
        ["ffmpeg", "-nostdin", "-hide_banner", *args], capture_output=True, text=True, timeout=FFMPEG_TIMEOUT_S
    )


def _probe_duration(path: Path) -> float:
    proc = subprocess.run(
        ["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "json", str(path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    try:
        return float(json.loads(proc.stdout)["format"]["duration"])
    except (KeyError, ValueError, json.JSONDecodeError) as exc:
        raise PodcastError(f"ffprobe could not read {path.name}: {proc.stderr.strip()[-200:]}") from exc


def _volume(path: Path) -> tuple[float, float]:
    """(mean, max) volume in dB from ffmpeg's volumedetect."""
    proc = _ffmpeg(["-i", str(path), "-af", "volumedetect", "-f", "null", "-"])
    mean = textre.search(r"mean_volume:\s*(-?[\d.]+|-inf) dB", proc.stderr)
    peak = textre.search(r"max_volume:\s*(-?[\d.]+|-inf) dB", proc.stderr)
    if not mean or not peak:
        raise PodcastError(f"could not measure the volume of {path.name}")
    return float(mean.group(1)), float(peak.group(1))


def _assemble(lines: list[_LineAudio], gaps: list[float], out_path: Path) -> float:
    """Every line and the pauses between them as one PCM WAV (no ffmpeg); returns its length in seconds.

    The lines of one backend share one format; a line that differs (another backend's voice in a mixed
    line was joined already, so this is rare) is converted to the first line's format first.
    """
    params = []
    for line in lines:
        with wave.open(str(line.path), "rb") as handle:
            params.append((handle.getnchannels(), handle.getsampwidth(), handle.getframerate()))
    channels, width, rate = params[0]
    for line, param in zip(lines, params, strict=True):
        if param != params[0]:
            fixed = line.path.with_suffix(".fixed.wav")
            proc = _ffmpeg(["-v", "error", "-y", "-i", str(line.path), "-ac", str(channels), "-ar", str(rate),
                            "-sample_fmt", "s16", str(fixed)])  # fmt: skip
            if proc.returncode != 0:
                raise PodcastError(f"could not convert {line.path.name}: {proc.stderr.strip()[-200:]}")
            fixed.replace(line.path)
    frames = 0
    with wave.open(str(out_path), "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(width)
        out.setframerate(rate)
        for i, line in enumerate(lines):
            with wave.open(str(line.path), "rb") as handle:
                n = handle.getnframes()
                out.writeframes(handle.readframes(n))
                frames += n
            if i < len(gaps):
                silence = round(gaps[i] * rate)
                out.writeframes(b"\x00" * (silence * channels * width))
                frames += silence
    return frames / rate


def _loudness(path: Path) -> float:
    """Integrated loudness (EBU R128, LUFS) of a WAV: one fast ffmpeg pass (ebur128 measures, writes nothing)."""
    proc = _ffmpeg(["-nostats", "-i", str(path), "-af", "ebur128=framelog=verbose", "-f", "null", "-"])
    value = _number_after(proc.stderr[proc.stderr.rfind("Summary:"):], "I:")
    if proc.returncode != 0 or value is None:
        raise PodcastError(f"could not measure the loudness of the podcast: {proc.stderr.strip()[-300:]}")
    return value


def _number_after(text: str, label: str) -> float | None:
    """The number that follows the last `label` in ffmpeg's log (e.g. "I:  -20.4 LUFS"); None if absent."""
    at = text.rfind(label)
    words = text[at + len(label):].split() if at >= 0 else []
    try:
        return float(words[0]) if words else None
    except ValueError:
        return None


def _encode(wav: Path, out_path: Path, gain_db: float) -> float:
    """One ffmpeg pass: gain to the loudness target, a peak limiter, 24 kHz MP3; returns the mean volume (dB).

    The gain is linear (measured once by _loudness), so the voices sound as synthesized; the limiter keeps
    peaks under the -1.5 dBTP target. volumedetect listens to the same stream, so no second decode is needed.
    """
    graph = (f"[0:a]volume={gain_db:.2f}dB,alimiter=limit={LIMIT:.3f}:level=disabled,"
             f"aresample={SAMPLE_RATE},asplit=2[out][m];[m]volumedetect,anullsink")
    proc = _ffmpeg(
        ["-nostats", "-y", "-i", str(wav), "-filter_complex", graph, "-map", "[out]",
         "-c:a", "libmp3lame", "-b:a", "64k", "-compression_level", "7", "-ar", str(SAMPLE_RATE), "-ac", "1",
         str(out_path)]
    )  # fmt: skip
    if proc.returncode != 0 or not out_path.exists():
        raise PodcastError(f"ffmpeg failed to encode the podcast: {proc.stderr.strip()[-400:]}")
    mean = _number_after(proc.stderr, "mean_volume:")
    if mean is None:
        raise PodcastError("could not measure the volume of the podcast")
    return mean


def _timestamp(seconds: float, *, vtt: bool = True) -> str:
    ms = round(seconds * 1000)
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}.{millis:03d}" if vtt else f"{hours * 60 + minutes:02d}:{secs:02d}"


def _vtt_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("-->", "→")


def _speaker_label(speaker: str, zh: bool) -> str:
    if zh:
        return "主持人" if speaker == "host" else "嘉宾"
    return "Host" if speaker == "host" else "Guest"


def _write_transcripts(script: PodcastScript, cues: list[Cue], txt: Path, vtt: Path) -> None:
    zh = is_chinese(script.locale)
    out = [script.title, ""] if script.title else []
    section = None
    for line, cue in zip(script.lines, cues, strict=True):
        if line.section and line.section != section:
            section = line.section
            out += ["", f"## {section}", ""]
        out.append(f"[{_timestamp(cue.start_s, vtt=False)}] {_speaker_label(cue.speaker, zh)}: {cue.text}")
    txt.write_text("\n".join(out).strip() + "\n", encoding="utf-8")
    blocks = ["WEBVTT", ""]
    for number, cue in enumerate(cues, start=1):
        blocks += [
            str(number),
            f"{_timestamp(cue.start_s)} --> {_timestamp(cue.end_s)}",
            f"<v {_speaker_label(cue.speaker, zh)}>{_vtt_escape(cue.text)}",
            "",
        ]
    vtt.write_text("\n".join(blocks), encoding="utf-8")


def _write_id3(mp3: Path, script: PodcastScript, chapters: list[Chapter]) -> None:
    tags = ID3()
    tags.add(TIT2(encoding=3, text=[script.title or "Podcast"]))
    tags.add(TPE1(encoding=3, text=["Deep Research"]))
    tags.add(TLAN(encoding=3, text=["chi" if is_chinese(script.locale) else "eng"]))
    ids = [f"chp{i}" for i in range(len(chapters))]
    tags.add(CTOC(element_id="toc", flags=CTOCFlags.TOP_LEVEL | CTOCFlags.ORDERED, child_element_ids=ids,
                  sub_frames=[TIT2(encoding=3, text=["Chapters"])]))  # fmt: skip
    for element_id, chapter in zip(ids, chapters, strict=True):
        tags.add(
            CHAP(
                element_id=element_id,
                start_time=round(chapter.start_s * 1000),
                end_time=round(chapter.end_s * 1000),
                sub_frames=[TIT2(encoding=3, text=[chapter.title])],
            )
        )
    tags.save(str(mp3))


def _chapters(script: PodcastScript, cues: list[Cue], total: float) -> list[Chapter]:
    starts: list[tuple[str, float]] = []
    for line, cue in zip(script.lines, cues, strict=True):
        title = line.section or script.title or "Podcast"
        if not starts or starts[-1][0] != title:
            starts.append((title, cue.start_s))
    return [
        Chapter(title, start, starts[i + 1][1] if i + 1 < len(starts) else total)
        for i, (title, start) in enumerate(starts)
    ]


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def render_podcast(
    script: PodcastScript,
    out_dir: Path,
    *,
    basename: str = "podcast",
    backend: TTSBackend | None = None,
    max_workers: int | None = None,
) -> PodcastResult:
    """Synthesize, mix and verify the podcast; writes `<basename>.mp3/.txt/.vtt` into `out_dir`.

    Lines are synthesized in parallel, one TTS process per core (`max_workers`, default the CPUs this
    process may use), joined into one WAV in Python and encoded once.
    """
    if not script.lines:
        raise PodcastError("the script has no lines")
    backend = backend or choose_backend(locale=script.locale)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".podcast-", dir=out_dir) as tmp:
        work = Path(tmp)
        audio: list[_LineAudio | None] = [None] * len(script.lines)
        with ThreadPoolExecutor(max_workers=max(1, max_workers or _cores())) as pool:
            futures: dict[Future[_LineAudio], int] = {
                pool.submit(_synthesize_line, backend, i, line.text, line.speaker, script.locale, work): i
                for i, line in enumerate(script.lines)
            }
            done, pending = wait(futures, return_when=FIRST_EXCEPTION)
            for future in pending:
                future.cancel()
            failures = sorted((futures[f], f.exception()) for f in done if f.exception() is not None)
            if failures:
                index, exc = failures[0]
                line = script.lines[index]
                raise PodcastError(
                    f"line {index + 1} ({line.speaker}, section {line.section!r}) failed with {backend.name}: "
                    f"{exc}; text: {line.text[:80]!r}"
                ) from exc
            for future in done:
                audio[futures[future]] = future.result()
        lines = [a for a in audio if a is not None]
        if len(lines) != len(script.lines):  # pragma: no cover - wait() returned early without an exception
            raise PodcastError("some lines were not synthesized")

        gaps = pauses(script)
        cues: list[Cue] = []
        clock = 0.0
        for i, (line, clip) in enumerate(zip(script.lines, lines, strict=True)):
            cues.append(Cue(clock, clock + clip.duration_s, line.speaker, line.text))
            clock += clip.duration_s + (gaps[i] if i < len(gaps) else 0.0)
        expected_total = clock

        joined = work / "all.wav"
        _assemble(lines, gaps, joined)
        loudness = _loudness(joined)
        gain = TARGET_LUFS - loudness if math.isfinite(loudness) else 0.0
        mixed = work / "mix.mp3"
        mean_db = _encode(joined, mixed, gain)
        duration = _probe_duration(mixed)
        if abs(duration - expected_total) > max(DURATION_TOLERANCE_S, 0.02 * expected_total):
            raise PodcastError(f"mixed podcast is {duration:.2f}s but its lines add up to {expected_total:.2f}s")
        if mean_db <= MIN_OUTPUT_MEAN_DB:
            raise PodcastError(f"mixed podcast is silent (mean volume {mean_db:.1f} dB)")

        chapters = _chapters(script, cues, duration)
        _write_id3(mixed, script, chapters)
        mp3 = out_dir / f"{basename}.mp3"
        txt = out_dir / f"{basename}.txt"
        vtt = out_dir / f"{basename}.vtt"
        shutil.move(str(mixed), mp3)
    _write_transcripts(script, cues, txt, vtt)
    return PodcastResult(mp3, txt, vtt, duration, backend.name, chapters, cues, mean_db)
