// Respawn console: polls /console/api and redraws the parts that changed; no framework, no build step.
// Everything shown comes from jobs and logs that anyone can write: it is set as text, never as HTML.
"use strict";

const POLL_MS = 3000;
const TOKEN_KEY = "respawn.console.token";
const JOBS_PER_PAGE = 50;
const INCIDENTS_PER_PAGE = 10;

const state = {
  jobs: { cursors: [null], page: 0 },  // cursors[i]: the cursor that fetches page i
  incidents: { open: true, cursors: [null], page: 0 },
  job: null,  // the job whose timeline is shown
  timeline: { after: 0, events: [] },
  busy: false,  // a refresh is running ...
  again: false,  // ... and another was asked for meanwhile
};

const $ = (id) => document.getElementById(id);

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// --- the token -------------------------------------------------------------------------------

function token() { return sessionStorage.getItem(TOKEN_KEY); }

function askToken(message) {
  $("token-error").textContent = message || "";
  $("token-input").value = "";
  const dialog = $("token-dialog");
  if (!dialog.open) dialog.showModal();
  $("token-input").focus();
}

// --- the API -------------------------------------------------------------------------------

async function api(path, options = {}) {
  const secret = token();
  if (!secret) {
    askToken();
    throw new ApiError(401, "no token");
  }
  const headers = { Accept: "application/json", Authorization: `Bearer ${secret}`, ...(options.headers || {}) };
  const response = await fetch(path, { ...options, headers, cache: "no-store" });
  const body = await response.json().catch(() => null);
  if (response.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY);
    askToken("The server refused that token (401). Paste another.");
  }
  if (!response.ok) throw new ApiError(response.status, detailText(body) || response.statusText);
  return body;
}

function detailText(body) {
  const detail = body && body.detail;
  if (Array.isArray(detail)) {  // FastAPI's validation errors
    return detail.map((e) => `${(e.loc || []).slice(1).join(".")}: ${e.msg}`).join("; ");
  }
  return detail == null ? "" : String(detail);
}

function query(params) {
  const q = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== "") q.set(key, String(value));
  }
  return q.toString();
}

// --- building the page -----------------------------------------------------------------------

// el("td", {className: "x"}, "text", child): an element with properties and children (strings become text).
function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node[key] = value;
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function badge(text, kind) { return el("span", { className: `badge ${kind || ""}` }, text); }

