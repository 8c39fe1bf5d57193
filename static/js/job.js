// Live job page: subscribe after the last seq seen, replay, stream, reconnect with backoff.
// Replayed events (seq <= the seq the page was rendered at) only build the timeline and the step cards;
// live events patch the panel part by part and never replace a plan editor the user is working in.
(function () {
  "use strict";
  const root = document.getElementById("job");
  if (!root) return;
  root.classList.add("js");
  const jobId = root.dataset.jobId;
  const renderedSeq = Number(root.dataset.renderedSeq || "0");
  const timeline = document.getElementById("timeline");
  const conn = document.getElementById("conn");
  let lastSeq = 0;
  let socket = null;
  let delay = 500;
  let reportText = "";
  const followupText = {};  // follow-up number -> streamed text so far (kept across panel refreshes)
  let refreshTimer = null;
  const seen = new Set();
  const plans = {};        // plan version -> plan (from plan.ready / plan.updated)
  const stepTitles = {};   // step id -> title
  const cards = {};        // step id -> card state

  const REFRESH_TYPES = new Set([
    "job.status", "job.engine", "plan.ready", "plan.updated", "plan.accepted", "step.queued", "step.started",
    "step.completed", "step.failed", "step.cancelled", "step.requeued", "step.synthesizing", "run.completed",
    "run.failed", "report.ready",
    "artifact.ready",
    "artifact.failed", "job.done", "job.failed", "search.checked", "followup.asked", "followup.done",
    "followup.failed", "followup.requeued", "report.check_failed",
  ]);

  // Labels come translated from the server (#job[data-i18n], see jobs/_timeline_i18n.html); English otherwise.
  const EN = {
    status: "Status: {status}", engine: "Using the {engine} — {reason}",
    plan_ready: "The planner proposed plan v{version}: {title}", plan_updated: "Plan v{version} saved by {author}",
    plan_accepted: "Plan v{version} accepted; research starts", step_queued: "“{title}” is waiting to start",
    step_started: "Started “{title}”", attempt: "(attempt {attempt})",
    search: "“{title}”: searching for {query}", search_results: "“{title}”: {count} results for {query}",
    kb: "“{title}”: searching your knowledge base for {query}",
    fetch: "“{title}”: reading {host}", fetch_failed: "“{title}”: could not read {host}",
    code: "“{title}”: running Python ({lines} lines)", code_result: "“{title}”: the code finished (exit code {code})",
    code_refused: "“{title}”: the Python sandbox is unavailable",
    provider_error: "Search provider {provider} did not answer",
    rank: "“{title}”: picked {selected} of {candidates} sentences",
    read_more: "“{title}”: reading further: {reason}", think: "“{title}”: {text}",
    tool: "“{title}”: used the tool {name}", background_failed: "The background search failed",
    source_added: "Found source: {title} ({host})", step_completed: "Finished “{title}”",
    step_failed: "“{title}” failed", step_cancelled: "“{title}” was cancelled",
    step_requeued: "“{title}” will run again: {reason}",
    report_started: "Writing the report", report_ready: "The report is ready (v{version})",
    report_checking: "Checking the edited report in the background ({chars} characters)",
    report_check_failed: "The edited report could not be saved: {error}",
    report_check_requeued: "The edited report will be checked again: {reason}",
    followup_requeued: "Follow-up {number} will be answered again: {reason}",
    artifact_started: "Making the {kind}", artifact_ready: "File ready: {name}",
    artifact_failed: "The {kind} could not be made", job_failed: "The job failed", job_done: "Done",
    search_ok: "Web search is reachable", search_down: "No web search provider could be reached",
    search_kb_only: "Web search is off: the research searches the knowledge base alone",
    search_failed: "“{title}”: the search failed", job_cancelling: "Cancelling…",
    followup_asked: "Follow-up {number} asked", followup_done: "Follow-up {number} answered",
    followup_failed: "Follow-up {number} could not be answered",
    search_kb_fallback: "No web search provider could be reached: the research searches the knowledge base alone",
    search_none: "Web search is off and no knowledge base is attached: nothing can be searched",
    conn_live: "live", conn_forbidden: "not allowed", conn_reconnecting: "reconnecting…",
    queries: "Searches", sources: "Sources found", pages: "Pages read", code_title: "Code run", finding: "Finding",
    results: "{count} results", lines: "{lines} lines", exit: "exit code {code}", unreadable: "could not read",
    queued: "waiting", running: "running", done: "done", failed: "failed", cancelled: "cancelled",
    run_label: "Run {n}", run_queued: "“{title}”: run {n} is waiting ({emphasis})",
    run_started: "“{title}”: run {n} started", run_completed: "“{title}”: run {n} finished",
    run_failed: "“{title}”: run {n} failed", run_cancelled: "“{title}”: run {n} was cancelled",
    run_requeued: "“{title}”: run {n} will run again: {reason}",
    step_synthesizing: "“{title}”: merging the runs into one finding",
    synthesis: "“{title}”: merging {runs} runs", synthesis_lost: "({lost} lost)",
    synthesizing: "merging", synthesized: "Synthesized finding", run_sources: "{count} sources",
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

  function label(group, code) { return (I18N[group] && I18N[group][code]) || code; }

  function host(url) {
    try { return new URL(url).host || url; } catch (e) { return url || ""; }
  }

  function place(url) {  // host and a short path: enough to tell pages apart
    try {
      const u = new URL(url);
      const path = u.pathname.length > 32 ? u.pathname.slice(0, 31) + "…" : u.pathname;
      return u.host + (path === "/" ? "" : path);
    } catch (e) { return url || ""; }
  }

  function titleOf(step) { return stepTitles[step] || step || ""; }

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function pageLocale() {
    const lang = document.documentElement.lang || "";
    try { return Intl.DateTimeFormat.supportedLocalesOf([lang]).length ? lang : undefined; } catch (e) { return undefined; }
  }

  // True of this job: "reachable" only when a web provider answered (events before issue 33 have no web_ok).
  function searchText(p) {
    const webOk = p.web_ok === undefined ? (p.ok && p.web !== false && !p.kb) : p.web_ok;
    if (p.web === false) return p.kb ? t("search_kb_only") : t("search_none");
    if (webOk) return t("search_ok");
    return p.kb ? t("search_kb_fallback") : t("search_down");
  }

  function describe(ev) {
    const p = ev.payload || {};
    const v = Object.assign({}, p, {title: titleOf(p.step)});
    switch (ev.type) {
      case "job.status": return t("status", {status: label("statuses", p.status)});
      case "job.engine": return t("engine", {engine: label("engines", p.engine), reason: label("reasons", p.reason || "")});
      case "plan.ready": return t("plan_ready", {version: p.version, title: (p.plan && p.plan.title) || ""});
      case "plan.updated": return t("plan_updated", {version: p.version, author: label("authors", p.author)});
      case "plan.accepted": return t("plan_accepted", p);
      case "search.checked": return searchText(p);
      case "step.queued": return t("step_queued", v);
      case "run.queued": case "run.started": case "run.completed": case "run.failed": case "run.cancelled":
      case "run.requeued":
        return t(ev.type.replace(".", "_"), Object.assign(v, {n: Number(p.run) + 1})) +
          (ev.type === "run.started" && p.attempt > 1 ? " " + t("attempt", p) : "");
      case "step.synthesizing": return t("step_synthesizing", v);
      case "step.started": return t("step_started", v) + (p.attempt > 1 ? " " + t("attempt", p) : "");
      case "step.activity":
        switch (p.kind) {
          case "search": case "search_results": case "kb": case "code": case "code_refused": case "rank":
          case "tool": case "read_more":
            return t(p.kind, v);
          case "fetch": case "fetch_failed": return t(p.kind, Object.assign(v, {host: host(p.url)}));
          case "code_result": return t("code_result", Object.assign(v, {code: p.exit_code}));
          case "think": return t("think", Object.assign(v, {text: String(p.text || "").slice(0, 160)}));
          // The label comes with the event (the provider's class declares it): no provider names here.
          case "provider_error": return t("provider_error", {provider: p.label || p.provider});
          case "background_failed": return t("background_failed");
          case "synthesis": return t("synthesis", v) + (p.lost ? " " + t("synthesis_lost", p) : "");
          case "search_failed": return t("search_failed", v);
          default: return "";  // an activity with no words for it is not listed as "other activity"
        }
      case "source.added": return t("source_added", {number: p.number, title: p.title || host(p.url), host: host(p.url)});
      case "step.completed": return t("step_completed", v);
      case "step.failed": return t("step_failed", v);
      case "step.cancelled": return t("step_cancelled", v);
      case "step.requeued": return t("step_requeued", v);
      case "report.started": return t("report_started");
      case "report.ready": return t("report_ready", p);
      case "report.checking": return t("report_checking", p);
      case "report.check_failed": return t("report_check_failed", p);
      case "report.check_requeued": return t("report_check_requeued", p);
      case "followup.requeued": return t("followup_requeued", p);
      case "artifact.started": return t("artifact_started", {kind: label("outputs", p.kind)});
      case "artifact.ready": return t("artifact_ready", p);
      case "artifact.failed": return t("artifact_failed", {kind: label("outputs", p.kind)});
      case "job.failed": return t("job_failed");
      case "job.done": return t("job_done");
      case "job.cancelling": return t("job_cancelling");
      case "followup.asked": return t("followup_asked", p);
      case "followup.done": return t("followup_done", p);
      case "followup.failed": return t("followup_failed", p);
      default: return "";
    }
  }

  // --- timeline: follows the newest entry unless the user scrolled up ------------------------------
  function nearBottom() { return timeline.scrollHeight - timeline.scrollTop - timeline.clientHeight < 40; }

  function addEntry(ev) {
    const text = describe(ev);
    if (!text) return;
    const follow = nearBottom();
    const li = el("li", "ev ev-" + ev.type.replace(/\./g, "-"));
    li.dataset.seq = String(ev.seq);
    // In the page's language (zh-hans: 上午9:36:07), not the browser's.
    const time = el("time", "", new Date(ev.ts * 1000).toLocaleTimeString(pageLocale()));
    li.appendChild(time);
    li.appendChild(el("span", "", " " + text));
    timeline.appendChild(li);
    if (follow) timeline.scrollTop = timeline.scrollHeight;
  }

  // --- step cards ------------------------------------------------------------------------------------
  function section(card, key) {
    if (!card.sections[key]) {
      const box = el("div", "card-section sec-" + key);
      box.appendChild(el("h4", "", t(key === "code" ? "code_title" : key)));
      const list = el("ul", "");
      box.appendChild(list);
      card.body.appendChild(box);
      card.sections[key] = list;
    }
    return card.sections[key];
  }

  function clearError(card) {
    Array.prototype.forEach.call(card.body.querySelectorAll(".card-error"), function (box) { box.remove(); });
  }

  function cardFor(step) {
    if (!step) return null;
    if (cards[step]) return cards[step];
    const wrap = document.getElementById("step-cards");
    const holder = document.getElementById("cards");
    if (!wrap || !holder) return null;
    wrap.hidden = false;
    const node = el("article", "step-card card-queued");
    node.dataset.step = step;
    const head = el("header", "");
    const title = el("h3", "", titleOf(step));
    const chip = el("span", "chip", t("queued"));
    head.appendChild(title);
    head.appendChild(chip);
    node.appendChild(head);
    const body = el("div", "card-body");
    node.appendChild(body);
    holder.appendChild(node);
    cards[step] = {node: node, title: title, chip: chip, body: body, sections: {}, queries: {}, pages: {}, runs: {}};
    return cards[step];
  }

  function setState(card, state) {
    card.node.className = "step-card card-" + state + (card.runsBox ? " heavy" : "");
    card.chip.textContent = t(state);
  }

  // --- heavy mode: the parallel runs of a step, side by side inside its card ----------------------
  function laneFor(card, index) {
    if (typeof index !== "number") return null;
    if (!card.runsBox) {
      card.runsBox = el("div", "runs");
      card.body.insertBefore(card.runsBox, card.body.firstChild);
      card.node.classList.add("heavy");
    }
    if (!card.runs[index]) {
      for (let i = 0; i <= index; i++) {  // lanes stay in run order whatever event arrives first
        if (card.runs[i]) continue;
        const node = el("section", "run-lane run-queued");
        node.dataset.run = String(i);
        const head = el("header", "");
        head.appendChild(el("strong", "", t("run_label", {n: i + 1})));
        const chip = el("span", "chip", t("queued"));
        head.appendChild(chip);
        node.appendChild(head);
        const emphasis = el("p", "emphasis muted", "");
        node.appendChild(emphasis);
        const queries = el("ul", "run-queries");
        node.appendChild(queries);
        const count = el("p", "run-sources muted", "");
        node.appendChild(count);
        const finding = el("p", "run-finding", "");
        node.appendChild(finding);
        const next = Object.keys(card.runs).map(Number).filter(function (k) { return k > i; }).sort()[0];
        card.runsBox.insertBefore(node, next === undefined ? null : card.runs[next].node);
        card.runs[i] = {node: node, chip: chip, emphasis: emphasis, queries: queries, count: count,
          finding: finding, sources: 0, seen: {}};
      }
    }
    return card.runs[index];
  }

  function setLane(lane, state) {
    lane.node.className = "run-lane run-" + state;
    lane.chip.textContent = t(state);
  }

  function updateLane(card, ev) {
    const p = ev.payload || {};
    const lane = laneFor(card, p.run);
    if (!lane) return false;
    if (p.emphasis) lane.emphasis.textContent = p.emphasis;
    if (ev.type === "run.queued" || ev.type === "run.requeued") setLane(lane, "queued");
    else if (ev.type === "run.started") setLane(lane, "running");
    else if (ev.type === "run.cancelled") setLane(lane, "cancelled");
    else if (ev.type === "run.completed") {
      setLane(lane, "done");
      lane.finding.textContent = p.finding ? String(p.finding).replace(/^[-*]\s+/, "") + "…" : "";
      if (typeof p.sources === "number") lane.count.textContent = t("run_sources", {count: p.sources});
    } else if (ev.type === "run.failed") {
      setLane(lane, "failed");
      lane.finding.textContent = p.error || "";
      lane.finding.className = "run-finding bad";
    } else if (ev.type === "source.added") {
      lane.sources += 1;
      lane.count.textContent = t("run_sources", {count: lane.sources});
      return false;  // the card's source list shows it too
    } else if (ev.type === "step.activity" && (p.kind === "search" || p.kind === "kb")) {
      if (!lane.seen[p.query]) {
        lane.seen[p.query] = true;
        lane.queries.appendChild(el("li", "query", p.query || ""));
      }
    } else {
      return false;
    }
    return true;
  }

  function updateCard(ev) {
    const p = ev.payload || {};
    if (ev.type === "plan.ready" || ev.type === "plan.updated") {
      if (p.plan) plans[p.version] = p.plan;
      return;
    }
    if (ev.type === "plan.accepted") {
      const plan = plans[p.version];
      if (plan && plan.steps) plan.steps.forEach(function (s) { stepTitles[s.id] = s.title; });
      return;
    }
    if (ev.type === "step.started" && p.title) stepTitles[p.step] = p.title;
    const card = cardFor(p.step);
    if (!card) return;
    card.title.textContent = titleOf(p.step);
    if (ev.type === "step.started" && p.runs) {
      for (let i = 0; i < p.runs; i++) laneFor(card, i);
    }
    if (typeof p.run === "number" && updateLane(card, ev)) return;
    if (ev.type.indexOf("run.") === 0) return;
    if (ev.type === "step.queued") setState(card, p.synthesis ? "synthesizing" : "queued");
    else if (ev.type === "step.synthesizing") setState(card, "synthesizing");
    else if (ev.type === "step.started") { setState(card, "running"); clearError(card); }
    else if (ev.type === "step.cancelled") setState(card, "cancelled");
    else if (ev.type === "step.requeued") setState(card, "queued");
    else if (ev.type === "step.completed") {
      setState(card, "done");
      if (p.finding) {
        const f = section(card, "finding");
        if (p.synthesized) f.previousSibling.textContent = t("synthesized");
        f.textContent = "";
        // The finding comes as one line (the step's Markdown list joined): "… first. - Second …" would
        // read as one run-on sentence with dashes, so each of its items starts a line of its own.
        const text = String(p.finding).replace(/^[-*]\s+/, "");
        const li = el("li", "finding");
        text.split(/(?<=[.!?。！？…”"')）])\s+[-*]\s+/).forEach(function (item, i) {
          if (i) li.appendChild(document.createElement("br"));
          li.appendChild(document.createTextNode(item));
        });
        if (p.finding.length >= 280) li.appendChild(document.createTextNode("…"));
        f.appendChild(li);
      }
    } else if (ev.type === "step.failed") {
      setState(card, "failed");
      clearError(card);  // a retry that fails again replaces the old "failed" entry
      const box = el("details", "card-error");
      box.appendChild(el("summary", "", t("failed")));
      box.appendChild(el("code", "", p.error || ""));
      card.body.appendChild(box);
    } else if (ev.type === "source.added") {
      const li = el("li", "source");
      const a = el("a", "", p.title || host(p.url));
      if (/^https?:/.test(p.url || "")) { a.href = p.url; a.rel = "noopener noreferrer"; a.target = "_blank"; }
      li.appendChild(a);
      li.appendChild(el("small", "host", " " + host(p.url)));
      section(card, "sources").appendChild(li);
    } else if (ev.type === "step.activity") {
      if (p.kind === "search" || p.kind === "kb") {
        if (card.queries[p.query]) return;  // a retry of the same query: listed once
        const li = el("li", "query", p.query || "");
        section(card, "queries").appendChild(li);
        card.queries[p.query] = li;
      } else if (p.kind === "search_results") {
        const li = card.queries[p.query];
        if (li) li.appendChild(el("small", "", " · " + t("results", p)));
      } else if (p.kind === "fetch" || p.kind === "fetch_failed") {
        // Heavy runs of a step often read the same page: listed once (a failure, then a success, both shown).
        const key = p.kind + " " + p.url;
        if (card.pages[key]) return;
        card.pages[key] = true;
        const li = p.kind === "fetch" ? el("li", "page", place(p.url))
          : el("li", "page bad", place(p.url) + " — " + t("unreadable"));
        li.title = p.url || "";  // the whole address on hover: place() shortens it
        section(card, "pages").appendChild(li);
      } else if (p.kind === "code") {
        section(card, "code").appendChild(el("li", "code", t("lines", p)));
      } else if (p.kind === "code_result") {
        const li = el("li", p.exit_code === 0 ? "code ok" : "code bad", t("exit", {code: p.exit_code}));
        if (p.stdout) li.appendChild(el("pre", "stdout", String(p.stdout).slice(-300)));
        section(card, "code").appendChild(li);
      }
    }
  }

  // --- the panel: swap parts, keep the editor and the cards --------------------------------------
  function showStream() {
    const card = document.getElementById("report-card");
    const pre = document.getElementById("report-stream");
    if (!card || !pre || !reportText || document.getElementById("report")) return;
    card.hidden = false;
    pre.hidden = false;
    pre.textContent = reportText;
  }

  function applyPanel(html) {
    const panel = document.getElementById("panel");
    const tpl = document.createElement("template");
    tpl.innerHTML = html;  // server-rendered, sanitized
    const fresh = Array.prototype.filter.call(tpl.content.children, function (n) { return n.dataset.part; });
    const names = new Set(fresh.map(function (n) { return n.dataset.part; }));
    Array.prototype.slice.call(panel.children).forEach(function (old) {
      if (old.dataset.part && !names.has(old.dataset.part)) old.remove();
    });
    let prev = null;
    fresh.forEach(function (node) {
      const name = node.dataset.part;
      const old = panel.querySelector(':scope > [data-part="' + name + '"]');
      const typed = old && Array.prototype.some.call(old.querySelectorAll("textarea, input[type=text]"),
        function (f) { return f.value && f.value !== f.defaultValue; });
      const keep = old && (old.hasAttribute("data-keep") || (typed && name !== "plan" && node.dataset.part === name) ||
        (name === "plan" && old.querySelector("#plan-editor") && node.querySelector("#plan-editor")));
      if (keep) {
        if (name === "plan") {  // a newer version arrived: say so, but keep every keystroke
          const mine = Number(old.querySelector("#plan-editor").dataset.version);
          const theirs = Number(node.querySelector("#plan-editor").dataset.version);
          const stale = document.getElementById("plan-stale");
          if (stale && theirs > mine) stale.hidden = false;
          const warn = node.querySelector("#search-warning");
          if (warn && !old.querySelector("#search-warning")) {
            old.querySelector("#plan-editor h2").insertAdjacentElement("afterend", warn);
          }
        }
        prev = old;
        return;
      }
      if (old) old.replaceWith(node);
      else if (prev) prev.insertAdjacentElement("afterend", node);
      else panel.insertBefore(node, panel.firstChild);
      prev = node;
    });
    showStream();
    showFollowups();
  }

  // Deltas can arrive before the panel shows the follow-up's box; they are kept and shown once it does.
  function showFollowups() {
    Object.keys(followupText).forEach(function (n) {
      const box = document.getElementById("followup-stream-" + n);
      if (box) box.textContent = followupText[n];
    });
  }

  function refreshPanel() {
    fetch("/jobs/" + jobId + "/panel/", {credentials: "same-origin"})
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(applyPanel)
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
      const n = ev.payload.number;
      followupText[n] = (followupText[n] || "") + (ev.payload.text || "");
      showFollowups();
      return;
    }
    if (ev.type === "followup.requeued") delete followupText[ev.payload.number];  // the lost attempt's text goes
    updateCard(ev);
    addEntry(ev);
    if (ev.seq <= renderedSeq) return;  // the page already shows this state
    if (ev.type === "job.status") {
      root.dataset.status = ev.payload.status;
      // "Plan accepted; research is starting", "revising the plan": true when shown, stale once the state moves.
      Array.prototype.forEach.call(document.querySelectorAll(".messages li"), function (li) { li.remove(); });
    }
    if (ev.type === "plan.updated" || ev.type === "plan.ready") {
      const editor = document.getElementById("plan-editor");
      const stale = document.getElementById("plan-stale");
      if (editor && stale && Number(editor.dataset.version) < ev.payload.version) stale.hidden = false;
    }
    if (REFRESH_TYPES.has(ev.type)) scheduleRefresh();
  }

  // Chapters: a click seeks the podcast (delegated: the media part may be swapped).
  root.addEventListener("click", function (e) {
    const btn = e.target.closest && e.target.closest("button.chapter");
    if (!btn) return;
    const audio = document.getElementById("podcast-audio");
    if (!audio) return;
    audio.currentTime = Number(btn.dataset.start) || 0;
    audio.play().catch(function () {});
  });

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
