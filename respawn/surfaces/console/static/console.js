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
  view: "ops",  // "ops": incidents and jobs; "cost": what interruptions cost (#cost)
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
  if (location.hash === "#cost") location.hash = "";  // a job's timeline is on the incidents and jobs view
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
    ...fact("Excluded", job.excluded_nodes === null ? "not in Slurm's listing"
      : job.excluded_nodes.join(", ") || "—"),
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

// --- the cost page -----------------------------------------------------------------------------
// What interruptions cost (/console/api/cost, docs/cost.md), drawn as inline SVG: no chart library.

const COST_POLL_MS = 30000;  // the report folds the audit trail: not every 3 s
const SVG_NS = "http://www.w3.org/2000/svg";
const PARTS = [
  ["work_redone", "work redone"],
  ["fault_to_detection", "fault → detection"],
  ["detection_to_action", "detection → action"],
  ["action_to_training", "action → training"],
];
const cost = { loadedAt: 0, since: null, report: null };

// svg("rect", {x: 1, class: "bar"}, child): an SVG element with attributes and children (strings become text).
function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value !== null && value !== undefined) node.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// A chart's frame: the <svg> with its <title> and <desc> (what a screen reader says), role img.
function chartFrame(id, width, height, title, desc) {
  return svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img",
                      "aria-labelledby": `${id}-t ${id}-d`, preserveAspectRatio: "xMinYMin meet" },
    svg("title", { id: `${id}-t` }, title), svg("desc", { id: `${id}-d` }, desc));
}

// A chart as wide as its figure (at least `least`): drawn at 1:1, its text stays the page's size.
function chartWidth(figure, least) {
  return Math.max(least, Math.floor(figure.querySelector(".chart").clientWidth || least));
}

// 1, 2 or 5 × a power of ten at or above `value`: a round top for an axis.
function niceTop(value) {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  return [1, 2, 5, 10].map((m) => m * power).find((top) => top >= value * 0.9999);
}

function roundish(value) {
  if (value === 0) return "0";
  const digits = Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : Math.abs(value) >= 1 ? 2 : 3;
  return value.toLocaleString(undefined, { maximumFractionDigits: digits });
}

// A span of seconds as people say it, as checkpointing.py's duration() does.
function span(seconds) {
  if (seconds == null) return "—";
  if (seconds < 120) return `${roundish(seconds)} s`;
  if (seconds < 7200) return `${roundish(seconds / 60)} min`;
  return `${roundish(seconds / 3600)} h`;
}

const pct = (ratio, digits = 1) => (ratio == null ? "—" : `${(ratio * 100).toFixed(digits)}%`);

// The lost-time unit: GPU-hours where the report knows GPUs, else the seconds scaled to s, min or h.
function lostUnit(report, largestSeconds) {
  if (report.lost_gpu_hours > 0) {
    return { key: "gpu_hours", label: "lost GPU-hours", scale: 1, short: "GPU-h" };
  }
  if (largestSeconds >= 7200) return { key: "seconds", label: "lost job-hours (GPUs unknown)", scale: 1 / 3600, short: "h" };
  if (largestSeconds >= 120) return { key: "seconds", label: "lost job-minutes (GPUs unknown)", scale: 1 / 60, short: "min" };
  return { key: "seconds", label: "lost job-seconds (GPUs unknown)", scale: 1, short: "s" };
}

function binLabel(iso, binSeconds, withDate) {
  const d = new Date(iso);
  const two = (n) => String(n).padStart(2, "0");
  const day = `${two(d.getMonth() + 1)}-${two(d.getDate())}`;
  if (binSeconds >= 86400) return day;
  const hm = `${two(d.getHours())}:${two(d.getMinutes())}`;
  return withDate ? `${day} ${hm}` : hm;
}

function yAxis(g, x0, x1, yOf, top, format) {
  for (let i = 0; i <= 4; i += 1) {
    const value = (top * i) / 4;
    const y = yOf(value);
    g.append(svg("line", { class: "gridline", x1: x0, x2: x1, y1: y, y2: y }),
             svg("text", { x: x0 - 6, y: y + 4, "text-anchor": "end", class: "muted" }, format(value)));
  }
}