function temporalLink(url) {
  if (!/^https?:\/\//.test(url || "")) return "";  // only web links, whatever the server says
  return el("a", { href: url, target: "_blank", rel: "noopener noreferrer", className: "temporal" },
            "Temporal ↗");
}

function jobButton(jobId) {
  return el("button", { type: "button", className: "link", onclick: () => selectJob(jobId),
                        title: `show job ${jobId}'s timeline` }, String(jobId));
}

const STATE_KIND = { RUNNING: "good", COMPLETED: "info", PENDING: "", FAILED: "bad", NODE_FAIL: "bad",
                     TIMEOUT: "bad", OUT_OF_MEMORY: "bad", BOOT_FAIL: "bad", CANCELLED: "warn" };

function stateBadge(job) {
  if (!job.state) return badge("unknown");
  const b = badge(job.state, STATE_KIND[job.state] || "");
  if (!job.live) b.title = "Slurm no longer lists this job: its last recorded state";
  return b;
}

function decision(incident) {
  if (!incident.action) return "—";
  return [incident.action.replaceAll("_", " "), " ",
          badge(incident.acted ? "acted" : "recommended", incident.acted ? "info" : "warn")];
}

// Local time: HH:MM:SS.mmm for a timeline, YYYY-MM-DD HH:MM:SS for a list.
function time(iso, withDate) {
  const d = new Date(iso);
  const two = (n) => String(n).padStart(2, "0");
  const hms = `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
  if (withDate) return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${hms}`;
  return `${hms}.${String(d.getMilliseconds()).padStart(3, "0")}`;
}

function fill(tbody, rows, columns, emptyText) {
  tbody.replaceChildren(...(rows.length ? rows : [el("tr", {}, el("td", { className: "empty", colSpan: columns },
                                                                       emptyText))]));
}

// --- the header ------------------------------------------------------------------------------

const environmentsShown = new Set();

async function loadOverview() {
  const o = await api("/console/api/overview");
  $("cluster").textContent = `cluster ${o.cluster}`;
  document.title = `Respawn · ${o.cluster}`;
  $("summary").replaceChildren(
    `${o.jobs} jobs, ${o.enrolled} enrolled · `,
    o.open_incidents ? badge(`${o.open_incidents} open incidents`, "open") : badge("no open incident", "good"),
    o.attention ? badge(`${o.attention} need attention`, "warn") : "");
  const status = $("status");
  if (o.slurm.ok) {
    status.textContent = `updated ${time(new Date().toISOString())}`;
    status.className = "status";
  } else {
    const since = o.slurm.as_of ? ` (state shown is from ${time(o.slurm.as_of)})` : "";
    status.textContent = `Slurm unreachable: ${o.slurm.error}${since}`;
    status.className = "status bad";
  }
  const select = $("filter-environment");
  for (const name of o.environments) {
    if (!environmentsShown.has(name)) {
      environmentsShown.add(name);
      select.append(el("option", { value: name }, name));
    }
  }
}

// --- jobs --------------------------------------------------------------------------------------

function jobFilter() {
  return {
    q: $("filter-q").value.trim(),
    state: $("filter-state").value,
    enrolled: $("filter-enrolled").value,
    environment: $("filter-environment").value,
    attention: $("filter-attention").checked || null,
  };
}

async function loadJobs() {
  const s = state.jobs;
  const page = await api(`/console/api/jobs?${query({ ...jobFilter(), limit: JOBS_PER_PAGE,
                                                         cursor: s.cursors[s.page] })}`);
  s.cursors.length = s.page + 1;
  if (page.next_cursor) s.cursors.push(page.next_cursor);
  fill($("jobs").tBodies[0], page.items.map(jobRow), 10, "no job matches");
  const first = s.page * JOBS_PER_PAGE;
  $("jobs-range").textContent = page.total
    ? `${first + 1}–${first + page.items.length} of ${page.total}` : "";
  $("jobs-prev").disabled = s.page === 0;
  $("jobs-next").disabled = !page.next_cursor;
}

function jobRow(job) {
  const enrolled = job.enrolled === null ? badge("unseen") : job.enrolled ? badge("yes", "good") : badge("no");
  return el("tr", { className: job.job_id === state.job ? "selected" : "", dataset: { job: job.job_id } },
    el("td", { className: "job" }, jobButton(job.job_id)),
    el("td", { className: "name" }, job.name),
    el("td", {}, job.user),
    el("td", {}, stateBadge(job)),
    el("td", {}, job.attempt ?? "—"),
    el("td", {}, enrolled),
    el("td", {}, job.environment || ""),
    el("td", {}, job.mode || ""),
    el("td", { className: "flags" }, job.flags.map((f) => badge(f, f))),
    el("td", { className: "detail" }, job.reason));
}

function filtersChanged() {
  state.jobs = { cursors: [null], page: 0 };
  refresh();
}

// --- incidents ---------------------------------------------------------------------------------

async function loadIncidents() {
  const s = state.incidents;
  const page = await api(`/console/api/incidents?${query({ open: s.open, limit: INCIDENTS_PER_PAGE,
                                                              cursor: s.cursors[s.page] })}`);
  s.cursors.length = s.page + 1;
  if (page.next_cursor) s.cursors.push(page.next_cursor);
  fill($("incidents").tBodies[0], page.items.map(incidentRow), 7,
       s.open ? "no open incident" : "no closed incident yet");
  const first = s.page * INCIDENTS_PER_PAGE;
  $("incidents-range").textContent = page.total ? `${first + 1}–${first + page.items.length} of ${page.total}` : "";
  $("incidents-prev").disabled = s.page === 0;
  $("incidents-next").disabled = !page.next_cursor;
}

function phaseBadge(incident) {
  if (incident.awaiting_approval) return badge("awaiting approval", "approval");
  return badge(incident.phase.replaceAll("_", " "), incident.open ? "open" : "");
}

function incidentRow(incident) {
  return el("tr", { dataset: { incident: incident.incident_id } },
    el("td", { className: "time", title: incident.opened }, time(incident.opened, true)),
    el("td", { className: "job" }, jobButton(incident.job_id), incident.attempt != null ? ` #${incident.attempt}` : ""),
    el("td", {}, incident.failure_class || incident.kind || "…"),
    el("td", {}, decision(incident)),
    el("td", {}, incident.nodes.join(", ")),
    el("td", {}, phaseBadge(incident)),
    el("td", {}, temporalLink(incident.temporal_url)));
}

function showIncidents(open) {
  state.incidents = { open, cursors: [null], page: 0 };
  $("incidents-open").setAttribute("aria-pressed", String(open));
  $("incidents-closed").setAttribute("aria-pressed", String(!open));
  refresh();
}

// --- one job's timeline ------------------------------------------------------------------------

function selectJob(jobId) {
  state.job = jobId;
  state.timeline = { after: 0, events: [] };
  $("job-panel").hidden = false;
  document.querySelector("main").classList.add("with-job");
  $("job-title").textContent = `Job ${jobId}`;
  for (const row of $("jobs").tBodies[0].rows) row.classList.toggle("selected", row.dataset.job === String(jobId));
  refresh();
}

function closeJob() {
  state.job = null;
  $("job-panel").hidden = true;
  document.querySelector("main").classList.remove("with-job");
  for (const row of $("jobs").tBodies[0].rows) row.classList.remove("selected");
}

async function loadTimeline() {
  const jobId = state.job;
  const t = state.timeline;
  let data;
  do {  // catch up on everything written since the last poll
    data = await api(`/console/api/jobs/${jobId}/timeline?${query({ after: t.after })}`);
    if (state.job !== jobId) return;  // another job was picked meanwhile
    t.events.push(...data.events);
    if (data.events.length) t.after = data.events[data.events.length - 1].id;
  } while (data.next_cursor);
  renderJob(data.job, data.incidents, t.events);
}

function renderJob(job, incidents, events) {
  const fact = (name, ...value) => [el("dt", {}, name), el("dd", {}, ...value)];
  $("job-facts").replaceChildren(
    ...fact("Name", job.name || "—"),
    ...fact("State", stateBadge(job), job.attempt != null ? ` attempt ${job.attempt}` : ""),
    ...fact("Enrolled", job.enrolled === null ? "not seen by the detector yet" : job.enrolled
      ? `yes: ${job.environment}, ${job.mode} mode` : `no: ${job.reason}`),
    ...(job.enrolled && job.reason ? fact("Note", job.reason) : []),
    ...fact("Nodes", job.nodes.join(", ") || "—"),
    ...fact("Excluded", job.excluded_nodes.join(", ") || "—"),
    ...fact("Flags", job.flags.length ? job.flags.map((f) => badge(f, f)) : "none"));
  $("job-override").disabled = !job.enrolled;

  $("job-incidents").replaceChildren(...(incidents.length ? incidents.map(incidentItem)
                                                           : [el("li", { className: "muted" }, "no incident")]));
  fill($("timeline").tBodies[0], events.map(eventRow), 6, "nothing recorded yet");
}

function incidentItem(incident) {
  return el("li", { className: incident.open ? "open" : "", dataset: { incident: incident.incident_id } },
    el("div", { className: "line" },
      el("code", {}, incident.incident_id), phaseBadge(incident),
      el("span", {}, incident.failure_class || incident.kind || ""),
      el("span", {}, decision(incident)),
      incident.exclude.length ? el("span", {}, `excluding ${incident.exclude.join(", ")}`) : "",
      temporalLink(incident.temporal_url),
      incident.open ? el("button", { type: "button", className: "danger",
                                     onclick: () => openOverride(incident.job_id, incident.incident_id) },
                         "Override…") : ""),
    incident.reason ? el("div", { className: "reason" }, incident.reason) : "",
    incident.override ? el("div", { className: "reason" },
      `overridden: ${incident.override.action} by ${incident.override.who}: ${incident.override.reason}`) : "");
}

const EVENT_KIND = {
  detected: "bad", attributed: "warn", decided: "warn", override: "approval", systemic: "bad",
  held: "info", excluded: "info", released: "info", stopped: "bad", drained: "info", watchdog_released: "warn",
  attempt_started: "good", resumed: "good", job_completed: "good", job_ended: "", incident_closed: "",
};

function eventRow(event) {
  const acted = event.acted === null ? "" : badge(event.acted ? "acted" : "recommended", event.acted ? "info" : "warn");
  return el("tr", { dataset: { event: event.event, id: event.id }, title: event.incident_id || "" },
    el("td", { className: "time", title: event.at }, time(event.at)),
    el("td", {}, event.attempt ?? ""),
    el("td", {}, badge(event.event.replaceAll("_", " "), EVENT_KIND[event.event] ?? "")),
    el("td", { className: "nodes" }, event.nodes.join(", ")),
    el("td", {}, event.action ? event.action.replaceAll("_", " ") : "", " ", acted),
    el("td", { className: "detail" },
      [[event.failure_class, event.pattern].filter(Boolean).join(" · "), event.summary].filter(Boolean).join(" — ")));
}

// --- overrides ---------------------------------------------------------------------------------

const override = { jobId: null, incident: null };

function openOverride(jobId, incident) {
  override.jobId = jobId;
  override.incident = incident || null;
  $("override-target").textContent = incident
    ? `Job ${jobId}, incident ${incident}.` : `Job ${jobId}: its newest open incident.`;
  $("override-reason").value = "";
  $("override-exclude").value = "";
  $("override-error").textContent = "";
  $("override-submit").disabled = false;
  describeOverride();
  $("override-dialog").showModal();
}

function overrideExclusions() {
  return $("override-exclude").value.split(",").map((n) => n.trim()).filter(Boolean);
}

function describeOverride() {
  const action = $("override-action").value;
  $("override-exclude-label").hidden = action !== "restart";
  const nodes = action === "restart" ? overrideExclusions() : [];
  const what = `${action.toUpperCase()} job ${override.jobId}${nodes.length ? ` excluding ${nodes.join(", ")}` : ""}`;
  $("override-confirm").textContent = `${what}. An override is a person's command: it acts in observe mode too, ` +
    "and it is recorded in the audit trail under your token's name with your reason.";
  $("override-submit").textContent = `Confirm: ${action} job ${override.jobId}`;
}

async function submitOverride(event) {
  event.preventDefault();
  const action = $("override-action").value;
  const reason = $("override-reason").value.trim();
  if (!reason) {
    $("override-error").textContent = "Say why: the reason goes to the audit trail.";
    return;
  }
  $("override-submit").disabled = true;
  $("override-error").textContent = "";
  try {
    const answer = await api(`/console/api/jobs/${override.jobId}/override`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ action, reason, exclude: action === "restart" ? overrideExclusions() : [],
                             incident: override.incident }),
    });
    $("override-dialog").close();
    showBanner(`Override sent to job ${answer.job_id} by ${answer.who}: ${answer.answer}`, false);
    refresh();
  } catch (err) {
    const scope = err.status === 403 ? " (this token may only read)" : "";
    $("override-error").textContent = `Refused${scope}: ${err.message}`;
    $("override-submit").disabled = false;
  }
}

