"""Output formats, one module each, registered once (see base.py and docs/architecture.md).

Importing this package imports every module in it, so a new format is one new module here.
"""

from __future__ import annotations

import importlib
import pkgutil

from research.render.formats.base import (
    FORMATS,
    OutputFile,
    OutputFormat,
    OutputKind,
    Rendered,
    RenderRequest,
    artifact_file,
    output_format,
    output_formats,
    output_kinds,
    previews_safely,
    register,
    rendered_kinds,
    unregister,
)

__all__ = [
    "FORMATS", "OutputFile", "OutputFormat", "OutputKind", "RenderRequest", "Rendered", "artifact_file",
    "output_format", "output_formats", "output_kinds", "previews_safely", "register", "rendered_kinds", "unregister",
]

for _module in pkgutil.iter_modules(__path__):
    if _module.name != "base":
        importlib.import_module(f"{__name__}.{_module.name}")
