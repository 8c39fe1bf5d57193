"""Engines: the text-producing functions of the job graph (docs/architecture.md, "Parts").

`llm` drives a model; `offline` is extractive and needs none. Both are imported
lazily so that choosing one never loads (or breaks on) the other.
"""

from __future__ import annotations

from research.agents.types import Engine

ENGINE_NAMES: tuple[str, ...] = ("llm", "offline")


def get_engine(name: str) -> Engine:
    """The engine called `name` ("llm" or "offline"); ValueError for anything else."""
    if name == "llm":
        from research.agents.engines.llm import LLMEngine

        return LLMEngine()
    if name == "offline":
        from research.agents.engines.offline import OfflineEngine

        return OfflineEngine()
    raise ValueError(f"unknown engine {name!r} (choose from {', '.join(ENGINE_NAMES)})")