function axisTitles(frame, width, height, left, bottom, xTitle, yTitle) {
  frame.append(
    svg("text", { x: left + (width - left) / 2, y: height - 4, "text-anchor": "middle", class: "axis-title" }, xTitle),
    svg("text", { x: 0, y: 0, "text-anchor": "middle", class: "axis-title",
                  transform: `translate(14 ${(height - bottom) / 2}) rotate(-90)` }, yTitle));
}

function tableOf(table, head, rows) {
  table.replaceChildren(el("thead", {}, el("tr", {}, head.map((h) => el("th", {}, h)))),
                        el("tbody", {}, rows.length ? rows.map((r) => el("tr", {}, r.map((c) => el("td", {}, c))))
                                                     : el("tr", {}, el("td", { className: "empty", colSpan: head.length },
                                                                         "nothing in the range"))));
}

// (a) Lost time over the range: a bar per bin, stacked by part.
function drawLost(report) {
  const figure = $("plot-lost");
  const bins = report.series;
  const totals = bins.map((b) => PARTS.reduce((sum, [p]) => sum + (b.seconds[p] || 0), 0));
  const unit = lostUnit(report, Math.max(0, ...totals));
  const value = (b, p) => (b[unit.key][p] || 0) * unit.scale;
  const stacked = bins.map((b) => PARTS.reduce((sum, [p]) => sum + value(b, p), 0));
  const W = chartWidth(figure, 640), H = 280, L = 64, R = 12, T = 12, B = 44;
  const top = niceTop(Math.max(0, ...stacked));
  const yOf = (v) => H - B - (v / top) * (H - B - T);
  const step = (W - L - R) / Math.max(1, bins.length);
  const binText = `${span(report.bin_seconds)} bins`;
  const shares = report.parts.filter((p) => p.share != null).map((p) => `${p.part.replaceAll("_", " ")} ${pct(p.share, 0)}`);
  const frame = chartFrame("chart-lost", W, H, `Lost ${unit.short === "GPU-h" ? "GPU-hours" : "time"} over the range, stacked by part`,
    `${report.interruptions} interruptions, ${roundish(unit.key === "gpu_hours" ? report.lost_gpu_hours : report.lost_seconds * unit.scale)} ${unit.short} lost in ${bins.length} ${binText}` +
    (shares.length ? `: ${shares.join(", ")}` : ""));
  const g = svg("g");
  yAxis(g, L, W - R, yOf, top, roundish);
  bins.forEach((b, i) => {
    let base = 0;
    const x = L + i * step + step * 0.1;
    const width = Math.max(1, step * 0.8);
    for (const [p, name] of PARTS) {
      const v = value(b, p);
      if (v <= 0) continue;
      g.append(svg("rect", { class: `part part-${p}`, x, y: yOf(base + v), width, height: yOf(base) - yOf(base + v),
                             "data-part": p },
                   svg("title", {}, `${binLabel(b.start, report.bin_seconds, true)}: ${name} ${roundish(v)} ${unit.short}`)));
      base += v;
    }
  });
  const every = Math.max(1, Math.ceil(bins.length / 8));
  bins.forEach((b, i) => {
    if (i % every) return;
    g.append(svg("text", { x: L + i * step + step / 2, y: H - B + 16, "text-anchor": "middle", class: "muted" },
                 binLabel(b.start, report.bin_seconds, i === 0)));
  });
  g.append(svg("line", { class: "axis", x1: L, x2: W - R, y1: H - B, y2: H - B }),
           svg("line", { class: "axis", x1: L, x2: L, y1: T, y2: H - B }));
  frame.append(g);
  axisTitles(frame, W, H, L, B, `detected (local time, ${binText})`, unit.label);
  figure.querySelector(".chart").replaceChildren(frame);
  figure.querySelector(".legend").replaceChildren(...PARTS.map(([p, name]) =>
    el("li", {}, el("span", { className: `swatch part-${p}`, ariaHidden: "true" }), name)));
  const rows = bins.filter((b, i) => stacked[i] > 0).map((b) =>
    [binLabel(b.start, report.bin_seconds, true), String(b.interruptions), ...PARTS.map(([p]) => roundish(value(b, p)))]);
  tableOf(figure.querySelector("table"), ["bin", "interruptions", ...PARTS.map(([, n]) => `${n} (${unit.short})`)], rows);
}

