// Report editor: live preview and citation check while typing (the server does both; nothing is saved).
(function () {
  "use strict";
  const form = document.getElementById("report-form");
  if (!form) return;
  const area = form.querySelector("textarea[name=markdown]");
  const preview = document.getElementById("report-preview");
  const problem = document.getElementById("citation-problem");
  const token = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  let timer = null;
  let sent = 0;

  function update() {
    const mine = ++sent;
    const body = new URLSearchParams({markdown: area.value});
    fetch(form.dataset.previewUrl, {method: "POST", credentials: "same-origin", body: body,
                                    headers: {"X-CSRFToken": token}})
      .then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
      .then(function (data) {
        if (mine !== sent) return;  // a newer keystroke's answer is on its way
        preview.innerHTML = data.html;  // sanitized by the server (research/render/html.py)
        problem.textContent = data.problem || "";
        problem.hidden = !data.problem;
      })
      .catch(function () {});
  }

  area.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(update, 300);
  });
})();
