"""The output-format registry: what an output is (its files, labels, renderer, previews), declared once.

Format modules translate their labels with `translated` (gettext_lazy) from here, so this is the
registry's one Django import (docs/architecture.md, "Imports Django?").

Every list of output kinds in the app reads this registry: the job options' check, the new-job form, the
CLI's `--outputs` and `render --formats`, the API schema, the job page's downloads and timeline labels,
and the render unit's dispatch. A format is one module in this package that calls `register()`;
`research/render/formats/__init__.py` imports every module here, so adding one needs no other edit
(docs/architecture.md, "Adding an output format").
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from django.utils.translation import gettext_lazy as translated  # noqa: F401  the labels of the format modules
from pydantic import AfterValidator, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

if TYPE_CHECKING:
    from django.utils.functional import Promise

    from research.agents.types import AgentContext, Engine

    StrOrPromise = str | Promise  # a plain or lazily translated label (gettext_lazy)

logger = logging.getLogger(__name__)

@dataclass(frozen=True)
class OutputFile:
    """One file an output writes: its artifact kind, its name's suffix, its MIME type."""

    kind: str  # Artifact.kind: "pdf", or the podcast's "transcript" and "vtt"
    suffix: str  # ".pdf"; the file is <basename><suffix>
    mime: str
    inline: bool = False  # the job page plays or shows it in place (an <audio> source) instead of downloading


@dataclass
class RenderRequest:
    """What a renderer gets: the report and where to write; the job's engine when a job renders it."""

    markdown: str
    out_dir: Path
    locale: str = "en-US"
    title: str | None = None
    figures_dir: Path | None = None
    stem: str | None = None  # file names' stem (the CLI: the report's); None: the format's own basename
    engine: Engine | None = None  # a job's engine writes the slide outline / podcast script; None: derived
    ctx: AgentContext | None = None
    options: dict[str, Any] = field(default_factory=dict)  # per-format CLI options (the podcast's `tts`)
    say: Callable[[str], None] = lambda line: None  # one line of progress for the CLI (the podcast's length)

    def path(self, fmt: OutputFormat, file: OutputFile) -> Path:
        return self.out_dir / f"{self.stem or fmt.basename}{file.suffix}"


@dataclass
class Rendered:
    """What one render made: files in the format's order, facts the job page shows (Artifact.meta)."""

    paths: list[Path]  # one per OutputFormat.files, same order
    meta: dict[str, Any] = field(default_factory=dict)  # stored with the format's first file


Renderer = Callable[[RenderRequest], Rendered]
Previewer = Callable[[Rendered, Path], list[Path]]  # (what was made, out dir) -> PNG thumbnails in order


@dataclass(frozen=True)
class OutputFormat:
    """One output kind. `render` None: the report itself (Markdown), written by the report stage."""

    kind: str  # the option value: "pdf"
    label: StrOrPromise  # the form's choice and the downloads' heading ("Slides (PPTX)"), translated lazily
    short_label: StrOrPromise  # the timeline's noun ("slides": "Making the slides")
    basename: str  # a job's file names: "slides" -> slides.pptx
    files: tuple[OutputFile, ...]
    render: Renderer | None = None
    preview: Previewer | None = None  # thumbnails for the job page, made with the render
    preview_kind: str = ""  # their stored names' prefix: previews/<preview_kind>-01.png
    order: int = 100  # position in forms and lists (Markdown first)

    def file_name(self, file: OutputFile) -> str:
        return f"{self.basename}{file.suffix}"


FORMATS: dict[str, OutputFormat] = {}


def register(fmt: OutputFormat) -> OutputFormat:
    """Add (or replace, by kind) an output format; returns it so a module can keep a name for it."""
    FORMATS[fmt.kind] = fmt
    return fmt


def unregister(kind: str) -> None:
    FORMATS.pop(kind, None)


def output_formats() -> list[OutputFormat]:
    """Every registered format, in display order."""
    return sorted(FORMATS.values(), key=lambda f: (f.order, f.kind))


def output_format(kind: str) -> OutputFormat:
    """The format `kind`; KeyError names the ones there are."""
    try:
        return FORMATS[kind]
    except KeyError:
        raise KeyError(f"unknown output {kind!r}; choose from {', '.join(output_kinds())}") from None


def output_kinds() -> tuple[str, ...]:
    """All output kinds a job may ask for ("md" first)."""
    return tuple(f.kind for f in output_formats())


def rendered_kinds() -> tuple[str, ...]:
    """The kinds a render unit makes (all but the report itself)."""
    return tuple(f.kind for f in output_formats() if f.render is not None)


def artifact_file(artifact_kind: str) -> OutputFile | None:
    """The declaration of an artifact kind's file (its MIME type, whether it is shown inline)."""
    for fmt in FORMATS.values():
        for file in fmt.files:
            if file.kind == artifact_kind:
                return file
    return None


def previews_safely(fmt: OutputFormat, made: Rendered, out_dir: Path, *, what: str) -> list[Path]:
    """The format's thumbnails; none (logged) when the tool that makes them fails: the output stands."""
    from research.render.preview import PreviewError

    if fmt.preview is None:
        return []
    try:
        return fmt.preview(made, out_dir)
    except (PreviewError, OSError) as exc:
        logger.warning("no %s previews for %s: %s", fmt.kind, what, exc)
        return []


# --- in request schemas (the API, the MCP tool) ------------------------------------------------


def _known_output(value: str) -> str:
    if value not in FORMATS:
        raise ValueError(f"unknown output {value!r}; choose from {', '.join(output_kinds())}")
    return value


class _OutputKindsEnum:
    """The JSON schema of an output kind: the registered kinds, read when the schema is made."""

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return {"type": "string", "enum": list(output_kinds())}


OutputKind = Annotated[str, AfterValidator(_known_output), _OutputKindsEnum()]
