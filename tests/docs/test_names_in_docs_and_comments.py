"""Every repository path that docs/DESIGN.md, docs/operations.md, a README or a code comment names
exists, and every decision record that they or another record name: a renamed module, a moved
test or a merged record that leaves a reference behind fails here. (A record may name paths
of its time, such as the module it split, so its paths are not checked.)"""

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
DECISIONS = DOCS / "decisions"
TOP_LEVEL = sorted(entry.name for entry in ROOT.iterdir() if not entry.name.startswith("."))
# A path word: starts at a top-level folder of the repository (`coupons/rules.py`,
# `tests/api/`, `bench/results/<stamp>.json`), not inside a URL or another path.
TOP_LEVEL_ALTERNATIVES = "|".join(map(re.escape, TOP_LEVEL))
PATH_WORD = re.compile(rf"(?<![\w./:@-])((?:{TOP_LEVEL_ALTERNATIVES})/(?:<[^<>\n]*>|[\w./*-])*)")
# "decision 0200", "decisions 0005, 0200 and 0302", "decisions 0030-0033".
DECISION_MENTION = re.compile(r"\b[Dd]ecisions?\s+([01]\d{3}(?:\s*(?:,|and|-|–|/)\s*[01]\d{3})*)")
RECORD_NAME = re.compile(r"\b([01]\d{3})-[a-z0-9-]+\.md\b")
READMES = [ROOT / "bench" / "README.md"]
DESIGN_DOCS = [DOCS / "DESIGN.md", DOCS / "where-to-change-what.md"]
RUNTIME_FOLDERS = ("var/",)  # made by `make run` and the tests, git-ignored
# Files that are not the project's own text (tests/docs names missing paths on purpose).
SKIPPED = ("tests/docs/", "locale/", "docs/SPEC.md", "docs/measurements/", ".")


def path_exists(path: str) -> bool:
    path = path.rstrip("/")
    if path.startswith(RUNTIME_FOLDERS):
        return True
    pattern = re.sub(r"<[^>]*>", "*", path)
    if any(char in pattern for char in "*?["):
        # A placeholder (`bench/results/<stamp>.json`): its folder must exist.
        folder = pattern[: min(pattern.index(c) for c in "*?[" if c in pattern)]
        return (ROOT / folder.rsplit("/", 1)[0]).is_dir()
    return (ROOT / path).exists()


def paths_named(text: str) -> list[str]:
    return [match.group(1).rstrip(".-") for match in PATH_WORD.finditer(text)]


def decisions_named(text: str) -> set[str]:
    numbers = set(RECORD_NAME.findall(text))
    for mention in DECISION_MENTION.findall(text):
        numbers.update(re.findall(r"[01]\d{3}", mention))
    return numbers


def python_comments(source: str) -> str:
    """The comments and docstrings of a Python module, one after another."""
    parts = [
        token.string
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = ast.get_docstring(node, clean=False)
            if docstring:
                parts.append(docstring)
    return "\n".join(parts)


def other_comments(path: Path, source: str) -> str:
    """The comment lines of a Makefile, TOML, shell, nginx, Dockerfile or Lua script."""
    marker = "--" if path.suffix == ".lua" else "#"
    return "\n".join(line.split(marker, 1)[1] for line in source.splitlines() if marker in line)


def code_files() -> list[Path]:
    files = []
    for path in sorted(ROOT.rglob("*")):
        relative = path.relative_to(ROOT).as_posix()
        if not path.is_file() or relative.startswith(SKIPPED) or "/." in f"/{relative}":
            continue
        if "/migrations/" in relative or "__pycache__" in relative or relative.startswith("var/"):
            continue
        if path.suffix in (".py", ".lua", ".toml", ".template", ".yml") or path.name in (
            "Makefile",
            "Dockerfile",
        ):
            files.append(path)
        elif relative.startswith("scripts/") and not path.suffix:
            files.append(path)
    return files


def comments_of(path: Path) -> str:
    source = path.read_text()
    return python_comments(source) if path.suffix == ".py" else other_comments(path, source)


def record_numbers() -> set[str]:
    return {record.name[:4] for record in DECISIONS.glob("*.md")}


def test_every_path_the_docs_and_the_comments_name_exists():
    named: dict[str, list[str]] = {}
    for doc in [*DESIGN_DOCS, DOCS / "operations.md", ROOT / "README.md", *READMES]:
        named[doc.relative_to(ROOT).as_posix()] = paths_named(doc.read_text())
    for path in code_files():
        named[path.relative_to(ROOT).as_posix()] = paths_named(comments_of(path))

    assert sum(map(len, named.values())) > 200  # the scan finds the tree's many references
    missing = {where: [p for p in paths if not path_exists(p)] for where, paths in named.items()}
    assert {where: paths for where, paths in missing.items() if paths} == {}


def test_every_decision_the_docs_and_the_comments_name_is_a_record():
    named: dict[str, set[str]] = {}
    for doc in [*DESIGN_DOCS, DOCS / "operations.md", ROOT / "README.md", *READMES]:
        named[doc.relative_to(ROOT).as_posix()] = decisions_named(doc.read_text())
    for doc in sorted(DECISIONS.glob("*.md")):
        named[doc.relative_to(ROOT).as_posix()] = decisions_named(doc.read_text())
    # DESIGN also cites records by bare number: "(0017, 0304)", "0030-0033".
    # (Bare 1xxx numbers are not read: they are also MariaDB's error numbers, 1047, 1180.)
    named["docs/DESIGN.md"] |= set(re.findall(r"\b0\d{3}\b", (DOCS / "DESIGN.md").read_text()))
    for path in code_files():
        named[path.relative_to(ROOT).as_posix()] = decisions_named(comments_of(path))

    assert sum(map(len, named.values())) > 50
    records = record_numbers()
    unknown = {where: sorted(numbers - records) for where, numbers in named.items()}
    assert {where: numbers for where, numbers in unknown.items() if numbers} == {}


def test_every_record_file_a_record_names_exists():
    names = {
        (record.name, match.group(0))
        for record in sorted(DECISIONS.glob("*.md"))
        for match in RECORD_NAME.finditer(record.read_text())
    }

    assert names  # records do name each other by file
    assert sorted((where, name) for where, name in names if not (DECISIONS / name).exists()) == []


def test_one_record_per_number():
    numbers = [record.name[:4] for record in DECISIONS.glob("*.md")]

    assert sorted(number for number in set(numbers) if numbers.count(number) > 1) == []


def test_a_missing_path_or_record_in_a_comment_is_caught():
    source = (
        '"""See coupons/rules.py, bench/results/<UTC stamp>.json, coupons/no_such_module.py"""\n'
        "# decisions 0200 and 0999; docs/decisions/0998-gone.md; https://x.org/coupons/a.py\n"
        "URL = 'coupons/not_a_comment.py'\n"
    )

    comments = python_comments(source)

    assert sorted(paths_named(comments)) == [
        "bench/results/<UTC stamp>.json",
        "coupons/no_such_module.py",
        "coupons/rules.py",
        "docs/decisions/0998-gone.md",
    ]
    assert sorted(path for path in paths_named(comments) if not path_exists(path)) == [
        "coupons/no_such_module.py",
        "docs/decisions/0998-gone.md",
    ]
    assert decisions_named(comments) - record_numbers() == {"0998", "0999"}


# A path of one machine (a checkout, a home, a scratch folder), not of the repository.
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:work|root|home|tmp|Users|mnt|srv)/[\w.-]+")


