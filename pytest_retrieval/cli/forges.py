"""The part of the GitHub and GitLab REST APIs that ``pytest-retrieval comment`` speaks.

Only the standard library (``urllib.request`` and ``json``). The transport's rules:

* **A timeout on every request** (:data:`TIMEOUT` seconds per connection and read).
* **Retries**: a 5xx answer, a connection error or a timeout is retried :data:`RETRIES` times
  (4 attempts in all), waiting 1, 2 and 4 seconds, or what a ``Retry-After`` header asks when
  that is at most :data:`MAX_WAIT` seconds. A 4xx answer is never retried, except a rate limit
  (429, or 403 with ``X-RateLimit-Remaining: 0`` or ``Retry-After``) whose reset is at most
  :data:`MAX_WAIT` seconds away. Creating a comment is not idempotent: a failed ``POST`` is not
  sent again blindly; :func:`publish` looks for the comment again first (the failed request may
  have created it), so a flaky network never leaves two comments.
* **The token stays with the API**: it is sent only to the API's own origin (a pagination link
  to another host is refused), redirects are not followed, and plain ``http://`` is refused
  except to a loopback address. It is never part of a URL or a message.
* **Paging**: GitHub's ``Link: <...>; rel="next"`` and GitLab's ``X-Next-Page`` are followed,
  100 comments a page, at most :data:`MAX_PAGES` pages.

A comment is the command's own when its body holds the marker as a line (see
:mod:`pytest_retrieval.report.comment`) and its author is the token's user: GitHub's
``GET /user`` names it for a personal token; the Actions ``GITHUB_TOKEN`` and app tokens cannot
read it (403), and then only a comment by :data:`ACTIONS_BOT` (the account every comment made
with the Actions ``GITHUB_TOKEN`` is written by) is taken as the command's own. Another app's
bot comment carrying the marker is left alone (GitHub would refuse to edit it, 403, and no
verdict would be posted): a new comment is created instead. A marker in a person's comment is
left alone too: that person could edit the verdict afterwards. Every failure the user can act
on is a :class:`CannotPost`: a cause and a fix, on one line each.
"""

from __future__ import annotations

import email.utils
import http.client
import ipaddress
import json
import re
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

#: Seconds a request may wait for the connection and for each read.
TIMEOUT = 30.0
#: Retries after the first attempt of a request that failed for a transient reason.
RETRIES = 3
#: Seconds to wait before retry 1, 2 and 3 when the server does not say.
BACKOFF = (1.0, 2.0, 4.0)
#: The longest wait a ``Retry-After`` or rate-limit reset may ask for; a longer one gives up.
MAX_WAIT = 60.0
#: Pages of 100 comments read at most (10,000 comments).
MAX_PAGES = 100
#: The largest answer read (a page of 100 comments of 65,536 characters each fits).
MAX_ANSWER_BYTES = 64 * 1024 * 1024
#: The longest comment GitHub accepts ("Body is too long (maximum is 65536 characters)").
GITHUB_LIMIT = 65_536
#: The longest note GitLab accepts (its text limit for notes and descriptions).
GITLAB_LIMIT = 1_000_000
#: The GitHub REST API version every request asks for.
GITHUB_API_VERSION = "2022-11-28"
#: The login of the GitHub Actions app's bot: the author of the comments the Actions
#: ``GITHUB_TOKEN`` (an installation token of that app) writes.
ACTIONS_BOT = "github-actions[bot]"


class CannotPost(Exception):
    """The comment could not be posted: why (``cause``) and what to do (``fix``)."""

    def __init__(self, cause: str, fix: str) -> None:
        super().__init__(cause)
        self.cause = cause
        self.fix = fix


class ApiError(Exception):
    """A final answer that is not a success (a 4xx, or a 3xx: redirects are not followed, and
    ``location`` is where it pointed)."""

    def __init__(self, status: int, message: str, location: str = "") -> None:
        super().__init__(f"{status} {message}".strip())
        self.status = status
        self.message = message
        self.location = location


