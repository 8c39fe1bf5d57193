from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from research.agents.clock import today_section


def test_today_section_is_the_utc_date():
    assert today_section(datetime(2026, 11, 23, 10, 0, tzinfo=UTC)) == "## Today\n2026-11-23 (Monday, UTC)"
    # 01:00 in UTC+8 is still the previous day in UTC.
    late = datetime(2026, 11, 24, 1, 0, tzinfo=timezone(timedelta(hours=8)))
    assert today_section(late).startswith("## Today\n2026-11-23")
