"""A loopback HTTP server that speaks the part of the GitHub and GitLab REST APIs
``pytest-retrieval comment`` uses, with the comments in memory, every request recorded, and
faults to inject (an answer given instead of the real one, a given number of times).

GitHub (at the root, as ``https://api.github.com``): ``GET /user``, ``GET`` and ``POST
/repos/{owner}/{repo}/issues/{number}/comments`` (pages with a ``Link: rel="next"`` header),
``PATCH /repos/{owner}/{repo}/issues/comments/{id}``, ``GET /repos/{owner}/{repo}/pulls``.
GitLab (under ``/api/v4``): ``GET /user``, ``GET`` and ``POST
/projects/{id}/merge_requests/{iid}/notes`` (pages with ``X-Next-Page``), ``PUT
.../notes/{id}``. The server answers with the real APIs' shapes for the fields the command reads.
As GitHub does, a token whose user is unknown (``GET /user`` 403: the Actions ``GITHUB_TOKEN``,
acting as ``github-actions[bot]``) may not edit another bot's comment (403). It binds 127.0.0.1
only.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit


@dataclass
class Seen:
    """One request the server received."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # by lower-case name
    body: Any


@dataclass
class Fault:
    """Answer ``status`` (with ``headers`` and a JSON ``message``) to the next ``times``
    requests whose method is ``method`` and whose path matches ``path``; with ``apply`` the
    request is carried out first (the answer is lost on the way back); ``payload`` replaces the
    JSON message."""

    method: str
    path: str
    status: int
    times: int = 1
    headers: dict[str, str] = field(default_factory=dict)
    message: str = ""
    apply: bool = False
    payload: Any = None  # answered instead of {"message": ...}


@dataclass
class State:
    """What the server holds: comments per thread (``github:o/r#12``, ``gitlab:42!7``)."""

    threads: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    github_user: dict[str, Any] | None = None  # None: GET /user is 403, as for GITHUB_TOKEN
    gitlab_user: dict[str, Any] = field(default_factory=lambda: {"id": 7, "username": "bot_7"})
    pulls: list[dict[str, Any]] = field(default_factory=list)
    page_size: int = 100
    #: False: comments are answered without ``html_url`` (a server that leaves it out).
    html_urls: bool = True
    faults: list[Fault] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)
    next_id: int = 1000


class ForgeServer:
    """The server, on a free port of 127.0.0.1, serving from a thread."""

    def __init__(self) -> None:
        self.state = State()
        self.lock = threading.Lock()
        handler = _handler(self)
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> ForgeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)

    # --- set-up and inspection --------------------------------------------------------------

    def add_comment(
        self,
        thread: str,
        body: str,
        *,
        login: str = "",
        user_id: int = 0,
        bot: bool = False,
        system: bool = False,
    ) -> int:
        """Put a comment (GitHub) or note (GitLab) in ``thread``; return its id."""
        with self.lock:
            self.state.next_id += 1
            comment_id = self.state.next_id
            self.state.threads.setdefault(thread, []).append(
                {
                    "id": comment_id,
                    "body": body,
                    "login": login,
                    "user_id": user_id,
                    "bot": bot,
                    "system": system,
                }
            )
        return comment_id

    def bodies(self, thread: str) -> list[str]:
        return [c["body"] for c in self.state.threads.get(thread, [])]

    def comment(self, thread: str, comment_id: int) -> dict[str, Any]:
        return next(c for c in self.state.threads[thread] if c["id"] == comment_id)

    def requests(self, method: str | None = None) -> list[Seen]:
        return [s for s in self.state.seen if method is None or s.method == method]


def _handler(server: ForgeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

        def do_PATCH(self) -> None:
            self._serve()

        def do_PUT(self) -> None:
            self._serve()

        def _serve(self) -> None:
            parts = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw.decode("utf-8")) if raw else None
            sent = {k.lower(): v for k, v in self.headers.items()}
            seen = Seen(self.command, parts.path, query, sent, body)
            with server.lock:
                server.state.seen.append(seen)
                fault = self._fault(parts.path)
                if fault is None or fault.apply:
                    status, headers, payload = _route(server, seen)
                if fault is not None:
                    status, headers = fault.status, dict(fault.headers)
                    payload = fault.payload
                    if payload is None:
                        payload = {"message": fault.message or f"fault {fault.status}"}
            self._answer(status, headers, payload)

        def _fault(self, path: str) -> Fault | None:
            for fault in server.state.faults:
                if (
                    fault.times > 0
                    and fault.method == self.command
                    and re.fullmatch(fault.path, path)
                ):
                    fault.times -= 1
                    return fault
            return None

        def _answer(self, status: int, headers: dict[str, str], payload: Any) -> None:
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _page(items: list[Any], query: dict[str, str], size: int) -> tuple[list[Any], int, bool]:
    per_page = min(int(query.get("per_page", "30")), size)
    page = int(query.get("page", "1"))
    start = (page - 1) * per_page
    return items[start : start + per_page], page, start + per_page < len(items)