// (b) ETTR per job: a horizontal bar each, the lowest first (at most 20).
function drawEttr(report) {
  const figure = $("plot-ettr");
  const jobs = report.jobs.filter((j) => j.ettr != null).sort((a, b) => a.ettr - b.ettr).slice(0, 20);
  const lowest = jobs.length ? jobs[0].ettr : 1;
  // Near 100% every bar looks full: the axis starts at the tenth below the lowest (said on the axis).
  const lo = lowest > 0.5 ? Math.max(0, Math.floor((lowest - 0.005) * 10) / 10) : 0;
  const W = chartWidth(figure, 400), L = 84, R = 64, T = 8, B = 44, ROW = 24;
  const H = T + B + Math.max(1, jobs.length) * ROW;
  const xOf = (v) => L + ((v - lo) / (1 - lo)) * (W - L - R);
  const frame = chartFrame("chart-ettr", W, H, "ETTR per job",
    jobs.length ? `${jobs.length} jobs; lowest job ${jobs[0].job_id} at ${pct(jobs[0].ettr, 2)}; the cluster's ${pct(report.ettr, 2)}`
                : "no job ran in the range");
  const g = svg("g");
  for (let i = 0; i <= 4; i += 1) {
    const v = lo + ((1 - lo) * i) / 4;
    g.append(svg("line", { class: "gridline", x1: xOf(v), x2: xOf(v), y1: T, y2: H - B }),
             svg("text", { x: xOf(v), y: H - B + 16, "text-anchor": "middle", class: "muted" }, pct(v, lo > 0 ? 1 : 0)));
  }
  jobs.forEach((j, i) => {
    const y = T + i * ROW + 4;
    g.append(svg("text", { x: L - 8, y: y + 12, "text-anchor": "end" }, `job ${j.job_id}`),
             svg("rect", { class: "bar", x: L, y, width: Math.max(1, xOf(j.ettr) - L),
                           height: ROW - 8, "data-job": j.job_id },
                 svg("title", {}, `job ${j.job_id}: ETTR ${pct(j.ettr, 2)}, ${j.interruptions} interruptions, ` +
                                  `${span(j.lost_seconds)} lost of ${span(j.wall_seconds)}`)),
             svg("text", { x: xOf(j.ettr) + 4, y: y + 12, class: "muted" }, pct(j.ettr, 2)));
  });
  if (!jobs.length) g.append(svg("text", { x: W / 2, y: T + 16, "text-anchor": "middle", class: "muted" }, "no job in the range"));
  g.append(svg("line", { class: "axis", x1: L, x2: L, y1: T, y2: H - B }));
  frame.append(g);
  axisTitles(frame, W, H, L, B, `ETTR: productive / wall time${lo > 0 ? ` (axis from ${pct(lo, 0)})` : ""}`, "job");
  figure.querySelector(".chart").replaceChildren(frame);
  tableOf(figure.querySelector("table"), ["job", "GPUs", "ETTR", "interruptions", "lost", "wall"],
          jobs.map((j) => [String(j.job_id), j.gpus == null ? "unknown" : `${j.gpus} (${j.gpus_basis})`, pct(j.ettr, 2),
                           String(j.interruptions), span(j.lost_seconds), span(j.wall_seconds)]));
}