def machine_paths(text: str) -> list[str]:
    return MACHINE_PATH.findall(text)


def test_no_doc_names_a_path_of_one_machine():
    docs = [path for path in sorted(ROOT.rglob("*.md")) if not _hidden_or_runtime(path)]

    assert len(docs) > 50
    found = {
        path.relative_to(ROOT).as_posix(): machine_paths(path.read_text())
        for path in docs
        if machine_paths(path.read_text())
    }
    assert found == {}


def test_a_machine_path_is_caught():
    text = "run in /work/main, or `tar -C /tmp/before`; not /api/coupons or docs/tmp/x.md"

    assert machine_paths(text) == ["/work/main", "/tmp/before"]


def _hidden_or_runtime(path: Path) -> bool:
    relative = path.relative_to(ROOT).as_posix()
    return relative.startswith((".", "var/")) or "/." in relative or "node_modules" in relative


# A dotted name of ours, three parts or more (`coupons.issuing.coupon_counter`); two parts are
# as often a permission (`coupons.grant_coupons`: an app label and a codename).
DOTTED_NAME = re.compile(
    r"(?<![\w./-])((?:config|coupons|orders|accounts|api|ops|core|backoffice|localservers|drill"
    r"|bench)(?:\.[A-Za-z_]\w*){2,})(?![\w/-]|\.[A-Za-z_])"
)


def name_exists(dotted: str) -> bool:
    """A module (found, not run: a settings module refuses to load outside its place), or an
    attribute of the longest module the name starts with."""
    import importlib
    import importlib.util

    parts = dotted.split(".")
    try:
        if importlib.util.find_spec(dotted) is not None:
            return True
    except ImportError:  # a parent is a module, not a package
        pass
    for cut in range(len(parts) - 1, 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def test_every_dotted_name_the_docs_and_the_comments_name_exists():
    named: dict[str, list[str]] = {}
    for doc in [*DESIGN_DOCS, DOCS / "operations.md", ROOT / "README.md", *READMES]:
        named[doc.relative_to(ROOT).as_posix()] = DOTTED_NAME.findall(doc.read_text())
    for path in code_files():
        if path.suffix == ".py":
            named[path.relative_to(ROOT).as_posix()] = DOTTED_NAME.findall(comments_of(path))

    assert sum(map(len, named.values())) > 50
    missing = {where: [n for n in names if not name_exists(n)] for where, names in named.items()}
    assert {where: names for where, names in missing.items() if names} == {}


def test_a_missing_dotted_name_is_caught():
    assert name_exists("coupons.issuing.coupon_claim")
    assert name_exists("config.settings.production")  # found, not run
    assert not name_exists("coupons.issuing.coupon_claimed")
    assert not name_exists("coupons.nowhere.at_all")
    assert DOTTED_NAME.findall("see coupons.rules.claim_state, not coupons/rules.py") == [
        "coupons.rules.claim_state"
    ]
