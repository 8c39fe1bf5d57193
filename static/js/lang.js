// The language switch takes one click: choosing a language switches to it (the button stays for no-JS).
(function () {
  "use strict";
  document.querySelectorAll("form.lang-switch select[name=language]").forEach(function (select) {
    select.addEventListener("change", function () { select.form.submit(); });
  });
})();
