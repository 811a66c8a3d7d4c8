"""The documentation site builds with MkDocs in strict mode: a broken link or anchor fails.

(Not with ``-q``: quiet, MkDocs does not count the warnings that strict mode turns into a
failure.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from paths import ROOT


def test_the_docs_build_in_strict_mode(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "frameworks" / "index.html").exists()


def test_a_broken_anchor_would_fail_the_build(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\n[x](other.md#no-such-anchor)\n", encoding="utf-8")
    (docs / "other.md").write_text("# Other\n", encoding="utf-8")
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("nav:", 1)[0]
    (tmp_path / "mkdocs.yml").write_text(config, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert "no-such-anchor" in result.stdout + result.stderr
