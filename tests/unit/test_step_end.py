"""The settle of an incident whose job runs under its launcher (activities/in_job.py
`await_step_end`): it ends as soon as the launcher reports the step ended, else after the
window; the channel is the job's, so nothing wrong with it is an error."""

import time
from types import SimpleNamespace

from temporalio.testing import ActivityEnvironment

from respawn.activities.in_job import InJobActivities
from respawn.launcher import channel
from respawn.launcher.channel import Status, StepState
from respawn.wire.incident import StepEndRequest


async def settle(ch, within_s: float) -> tuple[bool, float]:
    activities = InJobActivities(SimpleNamespace(config=SimpleNamespace(launcher_channel=lambda _job: ch)))
    began = time.monotonic()
    request = StepEndRequest(cluster="c", job_id=7, within_s=within_s)
    ended = await ActivityEnvironment().run(activities.await_step_end, request)
    return ended, time.monotonic() - began


def status(ch, state: StepState) -> None:
    channel.write_status(
        ch, Status(job_id=7, state=state, step_nodes=["n1"], spares=[], excluded=[], updated_at=channel.now())
    )


async def test_a_step_that_ended_ends_the_settle_at_once_and_one_that_runs_waits_the_window(tmp_path):
    ch = tmp_path / ".respawn-7"
    channel.create_channel(ch)
    status(ch, StepState.RUNNING)
    assert (await settle(ch, 0.3))[0] is False
    status(ch, StepState.FAILED)
    ended, took = await settle(ch, 30)
    assert ended and took < 5


async def test_no_channel_or_a_planted_one_is_a_full_settle_not_an_error(tmp_path):
    assert (await settle(tmp_path / "none", 0.2))[0] is False
    (tmp_path / "planted").symlink_to(tmp_path)
    assert (await settle(tmp_path / "planted", 0.2))[0] is False