class Unreachable(Exception):
    """A request to ``host`` that failed for a transient reason on each of its ``attempts``
    (``cause``: the last one; ``wait``: what the server asked to wait before the next, if it
    said), or that a rate limit or ``Retry-After`` asked to wait longer than :data:`MAX_WAIT`
    for (``too_long``)."""

    def __init__(
        self,
        cause: str,
        *,
        host: str,
        attempts: int = 1,
        wait: float | None = None,
        too_long: bool = False,
    ) -> None:
        super().__init__(cause)
        self.cause = cause
        self.host = host
        self.attempts = attempts
        self.wait = wait
        self.too_long = too_long


class _Transient(Exception):
    def __init__(self, cause: str, wait: float | None = None) -> None:
        super().__init__(cause)
        self.cause = cause
        self.wait = wait


@dataclass(frozen=True, slots=True)
class Answer:
    """A successful answer: its status, headers and decoded JSON (None when empty)."""

    status: int
    headers: Mapping[str, str]  # names in lower case
    data: Any


@dataclass(frozen=True, slots=True)
class Comment:
    """One comment of a pull request (a note of a merge request)."""

    id: int
    body: str
    author: str
    bot: bool
    url: str


@dataclass(frozen=True, slots=True)
class Posted:
    """What :func:`publish` did: ``created``, ``updated`` or ``unchanged``, and the comment's
    address ("" when the API did not give it)."""

    action: str
    url: str


def _pause(seconds: float) -> None:
    """Wait between attempts (one place, so tests can record the waits instead)."""
    time.sleep(seconds)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are answers, not hops: the token must not follow one to another address."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme.lower(), (parts.hostname or "").lower(), parts.port


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def retry_after(
    headers: Mapping[str, str], *, limited: bool = False, now: float | None = None
) -> float | None:
    """The seconds a ``Retry-After`` header (seconds or an HTTP date) asks to wait, or, for a
    rate limit (``limited``), its reset (``X-RateLimit-Reset`` on GitHub, ``RateLimit-Reset`` on
    GitLab: a Unix time; GitHub sends it on every answer, so it means nothing otherwise). None
    when no header says. ``headers`` has lower-case names."""
    now = time.time() if now is None else now
    value = (headers.get("retry-after") or "").strip()
    if value:
        if value.isdigit():
            return float(value)
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            when = None
        if when is not None:
            return max(0.0, when.timestamp() - now)
    if not limited:
        return None
    for name in ("x-ratelimit-reset", "ratelimit-reset"):
        reset = (headers.get(name) or "").strip()
        if reset.isdigit():
            return max(0.0, float(reset) - now)
    return None


def _rate_limited(status: int, headers: Mapping[str, str]) -> bool:
    if status == 429:
        return True
    remaining = (headers.get("x-ratelimit-remaining") or "").strip()
    return status == 403 and (remaining == "0" or bool(headers.get("retry-after")))


def _message(raw: bytes) -> str:
    """The message of an error answer (``message``/``error`` of its JSON), short, one line."""
    text = raw.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        found = data.get("message") or data.get("error") or ""
        text = found if isinstance(found, str) else json.dumps(found, ensure_ascii=False)
    text = " ".join(text.split())
    return text[:200] + ("…" if len(text) > 200 else "")