def _route(server: ForgeServer, seen: Seen) -> tuple[int, dict[str, str], Any]:
    state = server.state
    path = seen.path
    if path.startswith("/api/v4/"):
        return _gitlab(server, seen, path.removeprefix("/api/v4"))
    if path == "/user" and seen.method == "GET":
        if state.github_user is None:
            return 403, {}, {"message": "Resource not accessible by integration"}
        return 200, {}, state.github_user
    match = re.fullmatch(r"/repos/([^/]+)/([^/]+)/issues/(\d+)/comments", path)
    if match:
        thread = f"github:{unquote(match[1])}/{unquote(match[2])}#{match[3]}"
        comments = state.threads.setdefault(thread, [])
        if seen.method == "GET":
            items, page, more = _page(comments, seen.query, state.page_size)
            headers = {}
            if more:
                per_page = seen.query.get("per_page", "30")
                next_url = f"{server.url}{path}?per_page={per_page}&page={page + 1}"
                headers["Link"] = f'<{next_url}>; rel="next", <{next_url}>; rel="last"'
            return 200, headers, [_github_comment(server, thread, c) for c in items]
        if seen.method == "POST":
            state.next_id += 1
            user = state.github_user or {"login": "github-actions[bot]", "type": "Bot"}
            comment = {
                "id": state.next_id,
                "body": seen.body["body"],
                "login": user["login"],
                "user_id": 0,
                "bot": user.get("type") == "Bot",
                "system": False,
            }
            comments.append(comment)
            return 201, {}, _github_comment(server, thread, comment)
    match = re.fullmatch(r"/repos/([^/]+)/([^/]+)/issues/comments/(\d+)", path)
    if match and seen.method == "PATCH":
        for thread, comments in state.threads.items():
            for comment in comments:
                if comment["id"] == int(match[3]) and thread.startswith("github:"):
                    actor = (state.github_user or {"login": "github-actions[bot]"})["login"]
                    if state.github_user is None and comment["bot"] and comment["login"] != actor:
                        return 403, {}, {"message": "Resource not accessible by integration"}
                    comment["body"] = seen.body["body"]
                    return 200, {}, _github_comment(server, thread, comment)
        return 404, {}, {"message": "Not Found"}
    match = re.fullmatch(r"/repos/([^/]+)/([^/]+)/pulls", path)
    if match and seen.method == "GET":
        owner, _, branch = seen.query.get("head", "").partition(":")
        found = [
            p
            for p in state.pulls
            if p["head"]["user"]["login"] == owner and p["head"]["ref"] == branch
        ]
        return 200, {}, found
    return 404, {}, {"message": "Not Found"}


def _github_comment(server: ForgeServer, thread: str, comment: dict[str, Any]) -> dict[str, Any]:
    number = thread.rsplit("#", 1)[1]
    repo = thread.removeprefix("github:").rsplit("#", 1)[0]
    answer = {
        "id": comment["id"],
        "body": comment["body"],
        "user": {"login": comment["login"], "type": "Bot" if comment["bot"] else "User"},
        "html_url": f"https://github.com/{repo}/pull/{number}#issuecomment-{comment['id']}",
    }
    if not server.state.html_urls:
        del answer["html_url"]
    return answer


def _gitlab(server: ForgeServer, seen: Seen, path: str) -> tuple[int, dict[str, str], Any]:
    state = server.state
    if path == "/user" and seen.method == "GET":
        return 200, {}, state.gitlab_user
    match = re.fullmatch(r"/projects/([^/]+)/merge_requests/(\d+)/notes(?:/(\d+))?", path)
    if not match:
        return 404, {}, {"message": "404 Not found"}
    thread = f"gitlab:{unquote(match[1])}!{match[2]}"
    notes = state.threads.setdefault(thread, [])
    if seen.method == "GET" and match[3] is None:
        items, page, more = _page(notes, seen.query, state.page_size)
        headers = {"X-Page": str(page), "X-Next-Page": str(page + 1) if more else ""}
        return 200, headers, [_gitlab_note(n) for n in items]
    if seen.method == "POST" and match[3] is None:
        state.next_id += 1
        note = {
            "id": state.next_id,
            "body": seen.body["body"],
            "login": state.gitlab_user["username"],
            "user_id": state.gitlab_user["id"],
            "bot": False,
            "system": False,
        }
        notes.append(note)
        return 201, {}, _gitlab_note(note)
    if seen.method == "PUT" and match[3] is not None:
        for note in notes:
            if note["id"] == int(match[3]):
                note["body"] = seen.body["body"]
                return 200, {}, _gitlab_note(note)
    return 404, {}, {"message": "404 Not found"}


def _gitlab_note(note: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": note["id"],
        "body": note["body"],
        "system": note["system"],
        "author": {"id": note["user_id"], "username": note["login"]},
    }