// (c) MTBF against job size: a bar per GPU bucket; a bucket without failures says so.
function drawMtbf(report) {
  const figure = $("plot-mtbf");
  const buckets = report.mtbf;
  const largest = Math.max(0, ...buckets.map((b) => b.mtbf_hours || 0));
  const [scale, unit] = largest >= 2 ? [1, "hours"] : [60, "minutes"];
  const W = chartWidth(figure, 400), H = 260, L = 64, R = 12, T = 12, B = 44;
  const top = niceTop(largest * scale);
  const yOf = (v) => H - B - (v / top) * (H - B - T);
  const step = (W - L - R) / Math.max(1, buckets.length);
  const frame = chartFrame("chart-mtbf", W, H, "MTBF against job size",
    buckets.length ? buckets.map((b) => `${b.gpus} GPUs: ${b.mtbf_hours == null ? "no failure" : `${roundish(b.mtbf_hours * scale)} ${unit}`}`).join("; ")
                   : "no job ran in the range");
  const g = svg("g");
  yAxis(g, L, W - R, yOf, top, roundish);
  buckets.forEach((b, i) => {
    const x = L + i * step + step * 0.2;
    const width = step * 0.6;
    const middle = L + i * step + step / 2;
    if (b.mtbf_hours == null) {
      g.append(svg("text", { x: middle, y: H - B - 6, "text-anchor": "middle", class: "muted" }, "no failure"));
    } else {
      const v = b.mtbf_hours * scale;
      g.append(svg("rect", { class: "bar", x, y: yOf(v), width, height: H - B - yOf(v), "data-gpus": b.gpus },
                   svg("title", {}, `${b.gpus} GPUs: MTBF ${roundish(v)} ${unit}, ${b.interruptions} interruptions in ` +
                                    `${roundish(b.wall_hours)} job-hours of ${b.jobs} jobs`)),
               svg("text", { x: middle, y: yOf(v) - 4, "text-anchor": "middle" }, `${roundish(v)}`));
    }
    g.append(svg("text", { x: middle, y: H - B + 16, "text-anchor": "middle", class: "muted" }, b.gpus));
  });
  g.append(svg("line", { class: "axis", x1: L, x2: W - R, y1: H - B, y2: H - B }),
           svg("line", { class: "axis", x1: L, x2: L, y1: T, y2: H - B }));
  frame.append(g);
  axisTitles(frame, W, H, L, B, "job size (GPUs)", `MTBF (${unit})`);
  figure.querySelector(".chart").replaceChildren(frame);
  tableOf(figure.querySelector("table"), ["GPUs", "jobs", "interruptions", "job-hours", "MTBF (hours)"],
          buckets.map((b) => [b.gpus, String(b.jobs), String(b.interruptions), roundish(b.wall_hours),
                              b.mtbf_hours == null ? "no failure" : roundish(b.mtbf_hours)]));
}

// The advice per job and size: the advised first; jobs not advised for the same reason share a line.
function adviceItems(report) {
  const advised = report.advice.filter((a) => a.advice);
  const unadvised = new Map();
  for (const a of report.advice.filter((x) => !x.advice)) {
    const key = `${a.gpus}\u0000${a.sentence}`;
    if (!unadvised.has(key)) unadvised.set(key, { ...a, jobs: [] });
    unadvised.get(key).jobs.push(a.job_id);
  }
  return [...advised.map((a) => adviceItem({ ...a, jobs: [a.job_id] })), ...[...unadvised.values()].map(adviceItem),
          ...report.size_advice.map((a) => adviceItem({ ...a, jobs: [] }))];
}

function adviceItem(a) {
  const jobs = a.jobs.length > 1 ? `Jobs ${a.jobs.join(", ")}` : `Job ${a.jobs[0]}`;
  const who = a.job_id == null ? `Jobs of ${a.gpus} GPUs` : `${jobs} (${a.gpus} GPUs)`;
  const inputs = a.advice
    ? `interval ${span(a.interval_s)} and save ${span(a.save_s)} (${a.measures === 1 ? "1 measure" : `medians of ${a.measures} measures`}); ` +
      `MTBF ${span(a.mtbf_s)} (${a.mtbf_from}); restart ${span(a.restart_s)} (${a.restart_from}); ` +
      `ETTR ${pct(a.advice.ettr_current, 2)} now, ${pct(a.advice.ettr_optimal, 2)} at the optimum`
    : `${a.jobs.length > 1 ? "" : `${a.measures} measure${a.measures === 1 ? "" : "s"} on record; `}MTBF ${span(a.mtbf_s)} (${a.mtbf_from})`;
  return el("li", { className: a.advice ? "advised" : "", dataset: { jobs: a.jobs.join(" "), gpus: a.gpus } },
    el("div", {}, el("strong", {}, `${who}: `), a.sentence), el("div", { className: "inputs" }, inputs));
}

