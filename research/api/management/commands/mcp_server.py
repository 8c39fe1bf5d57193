"""`manage.py mcp_server --transport stdio --user NAME` or `--transport http --port 8765`."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser

from research.api.mcp_server import build_server, default_base_url


class Command(BaseCommand):
    help = "Serve Deep Research as an MCP server (tools: deep_research, get_job)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
        parser.add_argument("--user", default=None, help="stdio: the user the tools act as")
        parser.add_argument("--host", default="127.0.0.1", help="http: address to bind")
        parser.add_argument("--port", type=int, default=8765, help="http: port")
        parser.add_argument("--base-url", default=None,
                            help="the web app's address, for file links (default: SITE_URL or http://127.0.0.1:8000)")
        parser.add_argument("--no-infra", action="store_true",
                            help="do not start Redis or a worker when none answers (stdio)")

    def handle(self, *args: Any, **opts: Any) -> None:
        base_url = opts["base_url"] or default_base_url()
        if opts["transport"] == "stdio":
            if not opts["user"]:
                raise CommandError("--user NAME is required with --transport stdio")
            try:
                user = User.objects.get(username=opts["user"], is_active=True)
            except User.DoesNotExist:
                raise CommandError(f"no active user named {opts['user']!r}") from None
            server = build_server(user=user, base_url=base_url)
            if opts["no_infra"]:
                server.run("stdio")
                return
            from research.jobs.infra import infrastructure

            # stdout is the protocol channel: infrastructure messages must stay off it.
            with infrastructure(detach=False, echo=False):
                server.run("stdio")
            return
        if opts["user"]:
            raise CommandError("--user is for stdio; over HTTP each request's API token names the user")
        server = build_server(user=None, base_url=base_url, http=True)
        self.stderr.write(f"MCP (streamable HTTP) on http://{opts['host']}:{opts['port']}/mcp")
        server.run("streamable-http", host=opts["host"], port=opts["port"])
