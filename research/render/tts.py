"""Text-to-speech behind one small interface: edge-tts online, espeak-ng / flite offline.

Every backend writes a WAV file per line (16-bit PCM) so the mixer can measure and
join lines the same way whatever produced them.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Protocol, runtime_checkable

from research import scripts, textre
from research.agents.text import is_chinese

EDGE_HOST = "speech.platform.bing.com"
REACHABILITY_TTL_S = 300.0
TTS_TIMEOUT_S = 120.0

_reachability: dict[str, tuple[float, bool]] = {}
_reachability_lock = threading.Lock()


class TTSError(RuntimeError):
    """A backend could not synthesize a line (missing program, bad exit, no network…)."""


@runtime_checkable
class TTSBackend(Protocol):
    name: str

    def synthesize(self, text: str, voice_role: str, locale: str, out_path: Path) -> Path:
        """Speak `text` as "host" or "guest" in `locale`; write a WAV file to `out_path`."""
        ...


def _run(cmd: list[str], *, stdin: str | None = None, timeout: float = TTS_TIMEOUT_S) -> None:
    try:
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError as exc:
        raise TTSError(f"{cmd[0]} is not installed") from exc
    except subprocess.TimeoutExpired as exc:
        raise TTSError(f"{cmd[0]} timed out after {timeout:.0f}s") from exc
    if proc.returncode != 0:
        raise TTSError(f"{cmd[0]} exited with {proc.returncode}: {proc.stderr.strip()[-300:]}")


def _to_wav(src: Path, out_path: Path) -> None:
    """Decode any audio to 24 kHz mono 16-bit WAV."""
    _run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", str(src), "-ac", "1", "-ar", "24000",
          "-sample_fmt", "s16", str(out_path)])  # fmt: skip


class EspeakTTS:
    """espeak-ng: always available offline; Mandarin via the `cmn` voice. Host and guest differ in voice and pitch."""

    name = "espeak-ng"
    # (voice, pitch 0-99, words per minute)
    VOICES: dict[tuple[bool, str], tuple[str, int, int]] = {
        (False, "host"): ("en-us", 42, 165),
        (False, "guest"): ("en-us+f3", 58, 170),
        (True, "host"): ("cmn", 45, 170),
        (True, "guest"): ("cmn+f3", 60, 175),
    }

    @staticmethod
    def available() -> bool:
        return shutil.which("espeak-ng") is not None

    def synthesize(self, text: str, voice_role: str, locale: str, out_path: Path) -> Path:
        voice, pitch, speed = self.VOICES[(is_chinese(locale), "guest" if voice_role == "guest" else "host")]
        # Text goes through stdin so a line starting with "-" is never read as an option.
        _run(["espeak-ng", "-v", voice, "-p", str(pitch), "-s", str(speed), "-b", "1", "-w", str(out_path),
              "--stdin"], stdin=text)  # fmt: skip
        return out_path


class FliteTTS:
    """flite: English only, a second offline option where espeak-ng is missing."""

    name = "flite"
    VOICES = {"host": "rms", "guest": "slt"}

    @staticmethod
    def available() -> bool:
        return shutil.which("flite") is not None

    def synthesize(self, text: str, voice_role: str, locale: str, out_path: Path) -> Path:
        if is_chinese(locale):
            raise TTSError("flite has no Chinese voice")
        with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8", delete=False) as handle:
            handle.write(text)
            text_file = Path(handle.name)
        try:
            _run(["flite", "-voice", self.VOICES.get(voice_role, "rms"), "-f", str(text_file), "-o", str(out_path)])
        finally:
            text_file.unlink(missing_ok=True)
        return out_path


class EdgeTTS:
    """Microsoft Edge online voices through edge-tts (needs the network)."""

    name = "edge-tts"
    VOICES: dict[tuple[bool, str], str] = {
        (False, "host"): "en-US-GuyNeural",
        (False, "guest"): "en-US-JennyNeural",
        (True, "host"): "zh-CN-YunxiNeural",
        (True, "guest"): "zh-CN-XiaoxiaoNeural",
    }

    def synthesize(self, text: str, voice_role: str, locale: str, out_path: Path) -> Path:
        import edge_tts  # imported here: only the online path needs it

        voice = self.VOICES[(is_chinese(locale), "guest" if voice_role == "guest" else "host")]
        mp3 = out_path.with_suffix(".edge.mp3")
        try:
            # Each worker thread runs its own event loop: lines are synthesized in parallel threads.
            asyncio.run(asyncio.wait_for(edge_tts.Communicate(text, voice).save(str(mp3)), TTS_TIMEOUT_S))
            if not mp3.exists() or mp3.stat().st_size == 0:
                raise TTSError("edge-tts returned no audio")
            _to_wav(mp3, out_path)
        except TTSError:
            raise
        except Exception as exc:  # network errors, service errors: report them as a TTS failure
            raise TTSError(f"edge-tts failed: {type(exc).__name__}: {exc}") from exc
        finally:
            mp3.unlink(missing_ok=True)
        return out_path


def edge_reachable(timeout: float = 2.0) -> bool:
    """Can we open a TCP connection to the edge-tts service? Cached for a few minutes."""
    with _reachability_lock:
        cached = _reachability.get(EDGE_HOST)
        if cached and time.monotonic() - cached[0] < REACHABILITY_TTL_S:
            return cached[1]
    result: list[bool] = [False]

    def probe() -> None:
        try:
            with socket.create_connection((EDGE_HOST, 443), timeout=timeout):
                result[0] = True
        except OSError:
            result[0] = False

    # DNS lookups ignore the socket timeout, so the probe runs in a thread we stop waiting for.
    worker = threading.Thread(target=probe, daemon=True)
    worker.start()
    worker.join(timeout + 1.0)
    with _reachability_lock:
        _reachability[EDGE_HOST] = (time.monotonic(), result[0])
    return result[0]


_CJK_RUN = textre.compile(f"[{scripts.HAN}][{scripts.CJK_PUNCTUATION}{scripts.HAN}{scripts.FULLWIDTH}\\d.%]*")
# A run of at least three Latin words inside Chinese text is English speech ("LCOE" or "BYD" alone is not).
_LATIN_RUN = textre.compile(r"[A-Za-z][A-Za-z'’\-]*(?:[\s,;:$%.\d\-]+[A-Za-z][A-Za-z'’\-]*){2,}[.!?]?")


def speech_segments(text: str, locale: str) -> list[tuple[str, str]]:
    """Split a line into (text, locale) pieces so each is spoken by a voice of its own language.

    Sentences are assigned by their script (a Chinese sentence in an English episode gets the
    Chinese voice and vice versa); inside a sentence, Chinese runs in English text and runs of
    three or more English words in Chinese text are split out as well.
    """
    from research.report.document import is_chinese_text
    from research.report.sentences import split_marked_text  # the one sentence splitter

    en_locale, zh_locale = ("en-US", locale) if is_chinese(locale) else (locale, "zh-CN")
    pieces: list[tuple[str, str]] = []
    for sentence in split_marked_text(text, []) or []:
        body = sentence.text
        zh = is_chinese_text(body)
        pattern = _LATIN_RUN if zh else _CJK_RUN
        pos = 0
        for match in pattern.finditer(body):
            if match.start() > pos:
                pieces.append((body[pos : match.start()], zh_locale if zh else en_locale))
            pieces.append((match.group(0), en_locale if zh else zh_locale))
            pos = match.end()
        if pos < len(body):
            pieces.append((body[pos:], zh_locale if zh else en_locale))
    merged: list[tuple[str, str]] = []
    for piece, lang in pieces:
        if not textre.search(r"\w", piece):  # bare punctuation stays with what it follows
            if merged:
                merged[-1] = (merged[-1][0] + piece, merged[-1][1])
            continue
        if merged and merged[-1][1] == lang:
            joiner = "" if is_chinese(lang) else " "
            merged[-1] = (merged[-1][0].rstrip() + joiner + piece.strip(), lang)
        else:
            merged.append((piece.strip().lstrip(",;:，；："), lang))
    return merged or [(text, locale)]


def _configured_backend() -> str:
    try:
        from django.conf import settings

        return str(getattr(settings, "TTS_BACKEND", "") or "auto")
    except Exception:  # Django not configured (plain scripts): behave like "auto"
        return "auto"


def choose_backend(setting: str | None = None, locale: str = "en-US") -> TTSBackend:
    """Pick a backend: `auto` uses edge-tts when reachable, else espeak-ng, else flite (English only)."""
    choice = (setting or _configured_backend()).strip().lower()
    zh = is_chinese(locale)
    if choice in {"edge", "edge-tts"}:
        return EdgeTTS()
    if choice in {"espeak", "espeak-ng"}:
        if not EspeakTTS.available():
            raise TTSError("TTS_BACKEND=espeak but espeak-ng is not installed")
        return EspeakTTS()
    if choice == "flite":
        if zh:
            raise TTSError("TTS_BACKEND=flite cannot speak Chinese; use espeak or edge")
        if not FliteTTS.available():
            raise TTSError("TTS_BACKEND=flite but flite is not installed")
        return FliteTTS()
    if choice != "auto":
        raise TTSError(f"unknown TTS_BACKEND {choice!r} (auto, edge, espeak, flite)")
    if edge_reachable():
        return EdgeTTS()
    if EspeakTTS.available():
        return EspeakTTS()
    if not zh and FliteTTS.available():
        return FliteTTS()
    raise TTSError("no TTS backend: edge-tts unreachable and neither espeak-ng nor flite is installed")
