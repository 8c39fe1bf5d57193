"""Prompt files for the LLM engine: `research/agents/prompts/<name>.<lang>.md`, and the short
instructions the nodes add to a conversation in `research/agents/prompts/fragments/<name>.<lang>.md`.

Prompts live in files so they can be read and tuned without touching code.
Each system prompt is static per agent and language (no per-job variables), so
vLLM's prefix cache can share it across the parallel steps of every job; the
variable parts (question, plan, step) travel in the user message after it.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from research import textre
from research.agents.text import is_chinese

PROMPT_DIR = Path(__file__).resolve().parent / "prompts"

# Only `{identifier}` is a placeholder. JSON examples such as `{"id": "s1"}` or
# `{ }` never match, so prompts can show JSON without escaping braces.
_PLACEHOLDER = textre.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class PromptNotFound(FileNotFoundError):
    """No prompt file exists for that name (in either language)."""


def prompt_language(locale: str) -> str:
    """Prompt language for a locale: Chinese prompts for zh-*, English for everything else."""
    return "zh" if is_chinese(locale or "") else "en"


FRAGMENT_DIR = PROMPT_DIR / "fragments"


@lru_cache(maxsize=128)
def _read(name: str, lang: str, folder: Path = PROMPT_DIR) -> str:
    path = folder / f"{name}.{lang}.md"
    if not path.is_file():
        fallback = folder / f"{name}.en.md"
        if not fallback.is_file():
            raise PromptNotFound(f"no prompt named {name!r} in {folder}")
        path = fallback
    return path.read_text(encoding="utf-8").strip() + "\n"


def render(template: str, **variables: object) -> str:
    """Substitute `{name}` for the given variables; unknown placeholders are left as written."""

    def _sub(match: textre.Match) -> str:
        key = match.group(1)
        return str(variables[key]) if key in variables else match.group(0)

    return _PLACEHOLDER.sub(_sub, template)


def load_prompt(name: str, locale: str, **variables: object) -> str:
    """The prompt `name` in the language for `locale`, with `{var}` placeholders filled in."""
    return render(_read(name, prompt_language(locale)), **variables)


def load_fragment(name: str, locale: str, **variables: object) -> str:
    """A short instruction or label (no trailing newline) in the language for `locale`."""
    return render(_read(name, prompt_language(locale), FRAGMENT_DIR), **variables).strip()


def available_prompts() -> list[str]:
    """Names that have at least one language variant (used by tests and docs)."""
    return sorted({p.name.split(".", 1)[0] for p in PROMPT_DIR.glob("*.*.md")})