function partCell(part) {
  const text = part.seconds == null ? "?" : `${part.basis === "estimated" ? "~" : ""}${roundish(part.seconds)} s`;
  return el("td", { className: "part", title: `${part.basis}: ${part.note}`, dataset: { part: part.part } }, text);
}

function costIncidentRow(c) {
  const parts = Object.fromEntries(c.parts.map((p) => [p.part, p]));
  const lost = c.lost_gpu_hours == null ? span(c.lost_seconds) : `${roundish(c.lost_gpu_hours)} GPU-h`;
  return el("tr", { dataset: { incident: c.incident_id } },
    el("td", { className: "time", title: c.detected_at }, time(c.detected_at, true)),
    el("td", { className: "job" }, jobButton(c.job_id), c.attempt != null ? ` #${c.attempt}` : ""),
    el("td", {}, c.failure_class || c.kind || ""),
    el("td", {}, c.action ? c.action.replaceAll("_", " ") : "—"),
    el("td", {}, c.gpus == null ? "unknown" : `${c.gpus} (${c.gpus_basis})`),
    ...PARTS.map(([p]) => partCell(parts[p])),
    el("td", { className: "part" }, lost));
}

function renderCost(report) {
  const figure = (text, label) => el("span", {}, el("span", { className: "figure" }, text), ` ${label}`);
  $("cost-summary").replaceChildren(
    figure(String(report.interruptions), "interruptions"),
    figure(report.lost_gpu_hours > 0 ? roundish(report.lost_gpu_hours) : span(report.lost_seconds),
           report.lost_gpu_hours > 0 ? "GPU-hours lost" : "lost (GPUs unknown)"),
    figure(pct(report.ettr, 2), `ETTR (weighted by ${report.ettr_weighting.replace("_", "-")}, an upper bound)`),
    figure(report.interruptions_per_1k_gpu_hours == null ? "—" : roundish(report.interruptions_per_1k_gpu_hours),
           "interruptions per 1,000 GPU-hours"));
  drawLost(report);
  drawEttr(report);
  drawMtbf(report);
  const advice = adviceItems(report);
  $("cost-advice").replaceChildren(...(advice.length ? advice : [el("li", { className: "muted" }, "no job in the range")]));
  fill($("cost-incidents").tBodies[0], report.incidents.filter((c) => c.interrupted).map(costIncidentRow), 10,
       "no interruption in the range");
  $("cost-notes").replaceChildren(...report.notes.map((n) => el("li", {}, n)));
}

async function loadCost(force) {
  const since = $("cost-since").value;
  if (!force && since === cost.since && Date.now() - cost.loadedAt < COST_POLL_MS) return;
  const report = await api(`/console/api/cost?${query({ since })}`);
  cost.since = since;
  cost.loadedAt = Date.now();
  cost.report = report;
  renderCost(report);
}

function showView() {
  const onCost = location.hash === "#cost";
  state.view = onCost ? "cost" : "ops";
  document.querySelector("main").classList.toggle("cost-view", onCost);
  $("cost-panel").hidden = !onCost;
  if (onCost) $("view-cost").setAttribute("aria-current", "page"); else $("view-cost").removeAttribute("aria-current");
  if (!onCost) $("view-ops").setAttribute("aria-current", "page"); else $("view-ops").removeAttribute("aria-current");
  if (onCost) cost.loadedAt = 0;  // fresh figures on entering
  refresh();
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
        if (state.view === "cost") await Promise.all([loadOverview(), loadCost(false)]);
        else await Promise.all([loadOverview(), loadJobs(), loadIncidents(), state.job !== null ? loadTimeline() : null]);
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

  $("cost-since").addEventListener("change", () => { cost.loadedAt = 0; refresh(); });
  window.addEventListener("hashchange", showView);

  showView();  // and the first refresh, once there is a token
  if (!token()) askToken();
  setInterval(() => { if (!document.hidden) refresh(); }, POLL_MS);
  document.addEventListener("visibilitychange", () => { if (!document.hidden) refresh(); });
}

document.addEventListener("DOMContentLoaded", start);
