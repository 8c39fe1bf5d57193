"""Command-line errors for people: one line on stderr, or with --json one JSON object on the last line.

`research` and `job` share this (docs/architecture.md, "CLI"). Every failure, argparse's own included,
comes out the same way, with a non-zero exit code and, where it helps, the next thing to try.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, handle_default_options
from django.db import connections


class PeopleCommand(BaseCommand):
    """A command whose every outcome is one line: a plain error on stderr, or the JSON error object."""

    def run_from_argv(self, argv: list[str]) -> None:
        self._called_from_command_line = True
        as_json = "--json" in argv[2:]
        parser = self.create_parser(argv[0], argv[1])
        # argparse would print its usage block and exit 2; raised instead, it is reported like any other error.
        parser.called_from_command_line = False  # type: ignore[attr-defined]
        try:
            options = parser.parse_args(argv[2:])
            cmd_options = vars(options)
            args = cmd_options.pop("args", ())
            handle_default_options(options)
            self.execute(*args, **cmd_options)
        except CommandError as exc:
            self.fail(_one_line(str(exc).removeprefix("Error: ")), as_json=as_json, code=exc.returncode or 1)
        except KeyboardInterrupt:
            self.fail("interrupted", as_json=as_json, code=130)
        except Exception as exc:
            if "--traceback" in argv:
                raise
            self.fail(f"{type(exc).__name__}: {_one_line(str(exc))} (run again with --traceback for details)",
                      as_json=as_json, code=1)
        finally:
            connections.close_all()

    def fail(self, message: str, *, as_json: bool, code: int = 1, **extra: Any) -> None:
        """Report an error and exit non-zero: one line on stderr; with --json also {"error": ...} as stdout's
        last line (what a script reads; stderr is what a person reads)."""
        sys.stderr.write(f"error: {message}\n")
        if as_json:
            sys.stdout.write(json.dumps({**extra, "error": message}, ensure_ascii=False) + "\n")
        sys.stdout.flush()
        sys.exit(code)


MAX_LINE = 400


def _one_line(text: str) -> str:
    """The text's lines joined, cut at MAX_LINE characters with a mark that says so."""
    line = " ".join(part.strip() for part in text.splitlines() if part.strip())
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 1].rstrip() + "…"
