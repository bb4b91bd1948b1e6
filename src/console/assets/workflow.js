// The console's workflow page (#/workflow, #/workflow/JOB), loaded before app.js, whose helpers
// (el, svg, api, show, badge, when) it calls once the page is routed to.
"use strict";

// ---- workflows ------------------------------------------------------------------------------

// The workflow graph (every job in a workflow, or the part linked to one job), each step in its
// layer with its state in the graph's newest workflow run (waiting until it has a record of it),
// its own last run, and a link to that run's rows in the History tab. The
// registry's records change as steps run: the page reads the graph again every two seconds while
// it is shown.
const STEP_W = 190, STEP_H = 64, GAP_X = 70, GAP_Y = 24;

function workflowPage(name) {
  closeStream();
  clearTimeout(workflowPage.timer);
  const here = location.hash;
  const heading = el("h1", {}, name ? ["Workflow of ", el("a", { href: "#/job/" + encodeURIComponent(name), text: name })] : "Workflows");
  const box = el("div", { id: "workflow" }, el("p", { class: "muted", text: "Loading\u2026" }));
  show(heading, box);
  const load = async () => {
    if (location.hash !== here) return;
    try {
      const g = await api("GET", "/workflow" + (name ? "?job=" + encodeURIComponent(name) : ""));
      if (location.hash !== here) return;
      drawWorkflow(g, box);
    } catch (e) {
      box.replaceChildren(el("div", { class: "problems" }, errorText(e.body || { error: e.message })));
    }
    clearTimeout(workflowPage.timer);
    workflowPage.timer = setTimeout(load, 2000);
  };
  load();
}

// Where a step's runs are in the History tab: its job, and its workflow run when it has one.
function stepHistory(step) {
  const run = step.last ? "?workflowRun=" + encodeURIComponent(step.last.run) : "";
  return "#/history/" + encodeURIComponent(step.job) + run;
}

function stepCounts(items) {
  const parts = ["success", "failed", "timeout", "skipped", "running", "unreadable"].filter((k) => items[k] > 0).map((k) => items[k] + " " + k);
  return parts.join(", ") || "no item record";
}

function drawWorkflow(g, box) {
  if (!g.steps.length) {
    box.replaceChildren(el("p", { class: "muted", text: "No workflow: no job names another in shardcron.after." }));
    return;
  }
  const rows = {};
  const at = {};
  for (const s of g.steps) {
    const row = rows[s.layer] = (rows[s.layer] || 0) + 1;
    at[s.job] = { x: 10 + s.layer * (STEP_W + GAP_X), y: 10 + (row - 1) * (STEP_H + GAP_Y) };
  }
  const width = 20 + Math.max(...g.steps.map((s) => s.layer + 1)) * (STEP_W + GAP_X) - GAP_X;
  const height = 20 + Math.max(...Object.values(rows)) * (STEP_H + GAP_Y) - GAP_Y;
  const edges = g.steps.flatMap((s) => s.after.filter((up) => at[up]).map((up) => svg("line", {
    class: "edge", x1: at[up].x + STEP_W, y1: at[up].y + STEP_H / 2, x2: at[s.job].x, y2: at[s.job].y + STEP_H / 2,
    "marker-end": "url(#arrow)" })));
  const nodes = g.steps.map((s) => {
    const state = s.current ? s.current.state : "waiting";
    const p = at[s.job];
    return svg("a", { href: stepHistory(s), class: "step", "data-job": s.job, "data-state": state },
      svg("rect", { x: p.x, y: p.y, width: STEP_W, height: STEP_H, rx: 5, class: "step " + state }),
      svg("title", { text: s.job + ": " + state + (s.problem ? " (" + s.problem + ")" : "") }),
      svg("text", { x: p.x + 10, y: p.y + 22, class: "name", text: s.job.length > 24 ? s.job.slice(0, 23) + "\u2026" : s.job }),
      svg("text", { x: p.x + 10, y: p.y + 44, class: "state", text: state + (s.on ? " \u00b7 on " + s.on : "") }));
  });
  const graph = svg("svg", { class: "workflow", id: "workflow-graph", viewBox: "0 0 " + width + " " + height, width, height },
    svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 8, markerHeight: 8, orient: "auto" },
      svg("path", { d: "M 0 0 L 10 5 L 0 10 z" }))),
    edges, nodes);
  const table = el("table", { id: "workflow-steps" },
    el("thead", {}, el("tr", {}, ["Job", "After", "Downstream", "In the newest run", "Its last run (UTC)", "Outcome", "Items", "Decision", ""].map((h) => el("th", { text: h })))),
    el("tbody", {}, g.steps.map((s) => el("tr", { "data-job": s.job, "data-state": s.current ? s.current.state : "waiting" },
      el("td", {}, el("a", { href: "#/job/" + encodeURIComponent(s.job), text: s.job }),
        s.problem ? el("div", { class: "problems", text: s.problem }) : null),
      el("td", { text: s.after.length ? s.after.join(", ") + " (on " + s.on + ")" : "-" }),
      el("td", { text: s.downstream.join(", ") || "-" }),
      el("td", {}, badge(s.current ? s.current.state : "waiting")),
      el("td", { text: s.last ? s.last.run + (s.last.at ? " (" + when(s.last.at) + ")" : "") : "none recorded" }),
      el("td", {}, badge(s.last ? s.last.state : "waiting")),
      el("td", { text: s.last ? stepCounts(s.last.items) : "-" }),
      el("td", { text: s.last && s.last.decision ? s.last.decision : "-" }),
      el("td", {}, el("a", { class: "history-link", href: stepHistory(s), text: "History" }))))));
  box.replaceChildren(graph,
    el("p", { class: "muted" }, "Each step's state in the newest workflow run" + (g.latest ? " (the newest of the workflow: " + g.latest + ")" : "") + "; a step links to its last run's rows in the History tab."),
    table);
}