class Client:
    """JSON over HTTPS to one API origin, with the module's timeout, retry and token rules."""

    def __init__(self, base: str, headers: Mapping[str, str], *, what: str) -> None:
        scheme, host, _port = _origin(base)
        if scheme not in ("http", "https") or not host:
            raise CannotPost(
                f"the API address {base!r} is not an http(s) address",
                fix=f"set {what} to the API's https:// address",
            )
        if scheme == "http" and not _loopback(host):
            raise CannotPost(
                f"the API address {base} is plain http: the token would cross the network "
                "unencrypted",
                fix=f"set {what} to the API's https:// address",
            )
        self.base = base.rstrip("/")
        self.host = host
        self._headers = dict(headers)
        self._origin = _origin(base)
        self._opener = urllib.request.build_opener(_NoRedirect)

    def call(self, method: str, url: str, payload: Any = None, *, retry: bool = True) -> Answer:
        """``method url`` with ``payload`` as JSON; the answer of the first success.

        Raises :class:`ApiError` for a final 4xx (or 3xx), :class:`Unreachable` when every
        attempt failed for a transient reason (with ``retry=False`` after the first), or a wait
        longer than :data:`MAX_WAIT` was asked for.
        """
        if _origin(url) != self._origin:
            raise CannotPost(
                f"the API sent a link to another address ({urlsplit(url).hostname}); the token "
                f"is only sent to {self.host}",
                fix="check the API address (GITHUB_API_URL or CI_API_V4_URL)",
            )
        attempts = RETRIES + 1 if retry else 1
        for attempt in range(attempts):
            try:
                return self._once(method, url, payload)
            except _Transient as exc:
                if exc.wait is not None and exc.wait > MAX_WAIT:
                    raise Unreachable(
                        exc.cause, host=self.host, wait=exc.wait, too_long=True
                    ) from None
                if attempt == attempts - 1:
                    raise Unreachable(
                        exc.cause, host=self.host, attempts=attempts, wait=exc.wait
                    ) from None
                _pause(exc.wait if exc.wait is not None else BACKOFF[attempt])
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _once(self, method: str, url: str, payload: Any) -> Answer:
        data = None
        headers = dict(self._headers)
        if payload is not None:
            data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
            headers["Content-Type"] = "application/json; charset=utf-8"
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with self._opener.open(request, timeout=TIMEOUT) as answer:
                raw = answer.read(MAX_ANSWER_BYTES + 1)
                status, got = answer.status, _lower(answer.headers)
        except urllib.error.HTTPError as exc:
            got = _lower(exc.headers)
            try:
                raw = exc.read(64 * 1024)
            except (OSError, http.client.HTTPException):
                raw = b""
            finally:
                exc.close()
            reason = f"HTTP {exc.code} {_message(raw)}".strip()
            if exc.code >= 500:
                raise _Transient(reason, retry_after(got)) from None
            if _rate_limited(exc.code, got):
                wait = retry_after(got, limited=True)
                raise _Transient(
                    f"rate limited ({reason})", MAX_WAIT if wait is None else wait
                ) from None
            raise ApiError(exc.code, _message(raw), got.get("location", "")) from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, ssl.SSLCertVerificationError):
                raise CannotPost(
                    f"the TLS certificate of {self.host} is not trusted ({exc.reason.reason})",
                    fix="point SSL_CERT_FILE at your CA bundle (GitHub Enterprise, self-managed "
                    "GitLab)",
                ) from None
            raise _Transient(f"no connection to {self.host} ({exc.reason})") from None
        except TimeoutError:
            raise _Transient(f"no answer from {self.host} within {TIMEOUT:g} s") from None
        except (OSError, http.client.HTTPException) as exc:
            raise _Transient(f"the connection to {self.host} broke ({exc!r})") from None
        if len(raw) > MAX_ANSWER_BYTES:
            raise CannotPost(
                f"{self.host} answered with more than {MAX_ANSWER_BYTES:,} bytes",
                fix="check the API address (GITHUB_API_URL or CI_API_V4_URL)",
            )
        try:
            decoded = json.loads(raw.decode("utf-8")) if raw.strip() else None
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise CannotPost(
                f"{self.host} answered {method} {urlsplit(url).path} with something that is "
                "not JSON",
                fix="check the API address (GITHUB_API_URL or CI_API_V4_URL)",
            ) from None
        return Answer(status, got, decoded)


def json_object(value: object) -> Mapping[str, Any]:
    """``value`` when it is a JSON object, else an empty one (the optional parts of an API
    answer or of a CI event)."""
    return value if isinstance(value, dict) else {}


def _lower(headers: Any) -> dict[str, str]:
    """An answer's headers by lower-case name (the last of a repeated one)."""
    return {str(k).lower(): str(v) for k, v in headers.items()} if headers is not None else {}


_LINK = re.compile(r"<([^>]*)>\s*((?:;\s*[^;,]*)*)")


def next_link(header: str | None) -> str | None:
    """The ``rel="next"`` address of a ``Link`` header, or None."""
    for match in _LINK.finditer(header or ""):
        params = match.group(2)
        rel = re.search(r'rel\s*=\s*"?([^";]*)"?', params)
        if rel and "next" in rel.group(1).split():
            return match.group(1)
    return None


