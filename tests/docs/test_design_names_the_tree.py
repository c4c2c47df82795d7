"""docs/DESIGN.md and its map of changes (docs/where-to-change-what.md) stay true to the tree:
every repository path they name in backticks exists
(a file, a folder, or a glob that matches something). A rename that forgets the design fails
here. Bare file names (`claim.lua`, named inside a folder's line) are not paths and are not
checked."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DESIGNS = [ROOT / "docs" / "DESIGN.md", ROOT / "docs" / "where-to-change-what.md"]
CODE_SPAN = re.compile(r"`([^`\n]+)`")


def named_paths(text: str) -> list[str]:
    """The backticked words that are repository paths: they start with an entry at the top of
    the repository (`tests/api/...`, `Makefile`); `::test_name` and trailing punctuation cut."""
    top_level = {entry.name for entry in ROOT.iterdir() if not entry.name.startswith(".")}
    paths = []
    for span in CODE_SPAN.findall(text):
        words = span.split()
        if not words:
            continue
        word = words[0].split("::")[0].rstrip(",.;:)")
        if word.split("/")[0] in top_level and ("/" in word or word in top_level):
            paths.append(word)
    return paths


def exists(path: str) -> bool:
    path = re.sub(r"<[^>]*>", "*", path)  # `bench/results/<stamp>.json`: a placeholder
    if any(char in path for char in "*?["):
        return any(ROOT.glob(path))
    return (ROOT / path).exists()


def test_every_path_the_design_names_exists():
    for design in DESIGNS:
        paths = named_paths(design.read_text())

        assert len(paths) > 20  # the design names the tree; a parser that finds nothing fails
        assert [path for path in paths if not exists(path)] == []


def test_a_missing_path_is_caught():
    text = "see `tests/api/test_schema.py` and `coupons/no_such_module.py`, not `claim.lua`"

    paths = named_paths(text)

    assert paths == ["tests/api/test_schema.py", "coupons/no_such_module.py"]
    assert [path for path in paths if not exists(path)] == ["coupons/no_such_module.py"]
