// Knowledge-base pages: while a document shows "indexing…", ask the server for its state and show
// "indexed" or "failed: reason" when the worker is done, without a reload (which would lose a
// half-filled upload or search form). The document page reloads once, to show the extracted text.
(function () {
  "use strict";
  const root = document.querySelector("[data-kb-status-url]");
  if (!root) return;
  const url = root.dataset.kbStatusUrl;
  const reloadWhenDone = root.dataset.kbReloadWhenDone === "1";
  const pending = () => root.querySelectorAll('.kb-status[data-status="indexing"]').length > 0;
  let delay = 1500;

  function apply(doc) {
    for (const el of root.querySelectorAll(`[data-doc-id="${doc.id}"]`)) {
      const cell = el.classList.contains("kb-status") ? el : el.querySelector(".kb-status");
      if (cell && cell.dataset.status !== doc.status) {
        const wasIndexing = cell.dataset.status === "indexing";
        cell.dataset.status = doc.status;
        cell.className = `kb-status kb-status-${doc.status}`;
        cell.textContent = doc.label;
        if (wasIndexing && reloadWhenDone) window.location.reload();
      }
      const chunks = el.querySelector(".kb-chunks");
      if (chunks) chunks.textContent = String(doc.chunks);
    }
  }

  // "x.md: added; indexing…" is out of date once nothing is indexing any more.
  const clearIndexingFlash = () => document.querySelectorAll(".messages li.kb-indexing").forEach((li) => li.remove());

  async function poll() {
    if (!pending()) { clearIndexingFlash(); return; }  // indexed before the page was drawn, too
    try {
      const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
      if (!response.ok) throw new Error(String(response.status));
      const data = await response.json();
      data.documents.forEach(apply);
      if (!pending()) clearIndexingFlash();
      delay = 1500;
    } catch (err) {
      delay = Math.min(delay * 2, 15000); // the server is busy or restarting: ask less often
    }
    setTimeout(poll, delay);
  }
  setTimeout(poll, delay);
})();