// --- polling -----------------------------------------------------------------------------------

function showBanner(text, bad) {
  const banner = $("banner");
  banner.textContent = text;
  banner.className = bad ? "banner bad" : "banner";
  banner.hidden = !text;
}

async function refresh() {
  if (!token()) return;
  if (state.busy) {  // one refresh at a time; a click meanwhile gets one more right after
    state.again = true;
    return;
  }
  state.busy = true;
  try {
    do {
      state.again = false;
      try {
        await Promise.all([loadOverview(), loadJobs(), loadIncidents(),
                           state.job !== null ? loadTimeline() : null]);
        if ($("banner").classList.contains("bad")) showBanner("", false);
      } catch (err) {
        if (err.status !== 401) showBanner(`Cannot update: ${err.message}`, true);
      }
    } while (state.again && token());
  } finally {
    state.busy = false;
  }
}

function start() {
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const value = $("token-input").value.trim();
    if (!value) return;
    sessionStorage.setItem(TOKEN_KEY, value);
    $("token-dialog").close();
    refresh();
  });
  $("token-dialog").addEventListener("cancel", (event) => { if (!token()) event.preventDefault(); });
  $("change-token").addEventListener("click", () => askToken());

  $("filters").addEventListener("submit", (event) => { event.preventDefault(); filtersChanged(); });
  let typing = null;
  $("filter-q").addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(filtersChanged, 300); });
  for (const id of ["filter-state", "filter-enrolled", "filter-environment", "filter-attention"]) {
    $(id).addEventListener("change", filtersChanged);
  }
  $("jobs-prev").addEventListener("click", () => { state.jobs.page -= 1; refresh(); });
  $("jobs-next").addEventListener("click", () => { state.jobs.page += 1; refresh(); });
  $("incidents-open").addEventListener("click", () => showIncidents(true));
  $("incidents-closed").addEventListener("click", () => showIncidents(false));
  $("incidents-prev").addEventListener("click", () => { state.incidents.page -= 1; refresh(); });
  $("incidents-next").addEventListener("click", () => { state.incidents.page += 1; refresh(); });

  $("job-close").addEventListener("click", closeJob);
  $("job-override").addEventListener("click", () => openOverride(state.job, null));
  $("override-action").addEventListener("change", describeOverride);
  $("override-exclude").addEventListener("input", describeOverride);
  $("override-form").addEventListener("submit", submitOverride);
  $("override-cancel").addEventListener("click", () => $("override-dialog").close());

  if (token()) refresh(); else askToken();
  setInterval(() => { if (!document.hidden) refresh(); }, POLL_MS);
  document.addEventListener("visibilitychange", () => { if (!document.hidden) refresh(); });
}

document.addEventListener("DOMContentLoaded", start);
