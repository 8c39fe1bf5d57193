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
    "job.done", "job.failed",
  ]);

  function describe(ev) {
    const p = ev.payload || {};
    switch (ev.type) {
      case "job.status": return "status → " + p.status + (p.error ? " (" + p.error + ")" : "");
      case "job.engine": return "engine: " + p.engine + " — " + p.reason;
      case "plan.ready": return "plan v" + p.version + " ready: " + ((p.plan && p.plan.title) || "");
      case "plan.updated": return "plan v" + p.version + " saved by " + p.author;
      case "plan.accepted": return "plan v" + p.version + " accepted";
      case "step.queued": return "step " + p.step + " queued";
      case "step.started": return "step " + p.step + " started: " + (p.title || "") + (p.attempt > 1 ? " (attempt " + p.attempt + ")" : "");
      case "step.activity":
        if (p.kind === "search") return "[" + (p.step || "") + "] search: " + p.query;
        if (p.kind === "search_results") return "[" + (p.step || "") + "] " + p.count + " results for " + p.query;
        if (p.kind === "fetch") return "[" + (p.step || "") + "] reading " + p.url;
        if (p.kind === "fetch_failed") return "[" + (p.step || "") + "] could not read " + p.url + ": " + p.error;
        if (p.kind === "code") return "[" + (p.step || "") + "] running code (" + p.lines + " lines)";
        if (p.kind === "code_result") return "[" + (p.step || "") + "] code exited " + p.exit_code;
        if (p.kind === "provider_error") return "search provider " + p.provider + " failed: " + p.error;
        return "[" + (p.step || "") + "] " + p.kind + (p.query ? ": " + p.query : "");
      case "source.added": return "source [" + p.number + "] " + (p.title || p.url);
      case "step.completed": return "step " + p.step + " done";
      case "step.failed": return "step " + p.step + " failed: " + p.error;
      case "step.requeued": return "step " + p.step + " re-queued: " + p.reason;
      case "report.started": return "writing the report";
      case "report.ready": return "report ready (v" + p.version + ")";
      case "artifact.started": return "rendering " + p.kind;
      case "artifact.ready": return "file ready: " + p.name;
      case "artifact.failed": return p.kind + " failed: " + p.error;
      case "job.failed": return "FAILED: " + p.error;
      case "job.done": return "done" + (p.answer ? ": " + p.answer : "");
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
    if (!card || !pre || document.getElementById("report")) return;
    card.hidden = false;
    pre.hidden = false;
    pre.textContent = reportText;
  }

  function refreshPanel() {
    const editor = document.getElementById("plan-editor");
    if (editor && editor.contains(document.activeElement)) return; // don't wipe someone's edits
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
      conn.textContent = "live";
      conn.className = "conn live";
      socket.send(JSON.stringify({type: "subscribe", after: lastSeq}));
    };
    socket.onmessage = function (msg) {
      try { handle(JSON.parse(msg.data)); } catch (e) { /* ignore malformed */ }
    };
    socket.onclose = function (e) {
      conn.className = "conn down";
      if (e.code === 4403) { conn.textContent = "not allowed"; return; }
      conn.textContent = "reconnecting…";
      const wait = Math.min(delay, 10000) * (0.8 + Math.random() * 0.4);
      delay = Math.min(delay * 2, 10000);
      setTimeout(connect, wait);
    };
  }

  window.__jobStream = {lastSeq: function () { return lastSeq; }, drop: function () { if (socket) socket.close(); }};
  connect();
})();
