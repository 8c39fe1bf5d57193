// The question's live counter: "123 / 4000 characters", turning red past the limit. The server checks
// the same limit (research/jobs/questions.py) and nothing is cut, so a long paste stays whole to edit.
(function () {
  const box = document.querySelector("textarea[name=question][data-max]");
  const out = document.getElementById("question-count");
  if (!box || !out) return;
  const max = parseInt(box.dataset.max, 10);
  const template = out.dataset.template || "{n} / {max}";
  function update() {
    const n = box.value.length;
    out.textContent = template.replace("{n}", n.toLocaleString()).replace("{max}", max.toLocaleString());
    out.classList.toggle("over", n > max);
  }
  box.addEventListener("input", update);
  update();
})();
