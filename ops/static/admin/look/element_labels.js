// Element UI writes a few screen-reader labels in English whatever the page's language
// ("Close", "Breadcrumb"); this puts the page's own words in their place, now and as Vue
// draws more. The words come from the script tag's data-labels (JSON: English -> shown).
(function () {
  "use strict";
  const labels = JSON.parse(document.currentScript.dataset.labels);

  function relabel(root) {
    for (const element of root.querySelectorAll("[aria-label]")) {
      const label = element.getAttribute("aria-label").trim();
      if (Object.hasOwn(labels, label)) element.setAttribute("aria-label", labels[label]);
    }
  }

  function start() {
    relabel(document);
    new MutationObserver(() => relabel(document)).observe(document.body, {
      childList: true,
      subtree: true,
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
