"""Every measured figure in README.md and docs/*.md is one that BENCHMARKS.md holds.

The docs say what to run and which method to pick; the results (step times,
speedups, gaps, wall times) live in BENCHMARKS.md with the commit that
produced them, and the docs link there. A figure here is a number followed
by a result unit: a time (ns, us, µs, ms, s), a percentage, or a ratio
(``589x``, ``1.5×``, ``4 times slower``). Fenced code blocks and inline code
spans are skipped, so flags and settings written as code (``--epoch_s=0.2``,
``0.99``) are not figures; section numbers and bare counts carry no unit.
"""

import os
import re

from tests.cli import ROOT

# Pages generated from the binaries' --help (they state defaults, not results).
GENERATED = {"docs/cli.md"}

# Figures quoted from papers, each named with its source in the doc that quotes it.
QUOTED = {
    # NVIDIA, "Getting Started with CUDA Graphs" (Technical Blog, 2019): kernel launch overheads.
    ("docs/measure.md", "2.9 us"),
    ("docs/measure.md", "3.8 us"),
    ("docs/measure.md", "9.6 us"),
    ("docs/measure.md", "6.7 us"),
}

_NUMBER = r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?"
_FIGURE = re.compile(
    _NUMBER
    + r"(?:"
    + r"\s?(?P<time>ns|us|µs|ms|s)(?![\w-])"  # a time: "0.5464 s", "15.8 ms"; not "5 samples" or "s-curve"
    + r"|(?P<pct>%)"  # a percentage, written against its number: "2.9%"
    + r"|(?P<ratio>[x×])(?!\w)"  # a ratio, written against its number: "589x"; "8 x devices" is a formula
    + r"|\s(?P<times>times (?:faster|slower|longer|shorter|more|less|fewer|larger|smaller|as))"
    + r")"
)
_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"`[^`]*`")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_ANCHOR_LINK = re.compile(r"\]\(([^)#\s]*\.md)?#([^)\s]+)\)")


def doc_paths() -> list[str]:
    """README.md and docs/*.md, relative to the checkout, less the generated pages."""
    docs = sorted(f"docs/{name}" for name in os.listdir(os.path.join(ROOT, "docs")) if name.endswith(".md"))
    return ["README.md"] + [path for path in docs if path not in GENERATED]


def figures(text: str) -> list[tuple[int, str, str]]:
    """The measured figures of a Markdown page outside code.

    Returns:
      (line number from 1, the figure as written, the text BENCHMARKS.md must hold) for each figure:
      a time must appear there as the same number (its unit may sit in a table's header),
      a percentage or ratio as the number with its sign of unit.
    """
    found, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        prose = _LINK_TARGET.sub("]()", _CODE_SPAN.sub(" ", line))
        for m in _FIGURE.finditer(prose):
            value = m.group(1) + (m.group(2) or "")
            if m.group("pct"):
                needle = value + "%"
            elif m.group("ratio"):
                needle = value + m.group("ratio")
            elif m.group("times"):
                needle = value + " times"
            else:
                needle = value
            found.append((number, m.group(0).strip(), needle))
    return found


def held(needle: str, benchmarks: str) -> bool:
    """Whether BENCHMARKS.md holds `needle` as a whole number ("0.546" is not in "0.5464")."""
    return re.search(r"(?<![\d.,])" + re.escape(needle) + r"(?![\d]|[.,]\d)", benchmarks) is not None


def anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives the headings of a page: lower case, punctuation dropped, spaces as
    hyphens, a repeated heading numbered -1, -2, ..."""
    seen: dict[str, int] = {}
    fenced = False
    for line in markdown.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        if fenced or not line.startswith("#"):
            continue
        slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        if count:
            seen[f"{slug}-{count}"] = 1
    return set(seen)


def test_figure_regex_on_hand_written_lines():
    text = (
        "Best 0.5464 s against 0.5034 s, +2.9% and 589x; 15.8 ms per placement, 4 times slower.\n"
        "```\n--epoch_s=0.2 took 3.5 s\n```\n"
        "Set `--epoch_s=0.2` or `0.99`; 8 x devices; 5 samples; section 2.3; ratio 1.5× here.\n"
        "See [the table](BENCHMARKS.md#step-time-at-256-placements) and 12,000 s.\n"
    )
    assert [(line, fig) for line, fig, _ in figures(text)] == [
        (1, "0.5464 s"),
        (1, "0.5034 s"),
        (1, "2.9%"),
        (1, "589x"),
        (1, "15.8 ms"),
        (1, "4 times slower"),
        (5, "1.5×"),
        (6, "12,000 s"),
    ]
    assert held("0.5464", "| NMT | 0.5464 |") and not held("0.546", "| NMT | 0.5464 |")
    assert held("2.9%", "gap +2.9% here") and not held("2.9%", "gap 12.9% here")
    assert not held("1,000", "11,000 placements") and held("1,000", "at 1,000 placements")
    heads = anchors(
        "## Search speed: compiled simulation, annealing, policy\n## RL (`train.elite_memory`)\n## Suite\n## Suite\n"
    )
    assert heads == {"search-speed-compiled-simulation-annealing-policy", "rl-trainelite_memory", "suite", "suite-1"}


def test_every_figure_in_the_docs_is_in_benchmarks():
    with open(os.path.join(ROOT, "BENCHMARKS.md"), encoding="utf-8") as f:
        benchmarks = f.read()
    missing = []
    for path in doc_paths():
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            text = f.read()
        for line, figure, needle in figures(text):
            if (path, figure) not in QUOTED and not held(needle, benchmarks):
                missing.append(f"{path}:{line}: {figure}")
    assert not missing, (
        "figures in the docs that BENCHMARKS.md does not hold (move the result there with its commit "
        "and link to it):\n" + "\n".join(missing)
    )


def test_every_link_to_a_heading_names_one_the_page_has():
    """Links such as BENCHMARKS.md#suite or rl.md#warm-start, and #anchors within a page."""
    pages: dict[str, set[str]] = {}

    def heads(path: str) -> set[str]:
        if path not in pages:
            full = os.path.join(ROOT, path)
            pages[path] = anchors(open(full, encoding="utf-8").read()) if os.path.exists(full) else set()
        return pages[path]

    broken = []
    for path in doc_paths():
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            for line, text in enumerate(f, 1):
                for target, anchor in _ANCHOR_LINK.findall(text):
                    page = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
                    if anchor not in heads(page):
                        broken.append(f"{path}:{line}: {target}#{anchor}")
    assert not broken, "links to headings that do not exist:\n" + "\n".join(broken)