def _records(answer: Answer, what: str, host: str) -> list[Mapping[str, Any]]:
    if not isinstance(answer.data, list) or not all(isinstance(r, dict) for r in answer.data):
        raise CannotPost(
            f"{host} answered the list of {what} with something else",
            fix="check the API address (GITHUB_API_URL or CI_API_V4_URL)",
        )
    return answer.data


class GitHub:
    """Issue comments of one pull request: ``/repos/{owner}/{repo}/issues/{number}/comments``."""

    name = "GitHub"
    limit = GITHUB_LIMIT

    def __init__(self, api: str, token: str, repo: str, number: int, *, fork: str = "") -> None:
        self.client = Client(
            api,
            {
                "Authorization": f"Bearer {token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": GITHUB_API_VERSION,
                "User-Agent": "pytest-retrieval",
            },
            what="GITHUB_API_URL",
        )
        self.repo = repo
        self.number = number
        self.fork = fork
        self._repo_path = "/".join(quote(part, safe="") for part in repo.split("/"))
        self._me: str | None = None

    @property
    def where(self) -> str:
        return f"pull request #{self.number} of {self.repo}"

    def identify(self) -> None:
        """Learn the token's user (``GET /user``); an Actions or app token cannot (403), and
        then only comments by :data:`ACTIONS_BOT` count as the command's own."""
        try:
            answer = self.client.call("GET", f"{self.client.base}/user")
        except ApiError as exc:
            if exc.status == 401:
                raise self.explain(exc, "read the token's user") from None
            return
        login = answer.data.get("login") if isinstance(answer.data, dict) else None
        self._me = login if isinstance(login, str) else None

    def comments(self) -> Iterator[Comment]:
        """Every comment, oldest first, page by page."""
        url: str | None = (
            f"{self.client.base}/repos/{self._repo_path}/issues/{self.number}/comments?per_page=100"
        )
        pages = 0
        while url is not None:
            pages += 1
            if pages > MAX_PAGES:
                raise _too_many(self.where)
            answer = self._call("GET", url, "list the comments")
            for record in _records(answer, "comments", self.client.host):
                yield self._comment(record)
            url = next_link(answer.headers.get("link"))

    def ours(self, comment: Comment) -> bool:
        if self._me:
            return comment.author == self._me
        # The token's user is unknown: the Actions GITHUB_TOKEN's comments are by its bot.
        # Another app's bot comment is not ours to edit (GitHub refuses, 403).
        return comment.bot and comment.author == ACTIONS_BOT

    def create(self, body: str) -> str:
        url = f"{self.client.base}/repos/{self._repo_path}/issues/{self.number}/comments"
        answer = self._call("POST", url, "create the comment", {"body": body}, retry=False)
        return self._url(answer)

    def update(self, comment: Comment, body: str) -> str:
        url = f"{self.client.base}/repos/{self._repo_path}/issues/comments/{comment.id}"
        return self._url(self._call("PATCH", url, "update the comment", {"body": body}))

    def _call(
        self, method: str, url: str, action: str, payload: Any = None, *, retry: bool = True
    ) -> Answer:
        try:
            return self.client.call(method, url, payload, retry=retry)
        except ApiError as exc:
            raise self.explain(exc, action) from None

    def _comment(self, record: Mapping[str, Any]) -> Comment:
        user = json_object(record.get("user"))
        return Comment(
            id=int(record.get("id") or 0),
            body=str(record.get("body") or ""),
            author=str(user.get("login") or ""),
            bot=user.get("type") == "Bot",
            url=str(record.get("html_url") or ""),
        )

    def _url(self, answer: Answer) -> str:
        data = answer.data if isinstance(answer.data, dict) else {}
        return str(data.get("html_url") or "")

    def explain(self, error: ApiError, action: str) -> CannotPost:
        """A refusal as the cause a user reads and the fix."""
        said = _said(error)
        if 300 <= error.status < 400:
            return _redirected(error, "GitHub", action, "GITHUB_API_URL")
        if error.status == 401:
            return CannotPost(
                f"GitHub refused the token ({said})",
                fix="set GITHUB_TOKEN to a valid token, e.g. env: GITHUB_TOKEN: "
                "${{ secrets.GITHUB_TOKEN }}",
            )
        if error.status == 403 and self.fork:
            return CannotPost(
                f"GitHub refused to {action} on {self.where} ({said}): the pull request comes "
                f"from the fork {self.fork}, and a fork's pull_request run gets a read-only "
                "GITHUB_TOKEN",
                fix="post the comment from a second workflow on workflow_run (see 'Pull "
                "requests from forks' in the reports guide)",
            )
        if error.status == 403:
            return CannotPost(
                f"GitHub refused to {action} on {self.where} ({said})",
                fix="grant the job permissions: pull-requests: write (a repository may make "
                "GITHUB_TOKEN read-only: Settings > Actions > General > Workflow permissions)",
            )
        if error.status == 404:
            return CannotPost(
                f"GitHub found no {self.where}, or the token cannot see it ({said})",
                fix="check GITHUB_REPOSITORY and --pr, and that the token can read the repository",
            )
        return CannotPost(
            f"GitHub answered {said} when asked to {action} on {self.where}",
            fix="re-run the job; if it persists, report it with this line",
        )

    def find_pull_request(self, owner: str, branch: str, sha: str) -> int:
        """The open pull request whose head is ``owner:branch`` at commit ``sha`` (a
        ``workflow_run`` of a fork's pull request does not name it)."""
        query = urlencode({"head": f"{owner}:{branch}", "state": "open", "per_page": "100"})
        answer = self._call(
            "GET",
            f"{self.client.base}/repos/{self._repo_path}/pulls?{query}",
            "find the pull request",
        )
        for record in _records(answer, "pull requests", self.client.host):
            head = json_object(record.get("head"))
            number = record.get("number")
            if head.get("sha") == sha and isinstance(number, int):
                return number
        raise CannotPost(
            f"no open pull request of {self.repo} has the commit {sha[:12]} of {owner}:{branch} "
            "as its head (it was closed, or a newer push replaced it: that push's run posts)",
            fix="nothing to do for this run; pass --pr N to post anyway",
        )


