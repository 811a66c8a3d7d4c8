"""Shared by the HTML report tests: the hand-built artifacts, hostile strings, and a parser
that sees a page the way a browser tokenizes it."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from typing import Any

from paths import GOLDEN_FILES

GOLDEN_DIR = GOLDEN_FILES

SCRIPT_PAYLOAD = "<script>document.body.setAttribute('data-pwned', 'script')</script>"
IMG_PAYLOAD = "\"><img src=x onerror=\"document.body.setAttribute('data-pwned', 'img')\">"
ALERT_PAYLOAD = "<script>alert(1)</script>"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN_DIR / name).read_text(encoding="utf-8"))
    return data


def hostile_artifact() -> dict[str, Any]:
    """The failing run with attacker-controlled ids, texts, names and messages everywhere."""
    artifact = load("report-fail.json")
    row = artifact["queries"][1]
    old_id = row["id"]
    row["id"] = IMG_PAYLOAD
    row["text"] = SCRIPT_PAYLOAD + " & " + ALERT_PAYLOAD
    row["slices"] = ["a&b", IMG_PAYLOAD]
    artifact["snapshot"]["queries"][IMG_PAYLOAD] = artifact["snapshot"]["queries"].pop(old_id)
    artifact["snapshot"]["queries"][IMG_PAYLOAD]["relevant_ranks"]["reranker"] = {
        SCRIPT_PAYLOAD: None
    }
    artifact["regressions"][0]["worse"][0]["query_id"] = IMG_PAYLOAD
    artifact["regressions"][0]["worse"][0]["moves"][0]["doc"] = ALERT_PAYLOAD
    artifact["regressions"][2]["message"] = IMG_PAYLOAD
    artifact["golden"]["name"] = SCRIPT_PAYLOAD
    artifact["golden"]["fingerprint"] = IMG_PAYLOAD
    artifact["retriever"]["name"] = ALERT_PAYLOAD
    artifact["errors"][0]["message"] = SCRIPT_PAYLOAD
    artifact["queries"][3]["error"]["message"] = IMG_PAYLOAD
    for result in artifact["results"]:
        if result["slice"] == "lookup":
            result["column"] = IMG_PAYLOAD
    return artifact


class Page(HTMLParser):
    """Elements, attributes, script bodies and text of a page, as a browser tokenizes it."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str, str | None]] = []
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self.text: list[str] = []
        self._in_script = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend((tag, name, value) for name, value in attrs)
        self.elements.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data
        else:
            self.text.append(data)

    def all_text(self) -> str:
        return "".join(self.text)

    def attr_values(self) -> list[str]:
        return [value or "" for _tag, _name, value in self.attrs]
