"""Debian's Chromium driven by Playwright for the browser tests: never a downloaded browser
(scripts/ensure-test-deps installs /usr/bin/chromium), and a detector for English words left
on a page that should be all Chinese."""

import re
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import pytest
from playwright.sync_api import Browser, sync_playwright

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


@contextmanager
def chromium(monkeypatch) -> Iterator[Browser]:
    # Playwright's sync API runs an event loop in this thread; the test's own ORM calls between
    # browser steps are ordinary blocking code all the same.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    monkeypatch.setenv("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    if shutil.which(CHROMIUM) is None:
        pytest.fail(f"{CHROMIUM} is missing: run scripts/ensure-test-deps (make test does).")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


# Every text an operator reads on the page: text nodes, button labels, options (also those of
# selects the admin's widgets moved), titles and placeholders. Scripts and styles are not read.
PAGE_TEXTS_JS = """() => {
  const texts = [document.title];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    const parent = node.parentElement;
    if (!parent || ['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE'].includes(parent.tagName)) continue;
    if (parent.closest('[hidden], .hidden')) continue;
    // A password's stored hash (algorithm, salt, digest fragments) is data, not words.
    if (parent.closest('.field-password bdi')) continue;
    if (node.textContent.trim()) texts.push(node.textContent.trim());
  }
  for (const element of document.querySelectorAll(
      'input[type=submit], input[type=button], [title], [placeholder], [aria-label]')) {
    for (const attribute of ['value', 'title', 'placeholder', 'aria-label']) {
      if (element.type === 'hidden') continue;
      if (attribute === 'value' && !['submit', 'button'].includes(element.type)) continue;
      const value = element.getAttribute(attribute);
      if (value && value.trim()) texts.push(value.trim());
    }
  }
  return texts;
}"""

# A word of Latin letters is English unless it is one of these: codes and names an operator
# types or reads as they are (file formats, ids, zones, the names on keys), and what the test
# itself named in Latin letters.
ALLOWED_WORDS = {"ID", "CSV", "XLSX", "UTF", "Excel", "UTC", "Ctrl", "Mac"}
WORD = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)*")


def english_words(texts: Iterable[str], *, allowed: Iterable[str] = ()) -> list[str]:
    """The words of two or more Latin letters in `texts` not in the allow-list, in order."""
    allow = ALLOWED_WORDS | set(allowed)
    words = (word for text in texts for word in WORD.findall(text))
    return [word for word in words if len(word) >= 2 and word not in allow]
