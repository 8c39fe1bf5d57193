"""Regular expressions on a linear-time engine (RE2): the only regex module `research/` may use.

Python's `re` backtracks: one pattern with overlapping quantifiers can take minutes on a few
hundred thousand characters of a report edit or an upload (docs/operations.md, "Linear-time text
handling"). RE2 (google-re2) runs in time linear in the text for any pattern it accepts, and it
accepts no lookaround and no backreference, so the class of bug cannot be written here.
`tests/security/test_regex_lint.py` fails on any use of `re` outside its allow-list.

How to use it (the same names as `re`, patterns written in Python's syntax)::

    from research import textre

    _WORD = textre.compile(r"\\w+", textre.I)   # module level: checked when the module is imported
    textre.sub(r"\\s+", " ", text)              # one-off: compiled once and cached
    def repl(m: textre.Match) -> str: ...       # type of a match (also textre.Pattern)

What is translated for you: `\\w \\W \\d \\D \\s \\S` keep Python's Unicode meaning (RE2's are
ASCII), `\\Z` becomes `\\z`, `\\uXXXX` becomes `\\x{XXXX}`, and the flags `I`, `M`, `S` become
inline flags (`A` keeps RE2's ASCII classes). What is NOT accepted (compile raises
`textre.error`, at import time for a module-level pattern): lookahead/lookbehind `(?=` `(?!`
`(?<=` `(?<!`, backreferences `\\1` `(?P=n)`, `\\W`/`\\S` inside a `[...]` class, `re.X`, and
repetition counts over 1000. Rewrite those: match the context as a group and put it back in the
replacement, check the neighbouring character in Python, use `compile_guarded` (a callback
accepts or refuses each match by the text around it), or use string methods.

Converting a module that used `re`: `import re` -> `from research import textre`; `re.compile`,
`re.sub`, … and `re.I`/`re.M`/`re.S` -> `textre.…`; `re.Match[str]` -> `textre.Match`,
`re.Pattern[str]` -> `textre.Pattern`. Importing the module then either works or names the pattern
RE2 refuses. RE2 through Python costs ~2 µs a match (`re`: ~0.2 µs): where a loop matches once per
character or word of a long text, match runs instead, or use `str` methods.

Differences that stay: `\\b` is ASCII-only (a boundary between a Latin letter and a Chinese one
counts); `$` without `M` matches only at the very end (Python's also before a final newline);
matching is leftmost-first like Python's, but a `|` whose first branch needs a long look ahead
may make `finditer` scan again from each match (tests/security/test_redos.py sweeps every
registered pattern at two sizes for that).

Each compiled pattern is recorded in `REGISTRY` (pattern, flags, where) for that sweep.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, cast

import re2  # type: ignore[import-untyped]
from re2 import _re2  # type: ignore[import-untyped]

error = re2.error

I = IGNORECASE = 2  # noqa: E741  (the stdlib's names and values, so call sites read the same)
M = MULTILINE = 8
S = DOTALL = 16
A = ASCII = 256
_KNOWN_FLAGS = I | M | S | A

# Python's Unicode meaning of the shorthand classes, as RE2 class items.
_SPACE = r"\t-\r\x1c-\x1f\x85\p{Z}"  # str.isspace(): \t\n\v\f\r, the separators, the Z categories
_WORD = r"\p{L}\p{N}_"  # str.isalnum() or "_"
_DIGIT = r"\p{Nd}"
_OUTSIDE = {
    "w": f"[{_WORD}]",
    "W": f"[^{_WORD}]",
    "d": _DIGIT,
    "D": r"\P{Nd}",
    "s": f"[{_SPACE}]",
    "S": f"[^{_SPACE}]",
}
_INSIDE = {"w": _WORD, "d": _DIGIT, "D": r"\P{Nd}", "s": _SPACE}


class Match(Protocol):
    def group(self, *groups: int | str) -> Any: ...
    def groups(self, default: Any = None) -> tuple[Any, ...]: ...
    def groupdict(self, default: Any = None) -> dict[str, Any]: ...
    def start(self, group: int = 0) -> int: ...
    def end(self, group: int = 0) -> int: ...
    def span(self, group: int = 0) -> tuple[int, int]: ...
    def expand(self, template: str) -> str: ...
    def __getitem__(self, group: int | str) -> Any: ...
    @property
    def string(self) -> str: ...
    @property
    def lastindex(self) -> int | None: ...


Repl = str | Callable[[Match], str]


class Pattern(Protocol):
    @property
    def pattern(self) -> str: ...
    @property
    def groups(self) -> int: ...
    def search(self, text: str, pos: int | None = None, endpos: int | None = None) -> Match | None: ...
    def match(self, text: str, pos: int | None = None, endpos: int | None = None) -> Match | None: ...
    def fullmatch(self, text: str, pos: int | None = None, endpos: int | None = None) -> Match | None: ...
    def finditer(self, text: str, pos: int | None = None, endpos: int | None = None) -> Iterator[Match]: ...
    def findall(self, text: str, pos: int | None = None, endpos: int | None = None) -> list[Any]: ...
    def split(self, text: str, maxsplit: int = 0) -> list[str]: ...
    def sub(self, repl: Repl, text: str, count: int = 0) -> str: ...
    def subn(self, repl: Repl, text: str, count: int = 0) -> tuple[str, int]: ...


@dataclass(frozen=True)
class Registered:
    source: str  # as written, Python syntax
    flags: int
    translated: str  # what RE2 compiled
    where: str  # file:line of the first compile


REGISTRY: dict[tuple[str, int], Registered] = {}


def translate(pattern: str, flags: int = 0) -> str:
    """Python regex syntax -> RE2 syntax with the same meaning (see the module docstring)."""
    if flags & ~_KNOWN_FLAGS:
        raise error(f"unsupported flags {flags:#x} (only I, M, S, A): {pattern!r}")
    unicode = not flags & A
    out: list[str] = []
    in_class = class_start = False
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            e = pattern[i + 1]
            if e == "u" or e == "U":
                width = 4 if e == "u" else 8
                out.append("\\x{" + pattern[i + 2 : i + 2 + width] + "}")
                i += 2 + width
                continue
            if e == "Z" and not in_class:
                out.append(r"\z")
            elif e.isdigit() and e != "0" and not in_class:
                raise error(f"backreference \\{e} (RE2 has none): {pattern!r}")
            elif unicode and e in "wWdDsS":
                if not in_class:
                    out.append(_OUTSIDE[e])
                elif e in _INSIDE:
                    out.append(_INSIDE[e])
                else:
                    raise error(f"\\{e} in [...] cannot keep its Unicode meaning in RE2; spell it out: {pattern!r}")
            else:
                out.append(pattern[i : i + 2])
            i += 2
            class_start = False
            continue
        if in_class:
            if c == "]" and not class_start:
                in_class = False
            elif c == "[" and pattern.startswith("[:", i):
                pass  # POSIX class such as [:alpha:] (ASCII in both engines)
            class_start = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            class_start = True  # a "]" right after "[" or "[^" is a literal
            continue
        out.append(c)
        i += 1
    inline = "".join(letter for bit, letter in ((I, "i"), (M, "m"), (S, "s")) if flags & bit)
    body = "".join(out)
    return f"(?{inline}){body}" if inline else body


def _caller() -> str:
    frame = sys._getframe(3)
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


class _Encoded:
    """A text as UTF-8 for RE2, with a remembered (char, byte) offset pair.

    google-re2's own wrapper encodes the whole text again on every `search(text, pos)`, so a
    loop of such calls over one line is quadratic. Here the last text is kept (one per thread)
    and offsets are converted from the last point reached, so a forward scan costs O(n) in all.
    """

    __slots__ = ("text", "data", "ascii", "char", "byte")

    def __init__(self, text: str) -> None:
        self.text = text
        self.data = text.encode("utf-8", "surrogatepass")
        self.ascii = len(self.data) == len(text)
        self.char = self.byte = 0

    def to_byte(self, char: int) -> int:
        if self.ascii:
            return char
        if char < self.char:
            if self.char - char <= _NEAR:  # a look just behind (a callback checking the text before a match)
                while self.char > char:
                    self.byte -= 1
                    while self.data[self.byte] & 0xC0 == 0x80:  # UTF-8 continuation byte
                        self.byte -= 1
                    self.char -= 1
                return self.byte
            self.char = self.byte = 0
        self.byte += _re2.CharLenToBytes(self.data, self.byte, char - self.char)
        self.char = char
        return self.byte

    def to_char(self, byte: int) -> int:
        if self.ascii:
            return byte
        if byte < self.byte:
            if self.byte - byte <= 4 * _NEAR:
                self.char -= sum(1 for b in self.data[byte : self.byte] if b & 0xC0 != 0x80)
                self.byte = byte
                return self.char
            self.char = self.byte = 0
        self.char += _re2.BytesToCharLen(self.data, self.byte, byte)
        self.byte = byte
        return self.char


_NEAR = 64  # characters: a step back this short is walked, a longer one starts again from 0
_local = threading.local()


def _encoded(text: str) -> _Encoded:
    cached: _Encoded | None = getattr(_local, "encoded", None)
    if cached is None or cached.text is not text:
        cached = _Encoded(text)
        _local.encoded = cached
    return cached


_NO_SPAN = (-1, -1)
_UNANCHORED = _re2.RE2.Anchor.UNANCHORED
_ANCHOR_START = _re2.RE2.Anchor.ANCHOR_START
_ANCHOR_BOTH = _re2.RE2.Anchor.ANCHOR_BOTH


class _Match:
    __slots__ = ("_pattern", "string", "_spans", "pos", "endpos")

    def __init__(self, pattern: _Pattern, text: str, spans: list[tuple[int, int]], pos: int, endpos: int) -> None:
        self._pattern = pattern
        self.string = text
        self._spans = spans
        self.pos = pos
        self.endpos = endpos

    def _index(self, group: int | str) -> int:
        if isinstance(group, str):
            if group not in self._pattern.groupindex:
                raise IndexError("no such group")
            return self._pattern.groupindex[group]
        if not 0 <= group < len(self._spans):
            raise IndexError("no such group")
        return group

    def __getitem__(self, group: int | str) -> str | None:
        start, end = self._spans[self._index(group)]
        return None if start == -1 else self.string[start:end]

    def group(self, *groups: int | str) -> Any:
        if len(groups) <= 1:
            return self[groups[0] if groups else 0]
        return tuple(self[g] for g in groups)

    def groups(self, default: Any = None) -> tuple[Any, ...]:
        return tuple(default if (v := self[g]) is None else v for g in range(1, len(self._spans)))

    def groupdict(self, default: Any = None) -> dict[str, Any]:
        return {name: default if (v := self[i]) is None else v for name, i in self._pattern.groupindex.items()}

    def start(self, group: int | str = 0) -> int:
        return self._spans[self._index(group)][0]

    def end(self, group: int | str = 0) -> int:
        return self._spans[self._index(group)][1]

    def span(self, group: int | str = 0) -> tuple[int, int]:
        return self._spans[self._index(group)]

    @property
    def lastindex(self) -> int | None:
        best, end = None, -1
        for g in range(1, len(self._spans)):
            if self._spans[g][1] > end:
                best, end = g, self._spans[g][1]
        return best

    def expand(self, template: str) -> str:
        out: list[str] = []
        for literal, group in _template(template):
            out.append(literal)
            if group is not None:
                out.append(self[group] or "")
        return "".join(out)

    def __repr__(self) -> str:
        return f"<textre.Match span={self.span()} match={self.group()!r}>"


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a", "b": "\b", "\\": "\\"}


@functools.lru_cache(maxsize=256)
def _template(template: str) -> tuple[tuple[str, int | str | None], ...]:
    """A replacement template (Python's syntax: \\1, \\g<name>, \\n) as (literal, group) pairs."""
    parts: list[tuple[str, int | str | None]] = []
    literal: list[str] = []
    i = 0
    while i < len(template):
        c = template[i]
        if c != "\\" or i + 1 == len(template):
            literal.append(c)
            i += 1
            continue
        e = template[i + 1]
        group: int | str | None = None
        if e.isdigit():
            j = i + 2 if not (i + 2 < len(template) and template[i + 2].isdigit()) else i + 3
            group = int(template[i + 1 : j])
            i = j
        elif e == "g" and template.startswith("<", i + 2) and ">" in template[i + 3 :]:
            j = template.index(">", i + 3)
            name = template[i + 3 : j]
            group = int(name) if name.isdigit() else name
            i = j + 1
        elif e in _ESCAPES:
            literal.append(_ESCAPES[e])
            i += 2
            continue
        elif e.isascii() and e.isalpha():
            raise error(f"bad escape \\{e} in replacement {template!r}")
        else:
            literal.append(c + e)  # as in re: other escapes are kept as written
            i += 2
            continue
        parts.append(("".join(literal), group))
        literal = []
    parts.append(("".join(literal), None))
    return tuple(parts)


class _Pattern:
    """A compiled RE2 pattern with the `re.Pattern` methods the project uses."""

    __slots__ = ("pattern", "flags", "groups", "groupindex", "_re")

    def __init__(self, source: str, flags: int, compiled: Any) -> None:
        self.pattern = source
        self.flags = flags
        self._re = compiled._regexp
        self.groups: int = compiled.groups
        self.groupindex: dict[str, int] = dict(compiled.groupindex)

    def __repr__(self) -> str:
        return f"textre.compile({self.pattern!r}, {self.flags})"

    def _spans(self, anchor: Any, text: str, pos: int, endpos: int) -> Iterator[list[tuple[int, int]]]:
        """Each match's spans (group 0 first) in characters; one RE2 call per match."""
        enc = _encoded(text)
        data = enc.data
        bpos = enc.to_byte(pos)
        bend = len(data) if endpos == len(text) else bpos + _re2.CharLenToBytes(data, bpos, endpos - pos)
        run = self._re.Match
        ascii_only = enc.ascii
        to_chars = _re2.BytesToCharLen
        while True:
            spans = run(anchor, data, bpos, bend)
            start, end = spans[0]
            if start == -1:
                return
            if ascii_only:
                yield spans
            elif len(spans) == 1:  # the common case, kept to two conversions without method calls
                if start < enc.byte:
                    first = enc.to_char(start)
                else:
                    first = enc.char + to_chars(data, enc.byte, start)
                last = first + to_chars(data, start, end)
                enc.char, enc.byte = last, end
                yield [(first, last)]
            else:
                offsets = sorted({o for span in spans for o in span if o != -1})
                chars = {o: enc.to_char(o) for o in offsets}
                yield [span if span == _NO_SPAN else (chars[span[0]], chars[span[1]]) for span in spans]
            if anchor != _UNANCHORED or bpos == bend:
                return
            if end == bpos:  # an empty match: step one character on
                bpos += 1 if ascii_only else _re2.CharLenToBytes(data, bpos, 1)
            else:
                bpos = end

    def _iter(self, anchor: Any, text: str, pos: int | None, endpos: int | None) -> Iterator[_Match]:
        n = len(text)
        pos = 0 if pos is None else max(0, min(pos, n))
        endpos = n if endpos is None else max(0, min(endpos, n))
        if pos > endpos:
            return iter(())
        return (_Match(self, text, spans, pos, endpos) for spans in self._spans(anchor, text, pos, endpos))

    def search(self, text: str, pos: int | None = None, endpos: int | None = None) -> _Match | None:
        return next(self._iter(_UNANCHORED, text, pos, endpos), None)

    def match(self, text: str, pos: int | None = None, endpos: int | None = None) -> _Match | None:
        return next(self._iter(_ANCHOR_START, text, pos, endpos), None)

    def fullmatch(self, text: str, pos: int | None = None, endpos: int | None = None) -> _Match | None:
        return next(self._iter(_ANCHOR_BOTH, text, pos, endpos), None)

    def finditer(self, text: str, pos: int | None = None, endpos: int | None = None) -> Iterator[_Match]:
        return self._iter(_UNANCHORED, text, pos, endpos)

    def findall(self, text: str, pos: int | None = None, endpos: int | None = None) -> list[Any]:
        if pos is None and endpos is None and type(self) is _Pattern:  # no match objects: slices only
            spans = self._spans(_UNANCHORED, text, 0, len(text))
            if self.groups == 0:
                return [text[s[0][0] : s[0][1]] for s in spans]
            if self.groups == 1:
                return [text[s[1][0] : s[1][1]] if s[1][0] != -1 else "" for s in spans]
            return [tuple(text[a:b] if a != -1 else "" for a, b in s[1:]) for s in spans]
        if self.groups == 0:
            return [m.group() for m in self._iter(_UNANCHORED, text, pos, endpos)]
        if self.groups == 1:
            return [m.group(1) or "" for m in self._iter(_UNANCHORED, text, pos, endpos)]
        return [m.groups("") for m in self._iter(_UNANCHORED, text, pos, endpos)]

    def split(self, text: str, maxsplit: int = 0) -> list[str]:
        pieces: list[str] = []
        last = 0
        for count, m in enumerate(self._iter(_UNANCHORED, text, None, None), start=1):
            pieces.append(text[last : m.start()])
            pieces.extend(m.group(g) for g in range(1, self.groups + 1))
            last = m.end()
            if count == maxsplit:
                break
        pieces.append(text[last:])
        return pieces

    def subn(self, repl: Repl, text: str, count: int = 0) -> tuple[str, int]:
        if callable(repl):
            func = repl
        elif "\\" not in repl:
            func = lambda m: repl  # noqa: E731
        else:
            func = lambda m: m.expand(repl)  # noqa: E731
        pieces: list[str] = []
        last = done = 0
        for m in self._iter(_UNANCHORED, text, None, None):
            pieces.append(text[last : m.start()])
            pieces.append(func(m))
            last = m.end()
            done += 1
            if done == count:
                break
        if not done:
            return text, 0
        pieces.append(text[last:])
        return "".join(pieces), done

    def sub(self, repl: Repl, text: str, count: int = 0) -> str:
        return self.subn(repl, text, count)[0]


class _Guarded(_Pattern):
    __slots__ = ("_accept",)

    def __init__(self, source: str, flags: int, compiled: Any, accept: Callable[[Match], bool]) -> None:
        super().__init__(source, flags, compiled)
        self._accept = accept

    def _iter(self, anchor: Any, text: str, pos: int | None, endpos: int | None) -> Iterator[_Match]:
        return (m for m in super()._iter(anchor, text, pos, endpos) if self._accept(m))


def compile_guarded(pattern: str, flags: int = 0, *, accept: Callable[[Match], bool]) -> Pattern:
    """A pattern whose matches must also pass `accept` (the text around `m.start()`/`m.end()`).

    For what was a one-character lookaround: `(?<![A-Za-z])\\[1\\](?!\\()` becomes
    `compile_guarded(r"\\[1\\]", accept=lambda m: ...)`. The search goes on after a refused
    match, not inside it (that keeps it linear), so this equals the lookaround only when no
    match could start inside a refused one: say why at the call.
    """
    _compiled(pattern, flags)  # checks and registers the pattern
    compiled = re2.compile(translate(pattern, flags), _options())
    return cast(Pattern, _Guarded(pattern, flags, compiled, accept))


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # the error is raised; RE2 need not also print it
    return options


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str, flags: int) -> Pattern:
    translated = translate(pattern, flags)
    try:
        compiled = re2.compile(translated, _options())
    except re2.error as exc:
        raise error(f"{exc} in {pattern!r} (RE2: {translated!r}); see research/textre.py") from None
    REGISTRY.setdefault((pattern, flags), Registered(pattern, flags, translated, _caller()))
    return cast(Pattern, _Pattern(pattern, flags, compiled))


