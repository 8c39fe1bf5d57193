"""What a caller sees of a streamed reply: the visible text, without hidden sections, once.

``VisibleFilter`` removes ``<think>`` and ``<tool_call>`` sections (and unwraps ``<answer>``) from
text that arrives in arbitrary chunks; ``DeltaSink`` feeds the caller's ``on_delta`` across retried
attempts without repeating what it already received.
"""

from __future__ import annotations

from collections.abc import Callable


class VisibleFilter:
    """Incrementally removes hidden sections (think, text tool calls) from streamed text.

    Tags may arrive split across chunks, so a possible partial tag at the end of the
    buffer is held back. With ``holdback`` > 0 the start of the stream is held until
    it is clear whether a leaked ``…</think>`` (thinking without an opening tag) is in
    progress: either ``</think>`` shows up, ``<think>`` opens, the server reports
    reasoning separately, or ``holdback`` characters pass without any of these.
    """

    def __init__(self, *, hide: tuple[str, ...], unwrap: tuple[str, ...], holdback: int) -> None:
        self._hide = hide
        self._markers = [f"<{t}>" for t in (*hide, *unwrap)] + [f"</{t}>" for t in (*hide, *unwrap)]
        self._buf = ""
        self._inside = ""
        self._released = holdback <= 0
        self._holdback = holdback
        self._started = False

    def release(self) -> None:
        self._released = True

    def feed(self, text: str) -> str:
        self._buf += text
        if not self._released:
            end = self._buf.find("</think>")
            if self._buf.lstrip().startswith("<think>"):
                self._released = True
            elif end != -1 and "<think>" not in self._buf[:end]:
                self._buf = self._buf[end + len("</think>") :]
                self._released = True
            elif len(self._buf) >= self._holdback:
                self._released = True
            else:
                return ""
        return self._drain(final=False)

    def finish(self) -> str:
        self._released = True
        return self._drain(final=True)

    @staticmethod
    def _partial_suffix(buf: str, markers: list[str]) -> int:
        best = 0
        for m in markers:
            for k in range(min(len(m) - 1, len(buf)), best, -1):
                if buf.endswith(m[:k]):
                    best = k
                    break
        return best

    def _drain(self, *, final: bool) -> str:
        out: list[str] = []
        while self._buf:
            if self._inside:
                close = f"</{self._inside}>"
                i = self._buf.find(close)
                if i == -1:
                    keep = 0 if final else self._partial_suffix(self._buf, [close])
                    self._buf = self._buf[len(self._buf) - keep :] if keep else ""
                    break
                self._buf = self._buf[i + len(close) :]
                self._inside = ""
                continue
            hits = [(self._buf.find(m), m) for m in self._markers]
            hits = [(i, m) for i, m in hits if i != -1]
            if not hits:
                keep = 0 if final else self._partial_suffix(self._buf, self._markers)
                out.append(self._buf[: len(self._buf) - keep])
                self._buf = self._buf[len(self._buf) - keep :]
                break
            i, marker = min(hits)
            out.append(self._buf[:i])
            self._buf = self._buf[i + len(marker) :]
            name = marker.strip("</>")
            if not marker.startswith("</") and name in self._hide:
                self._inside = name
        text = "".join(out)
        if not self._started:
            text = text.lstrip()
            self._started = bool(text)
        return text


class DeltaSink:
    """Feeds visible text to the caller's ``on_delta`` across retried attempts.

    A retried stream starts over; the characters the caller already received are
    skipped so the caller sees one continuous text (the final ChatResult is always
    the complete, correct one even if a retry produced slightly different words).
    """

    def __init__(self, on_delta: Callable[[str], None], make_filter: Callable[[], VisibleFilter]) -> None:
        self._on_delta = on_delta
        self._make_filter = make_filter
        self._filter = make_filter()
        self._emitted = 0
        self._seen = 0
        self._skip = 0

    def begin_attempt(self) -> None:
        self._filter = self._make_filter()
        self._skip = self._emitted
        self._seen = 0

    def content(self, text: str) -> None:
        self._emit(self._filter.feed(text))

    def reasoning_seen(self) -> None:
        self._filter.release()

    def end(self) -> None:
        self._emit(self._filter.finish())

    def _emit(self, visible: str) -> None:
        if not visible:
            return
        start = self._seen
        self._seen += len(visible)
        if self._seen <= self._skip:
            return
        if start < self._skip:
            visible = visible[self._skip - start :]
        self._emitted = self._seen
        self._on_delta(visible)
