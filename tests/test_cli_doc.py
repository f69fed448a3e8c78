"""docs/cli.md is what the binaries' --help prints now (python -m bench.testing.cli_doc rewrites it)."""

import pytest

from bench.testing import cli_doc


@pytest.mark.slow
def test_cli_page_is_current():
    text = cli_doc.page()
    with open(cli_doc.PAGE, encoding="utf-8") as f:
        assert f.read() == text, "docs/cli.md is out of date: run python -m bench.testing.cli_doc"
    # Every console script of setup.py has its section, with its own flags listed.
    for command, _ in cli_doc.console_scripts():
        section = text.split(f"\n## {command}\n", 1)[1].split("\n## ", 1)[0]
        assert f"{command}:" in section and "--" in section