def compile(pattern: str, flags: int = 0) -> Pattern:
    return _compiled(pattern, flags)


def search(pattern: str, text: str, flags: int = 0) -> Match | None:
    return _compiled(pattern, flags).search(text)


def match(pattern: str, text: str, flags: int = 0) -> Match | None:
    return _compiled(pattern, flags).match(text)


def fullmatch(pattern: str, text: str, flags: int = 0) -> Match | None:
    return _compiled(pattern, flags).fullmatch(text)


def finditer(pattern: str, text: str, flags: int = 0) -> Iterator[Match]:
    return _compiled(pattern, flags).finditer(text)


def findall(pattern: str, text: str, flags: int = 0) -> list[Any]:
    return _compiled(pattern, flags).findall(text)


def split(pattern: str, text: str, maxsplit: int = 0, flags: int = 0) -> list[str]:
    return _compiled(pattern, flags).split(text, maxsplit)


def sub(pattern: str, repl: Repl, text: str, count: int = 0, flags: int = 0) -> str:
    return _compiled(pattern, flags).sub(repl, text, count)


def subn(pattern: str, repl: Repl, text: str, count: int = 0, flags: int = 0) -> tuple[str, int]:
    return _compiled(pattern, flags).subn(repl, text, count)


def escape(text: str) -> str:
    """Quote every character RE2 would read as syntax (a literal for compile/sub)."""
    return "".join("\\" + c if c.isascii() and not c.isalnum() and c.isprintable() and c != " " else c for c in text)
