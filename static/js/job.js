// Live job page: subscribe after the last seq seen, replay, stream, reconnect with backoff.
(function () {
  "use strict";
  const root = document.getElementById("job");
  if (!root) return;
  const jobId = root.dataset.jobId;
  const timeline = document.getElementById("timeline");
  const conn = document.getElementById("conn");
  let lastSeq = 0;
  let socket = null;
  let delay = 500;
  let reportText = "";
  let refreshTimer = null;
  const seen = new Set();

  const REFRESH_TYPES = new Set([
    "job.status", "job.engine", "plan.ready", "plan.accepted", "step.queued", "step.started", "step.completed",
    "step.failed", "step.cancelled", "step.requeued", "report.ready", "artifact.ready", "artifact.failed",
    "job.done", "job.failed", "followup.asked", "followup.done", "followup.failed",
  ]);

  // Labels come translated from the server (#job[data-i18n], see jobs/_timeline_i18n.html); English otherwise.
  const EN = {
    status: "status → {status}", engine: "engine: {engine} — {reason}",
    plan_ready: "plan v{version} ready: {title}", plan_updated: "plan v{version} saved by {author}",
    plan_accepted: "plan v{version} accepted", step_queued: "step {step} queued",
    step_started: "step {step} started: {title}", attempt: "(attempt {attempt})",
    search: "search: {query}", search_results: "{count} results for {query}", fetch: "reading {url}",
    fetch_failed: "could not read {url}: {error}", code: "running code ({lines} lines)",
    code_result: "code exited {code}", provider_error: "search provider {provider} failed: {error}",
    source_added: "source [{number}] {title}", step_completed: "step {step} done",
    step_failed: "step {step} failed: {error}", step_requeued: "step {step} re-queued: {reason}",
    report_started: "writing the report", report_ready: "report ready (v{version})",
    artifact_started: "rendering {kind}", artifact_ready: "file ready: {name}",
    artifact_failed: "{kind} failed: {error}", job_failed: "FAILED: {error}", job_done: "done",
    job_done_answer: "done: {answer}", conn_live: "live", conn_forbidden: "not allowed",
    conn_reconnecting: "reconnecting…",
  };
  const I18N = (function () {
    try { return JSON.parse(root.dataset.i18n || "{}") || {}; } catch (e) { return {}; }
  })();

  function t(key, vars) {
    const template = (typeof I18N[key] === "string" && I18N[key]) || EN[key] || key;
    return template.replace(/\{(\w+)\}/g, function (m, name) {
      const value = vars ? vars[name] : undefined;
      return value === undefined || value === null ? "" : String(value);
    });
  }

  function statusLabel(status) {
    return (I18N.statuses && I18N.statuses[status]) || status;
  }

  function describe(ev) {
    const p = ev.payload || {};
    const at = "[" + (p.step || "") + "] ";
    switch (ev.type) {
      case "job.status": return t("status", {status: statusLabel(p.status)}) + (p.error ? " (" + p.error + ")" : "");
      case "job.engine": return t("engine", p);
      case "plan.ready": return t("plan_ready", {version: p.version, title: (p.plan && p.plan.title) || ""});
      case "plan.updated": return t("plan_updated", p);
      case "plan.accepted": return t("plan_accepted", p);
      case "step.queued": return t("step_queued", p);
      case "step.started": return t("step_started", p) + (p.attempt > 1 ? " " + t("attempt", p) : "");
      case "step.activity":
        if (p.kind === "search") return at + t("search", p);
        if (p.kind === "search_results") return at + t("search_results", p);
        if (p.kind === "fetch") return at + t("fetch", p);
        if (p.kind === "fetch_failed") return at + t("fetch_failed", p);
        if (p.kind === "code") return at + t("code", p);
        if (p.kind === "code_result") return at + t("code_result", {code: p.exit_code});
        if (p.kind === "provider_error") return t("provider_error", p);
        return at + p.kind + (p.query ? ": " + p.query : "");
      case "source.added": return t("source_added", {number: p.number, title: p.title || p.url});
      case "step.completed": return t("step_completed", p);
      case "step.failed": return t("step_failed", p);
      case "step.requeued": return t("step_requeued", p);
      case "report.started": return t("report_started");
      case "report.ready": return t("report_ready", p);
      case "artifact.started": return t("artifact_started", p);
      case "artifact.ready": return t("artifact_ready", p);
      case "artifact.failed": return t("artifact_failed", p);
      case "job.failed": return t("job_failed", p);
      case "job.done": return p.answer ? t("job_done_answer", p) : t("job_done");
      default: return ev.type;
    }
  }

  function addEntry(ev) {
    const li = document.createElement("li");
    li.className = "ev ev-" + ev.type.replace(/\./g, "-");
    li.dataset.seq = String(ev.seq);
    const time = document.createElement("time");
    time.textContent = new Date(ev.ts * 1000).toLocaleTimeString();
    const text = document.createElement("span");
    text.textContent = " " + describe(ev);
    li.appendChild(time);
    li.appendChild(text);
    timeline.appendChild(li);
  }

  function showStream() {
    const card = document.getElementById("report-card");
    const pre = document.getElementById("report-stream");
    if (!card || !pre || !reportText || document.getElementById("report")) return;
    card.hidden = false;
    pre.hidden = false;
    pre.textContent = reportText;
  }

  function refreshPanel() {
    const editor = document.getElementById("plan-editor");
    if (editor && editor.contains(document.activeElement)) return; // don't wipe someone's edits
    const asking = document.getElementById("followup-question");
    if (asking && asking === document.activeElement && asking.value) return;
    fetch("/jobs/" + jobId + "/panel/", {credentials: "same-origin"})
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        document.getElementById("panel").innerHTML = html;  // server-rendered, sanitized
        showStream();
      })
      .catch(function () {});
  }

  function scheduleRefresh() {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(refreshPanel, 250);
  }

  function handle(ev) {
    if (typeof ev.seq !== "number" || ev.seq <= lastSeq || seen.has(ev.seq)) return;
    seen.add(ev.seq);
    lastSeq = ev.seq;
    root.dataset.lastSeq = String(lastSeq);
    if (ev.type === "report.delta") {
      reportText += (ev.payload && ev.payload.text) || "";
      showStream();
      return;
    }
    if (ev.type === "followup.delta") {  // stream a follow-up answer into its box
      const box = document.getElementById("followup-stream-" + ev.payload.number);
      if (box) { if (!box.dataset.live) { box.textContent = ""; box.dataset.live = "1"; } box.textContent += ev.payload.text || ""; }
      return;
    }
    addEntry(ev);
    if (ev.type === "plan.updated" || ev.type === "plan.ready") {
      const editor = document.getElementById("plan-editor");
      if (editor && Number(editor.dataset.version) < ev.payload.version) {
        const stale = document.getElementById("plan-stale");
        if (stale) stale.hidden = false;
      }
    }
    if (ev.type === "job.status") root.dataset.status = ev.payload.status;
    if (REFRESH_TYPES.has(ev.type)) scheduleRefresh();
  }

  function connect() {
    const proto = window.location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(proto + window.location.host + "/ws/jobs/" + jobId + "/");
    socket.onopen = function () {
      delay = 500;
      conn.textContent = t("conn_live");
      conn.className = "conn live";
      socket.send(JSON.stringify({type: "subscribe", after: lastSeq}));
    };
    socket.onmessage = function (msg) {
      try { handle(JSON.parse(msg.data)); } catch (e) { /* ignore malformed */ }
    };
    socket.onclose = function (e) {
      conn.className = "conn down";
      if (e.code === 4403) { conn.textContent = t("conn_forbidden"); return; }
      conn.textContent = t("conn_reconnecting");
      const wait = Math.min(delay, 10000) * (0.8 + Math.random() * 0.4);
      delay = Math.min(delay * 2, 10000);
      setTimeout(connect, wait);
    };
  }

  window.__jobStream = {lastSeq: function () { return lastSeq; }, drop: function () { if (socket) socket.close(); }};
  // Re-subscribe now and then: replays anything a lost live message or a Redis restart skipped.
  setInterval(function () {
    if (socket && socket.readyState === WebSocket.OPEN) {
      socket.send(JSON.stringify({type: "subscribe", after: lastSeq}));
    }
  }, 15000);
  connect();
})();