class GitLab:
    """Notes of one merge request: ``/projects/:id/merge_requests/:iid/notes``."""

    name = "GitLab"
    limit = GITLAB_LIMIT

    def __init__(self, api: str, token: str, project: str, iid: int, *, web: str = "") -> None:
        self.client = Client(
            api,
            {
                "PRIVATE-TOKEN": token,
                "Accept": "application/json",
                "User-Agent": "pytest-retrieval",
            },
            what="CI_API_V4_URL",
        )
        self.project = project
        self.number = iid
        self.web = web.rstrip("/")
        self._path = f"/projects/{quote(project, safe='')}/merge_requests/{iid}/notes"
        self._me: int | None = None

    @property
    def where(self) -> str:
        return f"merge request !{self.number} of project {self.project}"

    def identify(self) -> None:
        """Learn the token's user (``GET /user``): only its notes are the command's own."""
        answer = self._call("GET", f"{self.client.base}/user", "read the token's user")
        found = answer.data.get("id") if isinstance(answer.data, dict) else None
        if not isinstance(found, int):
            raise CannotPost(
                f"{self.client.host} answered GET /user without the user's id",
                fix="check CI_API_V4_URL",
            )
        self._me = found

    def comments(self) -> Iterator[Comment]:
        """Every note, oldest first, page by page (system notes left out)."""
        page: str | None = "1"
        pages = 0
        while page:
            pages += 1
            if pages > MAX_PAGES:
                raise _too_many(self.where)
            query = urlencode(
                {"per_page": "100", "page": page, "sort": "asc", "order_by": "created_at"}
            )
            answer = self._call("GET", f"{self.client.base}{self._path}?{query}", "list the notes")
            for record in _records(answer, "notes", self.client.host):
                if record.get("system"):
                    continue
                author = json_object(record.get("author"))
                note_id = int(record.get("id") or 0)
                yield Comment(
                    id=note_id,
                    body=str(record.get("body") or ""),
                    author=str(author.get("id") or ""),
                    bot=False,
                    url=self._url(note_id),
                )
            following = (answer.headers.get("x-next-page") or "").strip()
            page = following if following.isdigit() else None

    def ours(self, comment: Comment) -> bool:
        return self._me is not None and comment.author == str(self._me)

    def create(self, body: str) -> str:
        answer = self._call(
            "POST",
            f"{self.client.base}{self._path}",
            "create the note",
            {"body": body},
            retry=False,
        )
        data = answer.data if isinstance(answer.data, dict) else {}
        return self._url(int(data.get("id") or 0))

    def update(self, comment: Comment, body: str) -> str:
        url = f"{self.client.base}{self._path}/{comment.id}"
        self._call("PUT", url, "update the note", {"body": body})
        return comment.url

    def _url(self, note_id: int) -> str:
        if self.web and note_id:
            return f"{self.web}/-/merge_requests/{self.number}#note_{note_id}"
        return ""

    def _call(
        self, method: str, url: str, action: str, payload: Any = None, *, retry: bool = True
    ) -> Answer:
        try:
            return self.client.call(method, url, payload, retry=retry)
        except ApiError as exc:
            raise self.explain(exc, action) from None

    def explain(self, error: ApiError, action: str) -> CannotPost:
        """A refusal as the cause a user reads and the fix."""
        said = _said(error)
        if 300 <= error.status < 400:
            return _redirected(error, "GitLab", action, "CI_API_V4_URL")
        if error.status == 401:
            return CannotPost(
                f"GitLab refused the token ({said})",
                fix="set GITLAB_TOKEN to a project or personal access token with the api scope "
                "(CI_JOB_TOKEN cannot post notes)",
            )
        if error.status == 403:
            return CannotPost(
                f"GitLab refused to {action} on {self.where} ({said})",
                fix="give GITLAB_TOKEN the api scope and at least the Reporter role in the project",
            )
        if error.status == 404:
            return CannotPost(
                f"GitLab found no {self.where}, or the token cannot see it ({said})",
                fix="check CI_MERGE_REQUEST_PROJECT_ID (or CI_PROJECT_ID) and --pr, and the "
                "token's access to the project",
            )
        return CannotPost(
            f"GitLab answered {said} when asked to {action} on {self.where}",
            fix="re-run the job; if it persists, report it with this line",
        )


