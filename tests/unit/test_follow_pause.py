"""How often an incident reads the job it follows: often while the next attempt is likely to
come soon, then once a second (a storm's hundreds of followed jobs are read every poll)."""

import pytest

from respawn.activities.follow import pause


@pytest.mark.parametrize(("elapsed_s", "expected"), [(0.0, 0.25), (9.9, 0.25), (10.0, 1.0), (600.0, 1.0)])
def test_a_follow_reads_four_times_a_second_for_its_first_ten_seconds_then_once(elapsed_s, expected):
    assert pause(elapsed_s) == expected
