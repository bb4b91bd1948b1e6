// The shardcron console: a page per hash route, drawn from the JSON API; the job and jobs pages
// follow the registry through server-sent events (no reload). Plain DOM, no library: the console
// is served offline from the binary.
"use strict";

// The token is never kept by the page: it is sent once to /api/login, which sets an HttpOnly
// session cookie that every request and the event stream then carry.
const state = { stream: null, route: "" };

// ---- helpers --------------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function svg(tag, attrs, ...children) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") node.textContent = v; else node.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) if (c) node.append(c);
  return node;
}

// A trigger's body: the job parameter and items typed beside the button, when any.
function triggerBody() {
  const body = {};
  const param = document.getElementById("trigger-param");
  const items = document.getElementById("trigger-items");
  if (param && param.value !== "") body.jobParameter = param.value;
  if (items && items.value.trim() !== "") body.items = items.value.split(",").map((i) => Number(i.trim()));
  return body;
}

// An execution's result: running, or its outcome (success, failed, timeout, cancelled); a row
// written without one (by ElasticJob, or older) is success or failed.
function executionStatus(r) {
  if (!r.complete_time) return "running-now";
  return r.outcome || (r.is_success ? "success" : "failed");
}
function badge(text, extra) { return el("span", { class: "badge " + text + (extra ? " " + extra : ""), text }); }
function when(iso) { return iso ? new Date(iso).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z") : "-"; }
function show(...nodes) { document.getElementById("main").replaceChildren(...nodes.flat(Infinity).filter((n) => n !== null && n !== undefined && n !== false)); }

function flash(text, kind) {
  const box = document.getElementById("flash");
  box.className = kind; box.hidden = false; box.replaceChildren(...[].concat(text));
  clearTimeout(flash.timer);
  if (kind === "ok") flash.timer = setTimeout(() => { box.hidden = true; }, 4000);
}

function errorText(body) {
  const problems = (body.problems || []).map((p) => el("li", { text: p.field + ": " + p.problem }));
  // With the problems listed one by one, the error's first line says the rest.
  const error = body.error || "request failed";
  return [el("div", { text: problems.length ? error.split("\n")[0] : error }),
    problems.length ? el("ul", { class: "problems" }, problems) : null].filter(Boolean);
}

class ApiError extends Error {
  constructor(status, body) { super(body.error || "HTTP " + status); this.status = status; this.body = body; }
}

async function api(method, path, body) {
  const headers = { "Accept": "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch("/api" + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let data;
  try { data = text ? JSON.parse(text) : {}; } catch (_) { data = { error: text }; }
  if (res.status === 401) askToken();
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

// A state-changing call: reports its outcome in the flash line; the live stream redraws.
async function act(label, method, path, body) {
  try {
    await api(method, path, body);
    flash(label + ": done", "ok");
    return true;
  } catch (e) {
    flash([el("strong", { text: label + " refused" }), ...errorText(e.body || { error: e.message })], "error");
    return false;
  }
}

function askToken() {
  const form = document.getElementById("token-form");
  form.hidden = false;
}

document.getElementById("token-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const input = document.getElementById("token");
  const token = input.value.trim();
  input.value = "";
  const res = await fetch("/api/login", { method: "POST", body: "{}",
    headers: { "Accept": "application/json", "Content-Type": "application/json", "Authorization": "Bearer " + token } });
  if (!res.ok) {
    let body = {};
    try { body = await res.json(); } catch (_) { body = { error: "HTTP " + res.status }; }
    flash([el("strong", { text: "Login refused" }), ...errorText(body)], "error");
    return;
  }
  document.getElementById("token-form").hidden = true;
  route();
});

// A redraw between a button's mousedown and mouseup would swallow the click: while a pointer is
// down, the newest update waits, and is drawn right after the click was handled.
const deferred = { down: false, draw: null };
document.addEventListener("mousedown", () => { deferred.down = true; }, true);
document.addEventListener("mouseup", () => {
  deferred.down = false;
  setTimeout(() => { const draw = deferred.draw; deferred.draw = null; if (draw) draw(); }, 0);
}, true);

function follow(query, onData) {
  closeStream();
  const stream = new EventSource("/api/events" + query);
  const live = document.getElementById("live");
  const handle = (ev) => {
    live.classList.remove("stale");
    const data = JSON.parse(ev.data);
    if (deferred.down) deferred.draw = () => onData(data); else onData(data);
  };
  stream.addEventListener("job", handle);
  stream.addEventListener("overview", handle);
  stream.addEventListener("error", (ev) => {
    if (ev.data) { const body = JSON.parse(ev.data); show(el("h1", { text: "Unavailable" }), ...errorText(body)); return; }
    live.classList.add("stale");
    // A refused stream is closed for good (an interrupted one reconnects by itself): ask the API
    // why, which shows the token form when a token is missing or wrong.
    if (stream.readyState === EventSource.CLOSED) {
      api("GET", "/overview").catch((e) => show(el("h1", { text: "Unavailable" }), ...errorText(e.body || { error: e.message })));
    }
  });
  state.stream = stream;
}

function closeStream() { if (state.stream) { state.stream.close(); state.stream = null; } }

// ---- jobs -----------------------------------------------------------------------------------

function jobsPage() {
  follow("", drawJobs);
}

function drawJobs(o) {
  document.getElementById("namespace").textContent = "namespace " + o.namespace;
  const rows = o.jobs.map((j) => {
    const last = j.lastOutcome;
    const outcome = !o.history ? el("span", { class: "muted", text: "no history" })
      : !last ? el("span", { class: "muted", text: "-" })
      : el("span", {}, badge(last.success === null ? "running-now" : last.outcome),
        " " + when(last.at) + " item " + last.item + (last.cause ? " (" + last.cause + ")" : ""));
    const name = j.jobName;
    return el("tr", { "data-job": name },
      el("td", {}, el("a", { href: "#/job/" + encodeURIComponent(name), text: name }),
        j.description ? el("div", { class: "muted", text: j.description }) : null),
      el("td", {}, badge(j.status)),
      el("td", {}, el("code", { text: j.cron || "one-off" }),
        j.scheduleError ? el("div", { class: "problems", text: j.scheduleError }) : null),
      el("td", { class: "num" }, j.nextFires.map((t) => el("div", { text: when(t) }))),
      el("td", { class: "num", text: j.shardingTotalCount ?? "?" }),
      el("td", { class: "num", text: j.instanceCount }),
      el("td", {}, outcome),
      el("td", {}, el("div", { class: "actions" },
        el("button", { "data-action": "trigger", onclick: () => act("trigger " + name, "POST", "/jobs/" + name + "/trigger", {}) }, "Trigger"),
        j.status === "DISABLED"
          ? el("button", { "data-action": "enable-job", onclick: () => act("enable " + name, "POST", "/jobs/" + name + "/enable", {}) }, "Enable")
          : el("button", { "data-action": "disable-job", onclick: () => act("disable " + name, "POST", "/jobs/" + name + "/disable", {}) }, "Disable"),
        o.history ? el("a", { href: "#/history/" + encodeURIComponent(name) }, "History") : null)));
  });
  show(el("h1", { text: "Jobs" }),
    el("table", { id: "jobs" },
      el("thead", {}, el("tr", {}, ["Job", "Status", "Cron", "Next fires (UTC)", "Items", "Instances", "Last outcome", ""].map((h) => el("th", { text: h })))),
      el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", { colspan: 8, class: "muted", text: "no jobs in this namespace" })))));
}

// ---- one job --------------------------------------------------------------------------------

// Which part each instance plays for each item: the cell of the sharding map.
function roleOf(item, instance) {
  if (item.owner === instance) {
    if (item.status === "DISABLED") return "skips";
    if (item.status === "RUNNING" && !item.failover) return "runs";
    return "owns";
  }
  if (item.failover === instance) return "failover";
  return "";
}

let editing = null; // the config text being edited survives live redraws

function jobPage(name) {
  editing = null;
  // The live part is redrawn on every change; the config editor is built once, so typing in it
  // is never interrupted by a redraw.
  const live = el("div", { id: "job-live" });
  const config = el("div", {}, el("h2", { text: "Config" }), configEditor(name));
  let shown = false;
  show(el("p", { class: "muted", text: "Loading job " + name + "\u2026" }));
  follow("?job=" + encodeURIComponent(name), (d) => {
    drawJob(name, d, live);
    if (!shown) { show(live, config); shown = true; }
  });
}

function drawJob(name, d, box) {
  const path = "/jobs/" + encodeURIComponent(name);
  const instances = Array.from(new Set([...d.instances, ...d.items.map((i) => i.owner).filter(Boolean)])).sort();
  const head = el("tr", {}, el("th", { text: "Item" }), el("th", { text: "Status" }),
    instances.map((i) => el("th", { text: i, class: d.instances.includes(i) ? "" : "muted" })),
    el("th", { text: "Misfire" }), el("th", { text: "" }));
  const rows = d.items.map((it) => el("tr", { "data-item": it.item, "data-status": it.status, "data-owner": it.owner || "" },
    el("td", { class: "num", text: it.item }),
    el("td", {}, badge(it.status)),
    instances.map((inst) => {
      const role = roleOf(it, inst);
      return el("td", { class: "cell", "data-item": it.item, "data-instance": inst, "data-role": role },
        role ? el("span", { class: "role " + role, text: role === "failover" ? "fails over" : role }) : "");
    }),
    el("td", { text: it.misfire ? "yes" : "" }),
    el("td", {}, it.status === "DISABLED"
      ? el("button", { "data-action": "enable-item", "data-item": it.item, onclick: () => act("enable item " + it.item, "POST", path + "/enable", { item: it.item }) }, "Enable")
      : el("button", { "data-action": "disable-item", "data-item": it.item, onclick: () => act("disable item " + it.item, "POST", path + "/disable", { item: it.item }) }, "Disable"))));
  const servers = d.servers.map((s) => el("tr", { "data-server": s.ip },
    el("td", { text: s.ip }), el("td", {}, badge(s.status)),
    el("td", {}, s.status === "DISABLED"
      ? el("button", { "data-action": "enable-server", onclick: () => act("enable server " + s.ip, "POST", path + "/enable", { server: s.ip }) }, "Enable")
      : el("button", { "data-action": "disable-server", onclick: () => act("disable server " + s.ip, "POST", path + "/disable", { server: s.ip }) }, "Disable"))));
  const insts = d.instances.map((i) => el("tr", { "data-instance": i },
    el("td", { text: i }), el("td", { text: i === d.leader ? "leader" : "" }),
    el("td", {}, el("button", { class: "danger", "data-action": "shutdown-instance", onclick: () => {
      if (confirm("Stop job " + name + " on " + i + "?")) act("shutdown on " + i, "POST", path + "/shutdown", { instance: i });
    } }, "Shut down"))));
  const c = d.config;
  const cards = el("div", { class: "cards" },
    card("Status", badge(d.status)),
    card("Type", d.jobType || "-"),
    card("Cron", c ? (c.cron || "one-off") + (c.timeZone ? " (" + c.timeZone + ")" : "") : "-"),
    card("Next fires (UTC)", d.nextFires.length ? d.nextFires.map((t) => el("div", { text: when(t) })) : (d.scheduleError || "-")),
    card("Items", c ? c.shardingTotalCount : "-"),
    card("Leader", d.leader || "-"));
  box.replaceChildren(...[
    el("h1", {}, "Job ", el("span", { id: "job-name", text: name })),
    el("div", { class: "actions" },
      el("button", { "data-action": "trigger", onclick: () => act("trigger", "POST", path + "/trigger", triggerBody()) }, "Trigger now"),
      el("label", {}, "with job parameter ", el("input", { id: "trigger-param", size: 16, placeholder: "(the config's)" })),
      el("label", {}, " items ", el("input", { id: "trigger-items", size: 8, placeholder: "all, or 0,2" })),
      el("button", { "data-action": "disable-job", onclick: () => act("disable every server", "POST", path + "/disable", {}) }, "Disable job"),
      el("button", { "data-action": "enable-job", onclick: () => act("enable every server", "POST", path + "/enable", {}) }, "Enable job"),
      el("button", { class: "danger", "data-action": "shutdown-job", onclick: () => {
        if (confirm("Stop job " + name + " on every instance?")) act("shutdown", "POST", path + "/shutdown", {});
      } }, "Shut down everywhere"),
      el("a", { href: "#/history/" + encodeURIComponent(name) }, "History"),
      el("a", { href: "#/workflow/" + encodeURIComponent(name) }, "Workflow")),
    d.configError ? el("p", { class: "problems", text: "config: " + d.configError }) : null,
    cards,
    el("h2", { text: "Sharding map" }),
    el("table", { class: "map", id: "sharding-map" }, el("thead", {}, head), el("tbody", {}, rows)),
    el("p", { class: "muted" }, "runs: the owner is running it now; owns: assigned, waiting for its fire; fails over: took it over from a crashed owner; skips: disabled."),
    el("h2", { text: "Servers" }),
    el("table", { id: "servers" }, el("tbody", {}, servers.length ? servers : el("tr", {}, el("td", { class: "muted", text: "none" })))),
    el("h2", { text: "Instances" }),
    el("table", { id: "instances" }, el("tbody", {}, insts.length ? insts : el("tr", {}, el("td", { class: "muted", text: "none: the job is not running anywhere" }))))
  ].filter(Boolean));
}

function card(label, ...value) { return el("div", { class: "card" }, el("div", { class: "label", text: label }), el("div", {}, value)); }

function configEditor(name) {
  const box = el("div", { id: "config" });
  const load = async () => {
    const stored = await api("GET", "/jobs/" + encodeURIComponent(name) + "/config");
    if (editing === null) editing = { yaml: stored.yaml, version: stored.version, dirty: false };
    else if (!editing.dirty) { editing.yaml = stored.yaml; editing.version = stored.version; }
    const text = el("textarea", { id: "config-yaml", spellcheck: "false", oninput: (ev) => { editing.yaml = ev.target.value; editing.dirty = true; } });
    text.value = editing.yaml;
    const stale = stored.version !== editing.version;
    box.replaceChildren(text,
      el("div", { class: "actions" },
        el("button", { "data-action": "save-config", onclick: async () => {
          const ok = await act("config of " + name + " (version " + editing.version + ")", "PUT", "/jobs/" + encodeURIComponent(name) + "/config", { yaml: editing.yaml, version: editing.version });
          if (ok) { editing = null; load().catch(() => {}); }
        } }, "Validate and save"),
        el("button", { onclick: () => { editing = null; load().catch(() => {}); } }, "Discard edits"),
        el("span", { class: stale ? "problems" : "muted", text: "editing version " + editing.version + (stale ? " (stored is now " + stored.version + ": saving will be refused)" : "") })));
  };
  load().catch((e) => box.replaceChildren(el("p", { class: "problems", text: e.message })));
  return box;
}

// ---- servers --------------------------------------------------------------------------------

async function serversPage() {
  closeStream();
  const servers = await api("GET", "/servers");
  show(el("h1", { text: "Servers" }),
    el("table", { id: "servers" },
      el("thead", {}, el("tr", {}, ["IP", "Instances", "Jobs", "Disabled jobs"].map((h) => el("th", { text: h })))),
      el("tbody", {}, servers.map((s) => el("tr", { "data-server": s.ip },
        el("td", { text: s.ip }),
        el("td", {}, s.instances.map((i) => el("div", { text: i }))),
        el("td", {}, s.jobs.map((j) => el("div", {}, el("a", { href: "#/job/" + encodeURIComponent(j), text: j })))),
        el("td", { class: "num", text: s.disabledJobs }))))));
}

// ---- history --------------------------------------------------------------------------------

async function historyPage(name, params) {
  closeStream();
  const q = new URLSearchParams(params);
  const form = el("form", { class: "filters", onsubmit: (ev) => {
    ev.preventDefault();
    const f = new FormData(ev.target);
    const next = new URLSearchParams();
    for (const k of ["item", "since", "workflowRun"]) if (f.get(k)) next.set(k, f.get(k));
    if (f.get("failed")) next.set("failed", "true");
    location.hash = "#/history/" + encodeURIComponent(name) + (next.toString() ? "?" + next : "");
  } },
    el("label", {}, "Item", el("input", { name: "item", size: 4, value: q.get("item") || "" })),
    el("label", {}, "Since (15m, 2h, 7d, date)", el("input", { name: "since", size: 16, value: q.get("since") || "" })),
    el("label", {}, "Workflow run", el("input", { name: "workflowRun", size: 14, value: q.get("workflowRun") || "" })),
    el("label", {}, "Failed only", el("input", { name: "failed", type: "checkbox", checked: q.get("failed") === "true" })),
    el("button", { type: "submit" }, "Filter"));
  const heading = el("h1", {}, "History of ", el("a", { href: "#/job/" + encodeURIComponent(name), text: name }));
  let data;
  try {
    data = await api("GET", "/jobs/" + encodeURIComponent(name) + "/history?" + q);
  } catch (e) {
    show(heading, form, el("div", { class: "problems" }, errorText(e.body || { error: e.message })));
    return;
  }
  const rows = data.records.map((r) => el("tr", { "data-execution": r.id },
    el("td", { text: when(r.start_time) }),
    el("td", { class: "num", text: r.complete_time ? (new Date(r.complete_time) - new Date(r.start_time)) + " ms" : "-" }),
    el("td", { class: "num", text: r.sharding_item }),
    el("td", { class: "num", text: r.attempt == null ? "-" : r.attempt }),
    el("td", { text: r.execution_source }),
    el("td", {}, r.workflow_run ? el("a", { class: "workflow-run", href: "#/history/" + encodeURIComponent(name) + "?workflowRun=" + encodeURIComponent(r.workflow_run), text: r.workflow_run }) : "-"),
    el("td", { text: r.hostname + " (" + r.ip + ")" }),
    el("td", {}, badge(executionStatus(r))),
    el("td", { text: r.failure_cause || "" }),
    el("td", {}, el("a", { class: "output-link", href: "#/output/" + encodeURIComponent(name) + "/" + encodeURIComponent(r.id), text: "output" }))));
  show(heading, form,
    el("div", { class: "legend" }, el("span", {}, el("span", { class: "swatch delay" }), "trigger delay (ms)"),
      el("span", {}, el("span", { class: "swatch duration" }), "duration (ms)"), el("span", { class: "muted", text: data.points.length + " executions" }),
      el("span", { class: "muted", id: "retention", text: data.kept || "" })),
    chart(data.points),
    el("table", { id: "history" },
      el("thead", {}, el("tr", {}, ["Start (UTC)", "Took", "Item", "Attempt", "Source", "Workflow run", "Host", "Result", "Cause", "Output"].map((h) => el("th", { text: h })))),
      el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", { colspan: 10, class: "muted", text: "no executions match" })))),
    await statsSection(name, q.get("by") || "hour"));
}

// One execution's captured output (props shardcron.output), stderr lines marked; a running item's
// is tailed: asked for again every second from where the last answer ended, until it ends or the
// page is left. Lines the node's ring evicted before they were read are counted, not shown.
async function outputPage(name, id) {
  closeStream();
  const here = location.hash;
  const status = el("div", { class: "muted", id: "output-status" });
  const pre = el("pre", { id: "output" });
  show(el("h1", {}, "Output of ", el("a", { href: "#/history/" + encodeURIComponent(name), text: name })), status, pre);
  const path = "/jobs/" + encodeURIComponent(name) + "/output/" + encodeURIComponent(id) + "?from=";
  let from = 0;
  for (;;) {
    let data;
    try {
      data = await api("GET", path + from);
    } catch (e) {
      status.replaceChildren(...errorText(e.body || { error: e.message }));
      return;
    }
    if (location.hash !== here) return;
    if (data.lost) pre.append(el("div", { class: "lost", text: "... " + data.lost + " bytes of output dropped" }));
    for (const l of data.lines) pre.append(el("div", { class: "line " + l.stream, "data-stream": l.stream, text: l.text }));
    from = data.next;
    const e = data.execution;
    const outcome = data.running ? "running (live)" : !e.complete_time ? "running" : e.is_success ? "succeeded" : "failed";
    status.textContent = "execution " + e.id + ", item " + e.sharding_item + ", started " + when(e.start_time) + ": " + outcome +
      (data.dropped ? "; the first " + data.dropped + " bytes were dropped" : "") +
      (data.captured || data.running ? "" : "; no output captured (the job captures it with props shardcron.output)");
    status.dataset.state = data.running ? "running" : "ended";
    if (!data.running) return;
    await new Promise((resolve) => setTimeout(resolve, 1000));
    if (location.hash !== here) return;
  }
}

// Runs, failures, timeouts and p50/p99 duration and trigger delay per hour or day, from the history.
async function statsSection(name, by) {
  const box = el("section", { id: "stats" }, el("h2", {}, "Statistics per " + by + " ",
    el("a", { href: "#/history/" + encodeURIComponent(name) + "?by=" + (by === "hour" ? "day" : "hour"),
      text: "(per " + (by === "hour" ? "day" : "hour") + ")" })));
  let data;
  try {
    data = await api("GET", "/jobs/" + encodeURIComponent(name) + "/stats?by=" + encodeURIComponent(by));
  } catch (e) {
    box.append(el("div", { class: "problems" }, errorText(e.body || { error: e.message })));
    return box;
  }
  const ms = (v) => v === null || v === undefined ? "-" : v + " ms";
  const rows = data.stats.buckets.map((b) => el("tr", { "data-bucket": b.start },
    [when(b.start), b.runs, b.failures, b.timeouts, b.unfinished, ms(b.durationP50Ms), ms(b.durationP99Ms),
      ms(b.delayP50Ms), ms(b.delayP99Ms)].map((v, i) => el("td", { class: i ? "num" : null, text: v }))));
  box.append(
    el("table", { id: "stats-table" },
      el("thead", {}, el("tr", {}, [by === "hour" ? "Hour (UTC)" : "Day (UTC)", "Runs", "Failed", "Timeouts", "Unfinished",
        "p50 took", "p99 took", "p50 delay", "p99 delay"].map((h) => el("th", { text: h })))),
      el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", { colspan: 9, class: "muted", text: "no executions in this period" })))),
    el("div", { class: "muted", text: "since " + when(data.stats.since) + (data.stats.truncated ? " (newest executions only)" : "") + "; " + data.kept }));
  return box;
}

// Trigger delay (top half) and duration (bottom half) of each execution over time, one dot each;
// failed executions are ringed in red.
function chart(points) {
  const W = 1000, H = 320, L = 60, R = 10, T = 12, B = 28, mid = (H - B + T) / 2;
  const box = svg("svg", { class: "chart", id: "chart", viewBox: `0 0 ${W} ${H}`, role: "img" });
  if (!points.length) { box.append(svg("text", { x: W / 2 - 60, y: H / 2, text: "no executions to chart" })); return box; }
  const t0 = Date.parse(points[0].at), t1 = Math.max(Date.parse(points[points.length - 1].at), t0 + 1000);
  const x = (iso) => L + (Date.parse(iso) - t0) / (t1 - t0) * (W - L - R);
  const maxOf = (key) => Math.max(1, ...points.map((p) => p[key] || 0));
  const dMax = maxOf("delayMs"), uMax = maxOf("durationMs");
  const yDelay = (v) => mid - 6 - v / dMax * (mid - 6 - T);
  const yDur = (v) => H - B - v / uMax * (H - B - mid - 6);
  box.append(
    svg("line", { class: "axis", x1: L, y1: mid, x2: W - R, y2: mid }),
    svg("line", { class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B }),
    svg("line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B }),
    svg("text", { x: 4, y: T + 10, text: dMax + " ms" }), svg("text", { x: 4, y: mid - 8, text: "delay" }),
    svg("text", { x: 4, y: mid + 16, text: uMax + " ms" }), svg("text", { x: 4, y: H - B - 4, text: "duration" }),
    svg("text", { x: L, y: H - 8, text: when(points[0].at) }),
    svg("text", { x: W - R - 150, y: H - 8, text: when(points[points.length - 1].at) }));
  for (const p of points) {
    const cls = p.success ? "" : " failed";
    if (p.delayMs !== null) box.append(svg("circle", { class: "delay" + cls, cx: x(p.at), cy: yDelay(p.delayMs), r: 3 },
      svg("title", { text: when(p.at) + " item " + p.item + ": delay " + p.delayMs + " ms" })));
    if (p.durationMs !== null) box.append(svg("circle", { class: "duration" + cls, cx: x(p.at), cy: yDur(p.durationMs), r: 3 },
      svg("title", { text: when(p.at) + " item " + p.item + ": took " + p.durationMs + " ms" })));
  }
  return box;
}

// ---- audit ----------------------------------------------------------------------------------

async function auditPage(params) {
  closeStream();
  const q = new URLSearchParams(params);
  const form = el("form", { class: "filters", onsubmit: (ev) => {
    ev.preventDefault();
    const job = new FormData(ev.target).get("job");
    location.hash = "#/audit" + (job ? "?job=" + encodeURIComponent(job) : "");
  } },
    el("label", {}, "Job", el("input", { name: "job", size: 20, value: q.get("job") || "" })),
    el("button", { type: "submit" }, "Filter"));
  const heading = el("h1", { text: "Audit log" });
  let data;
  try {
    data = await api("GET", "/audit?" + q);
  } catch (e) {
    show(heading, form, el("div", { class: "problems" }, errorText(e.body || { error: e.message })));
    return;
  }
  const rows = data.records.map((r) => el("tr", { "data-audit": r.id, "data-operation": r.operation, "data-job": r.jobName },
    el("td", { text: when(r.at) }),
    el("td", { text: r.actor + (r.role ? " (" + r.role + ")" : "") }),
    el("td", { text: r.via }),
    el("td", { text: r.operation }),
    el("td", {}, el("a", { href: "#/job/" + encodeURIComponent(r.jobName), text: r.jobName })),
    el("td", { text: r.target || "" }),
    el("td", { class: r.outcome === "ok" ? "" : "problems", text: r.outcome }),
    el("td", {}, r.configBefore !== null || r.configAfter !== null ? el("details", {}, el("summary", { text: "config" }),
      el("div", { class: "config-change" },
        el("pre", { class: "before", text: r.configBefore || "" }),
        el("pre", { class: "after", text: r.configAfter || "" }))) : "")));
  show(heading, form, el("table", { id: "audit" },
    el("thead", {}, el("tr", {}, ["When", "Who", "Via", "Operation", "Job", "Target", "Outcome", "Config before / after"].map((h) => el("th", { text: h })))),
    el("tbody", {}, rows)));
}

// ---- new job --------------------------------------------------------------------------------

// A SCRIPT or HTTP job for the nodes started with --adopt; checked and written by the server
// (POST /api/jobs, the same check as `shardcronctl create`), whose refusal names each field.
function newJobPage() {
  closeStream();
  const field = (label, name, attrs) => el("label", {}, label, el("input", Object.assign({ name }, attrs || {})));
  const form = el("form", { id: "new-job", class: "new-job", onsubmit: async (ev) => {
    ev.preventDefault();
    const data = new FormData(ev.target);
    const text = (k) => { const v = (data.get(k) || "").trim(); return v === "" ? null : v; };
    const type = data.get("type");
    const body = {
      jobName: text("jobName") || "", type, cron: text("cron") || "", items: Number(data.get("items")),
      timeZone: text("timeZone"), label: text("label"), description: text("description"),
    };
    if (type === "SCRIPT") body.command = text("command");
    else { body.url = text("url"); body.method = text("method"); }
    if (await act("create " + body.jobName, "POST", "/jobs", body)) location.hash = "#/job/" + encodeURIComponent(body.jobName);
  } },
    field("Name", "jobName", { size: 24, required: true }),
    el("label", {}, "Type", el("select", { name: "type" }, el("option", { value: "SCRIPT", text: "SCRIPT" }), el("option", { value: "HTTP", text: "HTTP" }))),
    field("Cron", "cron", { size: 20, required: true, placeholder: "0 0/5 * * * ?" }),
    field("Items", "items", { type: "number", min: 1, value: 1, size: 4 }),
    field("Command (SCRIPT)", "command", { size: 40 }),
    field("URL (HTTP)", "url", { size: 40 }),
    field("Method (HTTP)", "method", { size: 8, placeholder: "GET" }),
    field("Time zone", "timeZone", { size: 12, placeholder: "GMT+08:00" }),
    field("Label", "label", { size: 12 }),
    field("Description", "description", { size: 40 }),
    el("div", { class: "actions" }, el("button", { type: "submit", "data-action": "create-job" }, "Create")));
  show(el("h1", { text: "New job" }),
    el("p", { class: "muted", text: "Nodes started with --adopt run it from its next fire." }), form);
}

// ---- routing --------------------------------------------------------------------------------

function route() {
  window.scrollTo(0, 0);
  document.getElementById("flash").hidden = true;
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, query] = hash.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  for (const a of document.querySelectorAll("header nav a")) {
    a.classList.toggle("active", a.dataset.nav === (["servers", "audit", "new", "workflow"].includes(parts[0]) ? parts[0] : "jobs"));
  }
  const failed = (e) => show(el("h1", { text: "Unavailable" }), ...errorText(e.body || { error: e.message }));
  if (parts[0] === "job" && parts[1]) jobPage(parts[1]);
  else if (parts[0] === "history" && parts[1]) historyPage(parts[1], query || "").catch(failed);
  else if (parts[0] === "output" && parts[1] && parts[2]) outputPage(parts[1], parts[2]).catch(failed);
  else if (parts[0] === "workflow") workflowPage(parts[1]);
  else if (parts[0] === "servers") serversPage().catch(failed);
  else if (parts[0] === "audit") auditPage(query || "").catch(failed);
  else if (parts[0] === "new") newJobPage();
  else jobsPage();
}

window.addEventListener("hashchange", route);
window.addEventListener("beforeunload", closeStream);
route();