def _said(error: ApiError) -> str:
    """``403 Forbidden``: the status and the API's message (GitLab's begins with the status)."""
    if error.message.startswith(str(error.status)):
        return error.message
    return f"{error.status} {error.message}".strip()


def _redirected(error: ApiError, name: str, action: str, variable: str) -> CannotPost:
    to = (
        f" to {urlsplit(error.location).hostname or error.location[:100]}" if error.location else ""
    )
    return CannotPost(
        f"{name} answered a redirect ({error.status}{to}) when asked to {action}; redirects "
        "are not followed, so the token goes to no other address",
        fix=f"set {variable} to the API's own address",
    )


def _too_many(where: str) -> CannotPost:
    return CannotPost(
        f"{where} has more than {MAX_PAGES * 100:,} comments; the command reads no further",
        fix="pass --key with a new key to start a new comment",
    )


Forge = GitHub | GitLab


def publish(forge: Forge, body: str, mark: str) -> Posted:
    """Update the forge's comment carrying ``mark`` (the oldest, if several) or create one.

    A create that failed for a transient reason is retried only after looking again, so a
    request that reached the server before the connection broke never leaves a second
    comment. Raises :class:`CannotPost` (with the forge's explanation) or :class:`Unreachable`.
    """
    from ..report.comment import carries, same_body

    forge.identify()
    for attempt in range(RETRIES + 1):
        found = next((c for c in forge.comments() if carries(c.body, mark) and forge.ours(c)), None)
        if found is not None:
            if same_body(found.body, body):
                return Posted("unchanged", found.url)
            return Posted("updated", forge.update(found, body))
        try:
            return Posted("created", forge.create(body))
        except Unreachable as exc:
            if exc.too_long:
                raise
            if attempt == RETRIES:
                raise Unreachable(exc.cause, host=exc.host, attempts=RETRIES + 1) from None
            _pause(exc.wait if exc.wait is not None else BACKOFF[attempt])
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises
