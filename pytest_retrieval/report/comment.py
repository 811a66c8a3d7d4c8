"""The body of the pull-request comment: the Markdown report under a marker, within a size limit.

``pytest-retrieval comment`` posts the Markdown report (``--retrieval-markdown``) as one comment
per pull request and updates it on every push. This module builds what it posts, without any
network:

* **the marker** (:func:`marker`): the first line of the comment, an HTML comment GitHub and
  GitLab render as nothing, ``<!-- pytest-retrieval: golden=NAME job=JOB -->``. It is how the
  command finds its own comment again; a comment carrying another marker (another golden set,
  another job) is someone else's. :func:`default_key` derives the key from the report (the
  golden set's name in its footer, else the report's file name) and the CI job; the command's
  ``--key`` replaces it. A key is one line of at most :data:`MAX_KEY` characters in which
  nothing can end the HTML comment (``--`` and ``>`` are percent-encoded).
* **the body** (:func:`comment_body`): the marker, the report, and a last line naming the
  commit and the CI run it is for (an updated comment must say which push it describes). A
  report longer than the provider's limit (GitHub 65,536 characters, GitLab 1,000,000,
  counted as Python counts characters: code points) is cut at a line boundary, so never inside
  a table row or a tag: the verdict line stays first, a table left without a row is dropped,
  open ``<details>`` blocks and code fences are closed, and a line says how many lines were cut
  and where the full report is.
"""

from __future__ import annotations

import html
import re

#: The longest key (the marker's text between ``pytest-retrieval:`` and ``-->``).
MAX_KEY = 200
#: Characters of a golden set's name kept in a derived key.
_MAX_NAME = 100
_PREFIX = "<!-- pytest-retrieval: "
_SUFFIX = " -->"

# The footer line the Markdown report ends with ("Golden set NAME (corpus V): 6 queries ...").
_GOLDEN_LINE = re.compile(r"^Golden set (?P<name>.+?)(?: \(corpus .*?\))?: \d+ queries", re.M)
# What md_text backslash-escapes, and the zero-width space it puts after "@", "#1", "://".
_MD_ESCAPED = re.compile(r"\\([\\`*_\[\]|~])")
_ZWSP = "\u200b"
#: Characters kept free for the cut note and the closing tags.
_NOTE_ROOM = 400
_MAX_URL = 300
_SHA = re.compile(r"[0-9a-f]{7,64}\Z")
_URL = re.compile(r"https?://[^\s()<>\[\]\"'`]+\Z")


def key_text(value: str) -> str:
    """``value`` as marker text: one line (white space runs become one space), at most
    :data:`MAX_KEY` characters, nothing that can end the HTML comment. Printable characters
    other than ``<>&"'%`` are kept as they are, so a key stays readable in the comment's source;
    those and unprintable ones (control, bidi) are percent-encoded (UTF-8), and ``--`` becomes
    ``-%2D``."""
    out = []
    for char in " ".join(value.split()):
        if char == " " or (char.isprintable() and char not in "<>&\"'%"):
            out.append(char)
        else:
            out.append("".join(f"%{byte:02X}" for byte in char.encode("utf-8", "replace")))
    text = "".join(out)
    while "--" in text:
        text = text.replace("--", "-%2D")
    return text[:MAX_KEY]


def golden_name(report: str) -> str | None:
    """The golden set's name as the report's footer states it, unescaped; None when the report
    has no such line (a report written by another tool, or by hand)."""
    match = _GOLDEN_LINE.search(report)
    if match is None:
        return None
    name = html.unescape(_MD_ESCAPED.sub(r"\1", match.group("name"))).replace(_ZWSP, "")
    return name.strip() or None


def default_key(report: str, report_name: str, job: str) -> str:
    """``golden=NAME job=JOB``: the golden set the report is about (by name, so a change to its
    labels keeps the comment; the report's file name when it names no set) and the CI job that
    posts it (so two jobs reporting one golden set keep a comment each)."""
    name = golden_name(report) or report_name

    def part(value: str) -> str:
        return key_text(value[:_MAX_NAME]).replace(" ", "%20")

    return f"golden={part(name)} job={part(job or 'local')}"


def marker(key: str) -> str:
    """The first line of the comment: ``<!-- pytest-retrieval: KEY -->``."""
    return f"{_PREFIX}{key_text(key)}{_SUFFIX}"


def carries(body: str, mark: str) -> bool:
    """True when a comment's body holds ``mark`` as a line of its own (the web editor stores
    ``\\r\\n`` line ends; a marker inside another line is not ours)."""
    return mark in (line.strip() for line in body.splitlines())


def same_body(old: str, new: str) -> bool:
    """True when posting ``new`` would not change the comment ``old`` (line ends and trailing
    white space aside)."""

    def norm(text: str) -> str:
        return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").split("\n")).strip()

    return norm(old) == norm(new)


def footer_line(commit: str | None, run_url: str | None) -> str:
    """``<sub>pytest-retrieval · commit `abc1234` · [CI run](URL)</sub>``: which push the comment
    describes. A commit that is not hex, or an address that is not http(s) or longer than 300
    characters, is left out."""
    parts = ["pytest-retrieval"]
    if commit and _SHA.match(commit.lower()):
        parts.append(f"commit `{commit.lower()[:12]}`")
    if run_url and len(run_url) <= _MAX_URL and _URL.match(run_url):
        parts.append(f"[CI run]({run_url})")
    return "<sub>" + " · ".join(parts) + "</sub>"


def full_report_at(provider: str, report_name: str) -> str:
    """Where a reader of a cut comment finds the whole report (the cut note's last words)."""
    from .markdown import md_code

    name = md_code(report_name, table=False)
    if provider == "github":
        return f"in the CI run's job summary and in {name} among its artifacts"
    return f"in {name} among the job's artifacts"


def comment_body(
    report: str,
    mark: str,
    *,
    limit: int,
    provider: str,
    full_report: str,
    footer: str = "",
) -> str:
    """The comment: ``mark``, the report, ``footer``, at most ``limit`` characters.

    A longer report is cut at a line boundary (the verdict line is always kept), a table the
    cut leaves without a row is dropped, open ``<details>`` blocks and code fences are closed,
    and the note ``_Cut at PROVIDER's LIMIT-character comment limit: N more lines; the full
    report is FULL_REPORT._`` follows. ``limit`` must leave room for the marker, the footer and
    the note (1,000 characters always do).
    """
    lines = report.replace("\r\n", "\n").rstrip("\n").split("\n")
    head = [mark]
    tail = ["", footer] if footer else []
    whole = "\n".join(head + lines + tail) + "\n"
    if len(whole) <= limit:
        return whole
    # The longest run of whole lines that leaves room for what is added after it (the note and
    # the closers are short; the loop below takes lines off until all of it fits).
    room = limit - len("\n".join(head + tail)) - _NOTE_ROOM
    kept: list[str] = []
    size = 0
    for line in lines:
        size += len(line) + 1
        if size > room:
            break
        kept.append(line)
    while True:
        _drop_headless_table(kept)
        if not kept:
            kept = [_shorten(lines[0], limit // 4)]
        note = (
            f"_Cut at {provider}'s {limit:,}-character comment limit: "
            f"{len(lines) - len(kept):,} more lines; the full report is {full_report}._"
        )
        body = "\n".join(head + kept + _closers(kept) + ["", note] + tail) + "\n"
        if len(body) <= limit or len(kept) == 1:
            return body
        kept.pop()


def _drop_headless_table(kept: list[str]) -> None:
    """Remove a table at the end of ``kept`` that has no row left (its header alone, or header
    and separator): GitHub would render the header as a paragraph of pipes."""
    run = 0
    for line in reversed(kept):
        if not line.lstrip("> ").startswith("|"):
            break
        run += 1
    if 0 < run < 3:
        del kept[len(kept) - run :]


def _closers(kept: list[str]) -> list[str]:
    """The lines that close what ``kept`` leaves open: a code fence, ``<details>`` blocks."""
    out: list[str] = []
    fence = None
    depth = 0
    for line in kept:
        stripped = line.strip()
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            continue
        depth += line.count("<details") - line.count("</details>")
    if fence is not None:
        out.append(fence)
    out.extend(["", "</details>"] * max(depth, 0))
    return out


def _shorten(line: str, size: int) -> str:
    """``line`` cut at a space to at most ``size`` characters, with an ellipsis."""
    if len(line) <= size:
        return line
    cut = line[: size - 1].rsplit(" ", 1)[0]
    return cut + "…"
