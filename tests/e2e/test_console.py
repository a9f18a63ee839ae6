"""The Recovery Console in a real browser against the local stack.

Debian's chromium, driven by Playwright, watches the page while a real DDP job
gets a GPU Xid on node2: without a reload, the page shows the job's timeline
with node2 excluded and the incident linked to its page in the Temporal Web
UI; an override of the closed incident goes down the CLI's path and the page
shows the incident's refusal. Then the cost page draws what that incident cost.
A screenshot of each is kept as a test artifact.
"""

import os
import re
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Page, async_playwright, expect

from respawn.sandbox.labconfig import SERVER_PORT, WRITE_TOKEN
from respawn.sandbox.workload.faults import FaultKind, inject
from respawn.sandbox.workload.submit import submit
from tests.recovery_stack import Cluster, respawn_running, until

ACTION = '{"respawn":{"environment":"demo","mode":"action"}}'
SERVER = f"http://127.0.0.1:{SERVER_PORT}"
CHROMIUM = "/usr/bin/chromium"  # Debian's: no browser is downloaded
RECOVERY_S = 150_000  # ms: fault to resumed training, with the suite's 2 cores shared
SCREENSHOTS = {"test_the_cost_page_plots_what_the_xid_cost": "console-cost.png"}  # else console-xid-node2.png
XID: dict[str, object] = {}  # the Xid incident of the test that follows it, for the cost page's test after it


