"""make test-fast's lanes: every test has one lane marker, and the fast lane refuses real services."""

from __future__ import annotations

import pytest

from tests.support.lanes import LANES, SlowPartStarted, refuse_slow_programs


@pytest.mark.parametrize("argv", [
    ["/usr/bin/redis-server", "--port", "6399"],
    ["/x/.venv/bin/python", "-m", "celery", "-A", "research", "worker"],
    ["daphne", "research.asgi:application"],
    ["/usr/lib/postgresql/17/bin/pg_ctl", "start"],
    "redis-server --port 6399",
])
def test_the_fast_lane_refuses_to_start_a_service(argv):
    with pytest.raises(SlowPartStarted, match="mark it @pytest.mark.integration"):
        refuse_slow_programs(argv)


@pytest.mark.parametrize("argv", [
    ["/x/.venv/bin/python", "-c", "import celery, kombu"],  # a script that names celery is not a worker
    ["pdftotext", "report.pdf", "-"],
    ["ffprobe", "-v", "error", "podcast.mp3"],
])
def test_the_fast_lane_lets_tools_run(argv):
    refuse_slow_programs(argv)


def test_every_collected_test_has_exactly_one_lane(request):
    items = request.session.items
    assert items
    for item in items:
        lanes = [lane for lane in LANES if item.get_closest_marker(lane) is not None]
        assert len(lanes) == 1, f"{item.nodeid}: {lanes}"
    assert request.node.get_closest_marker("unit") is not None