def artifacts() -> Path:
    folder = Path(os.environ.get("RESPAWN_ARTIFACTS") or Path(__file__).parents[1] / "artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def cluster(sandbox):
    with respawn_running(sandbox, "console") as config:  # worker, detector and `respawn serve`
        yield Cluster(sandbox, config)


async def _serving() -> bool:
    async with httpx.AsyncClient(timeout=2) as client:
        try:
            return (await client.get(f"{SERVER}/healthz")).status_code == 200
        except httpx.TransportError:
            return False


async def _our_server(cluster: Cluster) -> None:
    """The server on the sandbox's port is this module's: a leftover `respawn serve` of another
    configuration on the port would answer /healthz too, and the page would watch another trail."""
    async with httpx.AsyncClient(base_url=SERVER, timeout=5) as client:
        got = await client.get("/console/api/overview", headers={"Authorization": f"Bearer {WRITE_TOKEN}"})
    serving = got.json().get("cluster") if got.status_code == 200 else f"an answer {got.status_code}"
    assert serving == cluster.config.cluster, (
        f"port {SERVER_PORT} is served for {serving!r}, not this module's cluster {cluster.config.cluster!r}:"
        " another `respawn serve` holds it (see `ss -ltnp`)"
    )


@pytest.fixture
async def page(cluster, request):
    await until(_serving, 60, "the Respawn server to answer")
    await _our_server(cluster)
    async with async_playwright() as playwright:
        # --no-sandbox: the tests run as root, where chromium's sandbox will not start.
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        page = await browser.new_page(viewport={"width": 1600, "height": 1300})
        try:
            yield page
        finally:
            shot = SCREENSHOTS.get(request.node.originalname, "console-xid-node2.png")
            await page.screenshot(path=artifacts() / shot, full_page=True)
            await browser.close()


async def test_the_api_refuses_a_request_without_a_token(cluster):
    await until(_serving, 60, "the Respawn server to answer")
    async with httpx.AsyncClient(base_url=SERVER, timeout=5) as client:
        assert (await client.get("/console/api/jobs")).status_code == 401


async def test_console_follows_an_xid_on_node2_to_the_job_resuming_without_it(cluster, page: Page):
    job_id = submit(
        cluster.lab, nodes=3, steps=20, checkpoint_every=10, step_seconds=0.3, comment=ACTION, name="console-e2e"
    )
    iid = await cluster.incident_of(job_id)
    XID.update(job_id=job_id, incident=iid)

    await page.goto(f"{SERVER}/console")
    await expect(page.locator("#token-dialog")).to_be_visible()
    await page.fill("#token-input", WRITE_TOKEN)
    await page.click("#token-form button[type=submit]")
    await page.evaluate("window.loadedOnce = true")  # gone if the page reloads

    await page.fill("#filter-q", str(job_id))
    job_row = page.locator(f'#jobs tr[data-job="{job_id}"]')
    await expect(job_row).to_contain_text("console-e2e", timeout=30_000)
    await expect(job_row).to_contain_text("demo", timeout=30_000)  # enrolled in the demo environment
    await job_row.locator("button").click()
    await expect(page.locator("#job-title")).to_have_text(f"Job {job_id}")

    await cluster.wait_checkpoint(job_id)
    inject(cluster.lab, job_id, "node2", FaultKind.XID)

    # From here the page updates itself: the timeline grows as the incident runs.
    timeline = page.locator("#timeline tbody tr")
    await expect(page.locator('#timeline tr[data-event="resumed"]')).to_have_count(1, timeout=RECOVERY_S)
    excluded = page.locator('#timeline tr[data-event="excluded"]')
    await expect(excluded.locator("td.nodes")).to_have_text("node2")
    await expect(page.locator('#timeline tr[data-event="decided"]')).to_contain_text("restart excluding")
    events = await timeline.evaluate_all("rows => rows.map(r => r.dataset.event)")
    story = ["detected", "decided", "excluded", "released", "attempt_started", "resumed"]
    assert [e for e in events if e in story] == story

    # The job's incident, linked to its page in the Temporal Web UI.
    temporal = f"http://127.0.0.1:8233/namespaces/default/workflows/{iid}"
    incident = page.locator(f'#job-incidents li[data-incident="{iid}"]')
    await expect(incident).to_contain_text("gpu_hardware")
    await expect(incident).to_contain_text("excluding node2")
    await expect(incident.locator("a.temporal")).to_have_attribute("href", temporal)
    await expect(page.locator("#job-facts")).to_contain_text("node2")  # Slurm's excluded nodes

    # The incidents panel lists it among the closed ones, with the same link.
    await expect(incident).not_to_have_class("open", timeout=30_000)
    await page.click("#incidents-closed")
    listed = page.locator(f'#incidents tr[data-incident="{iid}"]')
    await expect(listed.locator("a.temporal")).to_have_attribute("href", temporal)

    # An override goes through the confirmation to the CLI's path; the closed incident refuses it.
    await page.click("#job-override")
    await page.select_option("#override-action", "stop")
    await page.fill("#override-reason", "console e2e: checking the refusal")
    await expect(page.locator("#override-submit")).to_have_text(f"Confirm: stop job {job_id}")
    await page.click("#override-submit")
    await expect(page.locator("#override-error")).to_contain_text(re.compile(rf"{iid}.*(closed|completed)"))
    await page.click("#override-cancel")

    assert await page.evaluate("window.loadedOnce") is True  # all of it without a reload


async def test_the_cost_page_plots_what_the_xid_cost(cluster, page: Page):
    """The previous test's Xid incident (closed by now), on the cost page: the three plots drawn as SVG
    with their titles, and the incident's four parts in the interruptions table."""
    if "incident" not in XID:
        pytest.skip("needs the Xid incident of test_console_follows_an_xid_on_node2_to_the_job_resuming_without_it")
    job_id, iid = XID["job_id"], XID["incident"]

    await page.goto(f"{SERVER}/console#cost")
    await expect(page.locator("#token-dialog")).to_be_visible()
    await page.fill("#token-input", WRITE_TOKEN)
    await page.click("#token-form button[type=submit]")
    await expect(page.locator("#cost-panel")).to_be_visible()
    await expect(page.locator("#view-cost")).to_have_attribute("aria-current", "page")

    for figure, title in (
        ("#plot-lost", re.compile(r"^Lost (GPU-hours|time) over the range, stacked by part$")),
        ("#plot-ettr", "ETTR per job"),
        ("#plot-mtbf", "MTBF against job size"),
    ):
        chart = page.locator(f"{figure} .chart svg")
        await expect(chart).to_have_attribute("role", "img", timeout=30_000)
        await expect(chart.locator(":scope > title")).to_have_text(title)
        await expect(chart.locator(":scope > desc")).not_to_be_empty()
    # The Xid's lost time is a stacked bar; its job has an ETTR bar; its size has an MTBF bar.
    await expect(page.locator("#plot-lost rect.part").first).to_be_attached()
    await expect(page.locator(f'#plot-ettr rect.bar[data-job="{job_id}"]')).to_be_attached()
    await expect(page.locator("#plot-mtbf rect.bar").first).to_be_attached()

    row = page.locator(f'#cost-incidents tr[data-incident="{iid}"]')
    await expect(row).to_contain_text("gpu_hardware")
    for part in ("work_redone", "fault_to_detection", "detection_to_action", "action_to_training"):
        await expect(row.locator(f'td[data-part="{part}"]')).to_have_text(re.compile(r"^~?[\d.,]+ s$"))
    advice = page.locator(f'#cost-advice li[data-jobs~="{job_id}"]')
    await expect(advice).to_contain_text(re.compile(r"checkpointing every|not measured"))
