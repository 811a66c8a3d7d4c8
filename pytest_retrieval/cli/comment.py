"""``pytest-retrieval comment --github|--gitlab REPORT.md``: the Markdown report as one pull-request
comment that updates itself.

Where to post comes from the CI job's environment (or ``--pr``):

* **GitHub Actions**: the token from ``GITHUB_TOKEN``, the API from ``GITHUB_API_URL`` (GitHub
  Enterprise; default ``https://api.github.com``), the repository from ``GITHUB_REPOSITORY``,
  the pull request from the event file ``GITHUB_EVENT_PATH`` (``pull_request`` and
  ``pull_request_target``: ``pull_request.number``; ``issue_comment`` on a pull request:
  ``issue.number``; ``workflow_run``: the run's pull request, looked up by its head branch and
  commit when the event does not name it, as for a fork's).
* **GitLab CI**: the token from ``GITLAB_TOKEN`` (sent as ``PRIVATE-TOKEN``; ``CI_JOB_TOKEN``
  cannot post notes), the API from ``CI_API_V4_URL``, the project from
  ``CI_MERGE_REQUEST_PROJECT_ID`` (the merge request's project, also for a fork's) or
  ``CI_PROJECT_ID``, the merge request from ``CI_MERGE_REQUEST_IID``.

The comment is found again by its marker (:mod:`pytest_retrieval.report.comment`: the golden
set's name and the CI job, or ``--key``) and by its author (:mod:`.forges`).

Exit status: 0 when the comment was created, updated or already up to date, and also when it
cannot be posted (no token, a fork's read-only token, no pull request, the API unreachable after
retries): then one line ``pytest-retrieval comment: warning: CAUSE. Fix: FIX`` goes to stderr,
since a comment is a convenience and the gate is the pytest step. ``--strict`` makes that an
error, exit 1. 2 is a usage error as in every command (no ``--github``/``--gitlab``, a report
file that is missing, unreadable or empty). The token is never printed.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import InputError, Problem
from ..reading import load_json, read_text_file
from ..text import for_terminal
from .args import positive_int
from .forges import json_object
from .output import echo

if TYPE_CHECKING:
    from .forges import Forge

#: The largest report file read (the Markdown report is capped at 60,000 characters).
MAX_REPORT_BYTES = 16 * 1024 * 1024
#: The largest event file read (GitHub's event payloads are far smaller).
MAX_EVENT_BYTES = 32 * 1024 * 1024

_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+\Z")
_PROJECT = re.compile(r"[A-Za-z0-9_.\-/]+\Z")
_NUMBER = re.compile(r"[0-9]{1,12}\Z")
_PREFIX = "pytest-retrieval comment"
#: Tokens at least this long are masked in what the command prints.
_MASKED = 8


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``comment`` command."""
    parser = subparsers.add_parser(
        "comment",
        help="post the Markdown report as one pull-request comment that updates itself",
        description=(
            "Create or update the one comment of this golden set and CI job on the pull "
            "request (GitHub) or merge request (GitLab) the CI job runs for. When it cannot "
            "post (no token, a fork's read-only token, no pull request) it prints one warning "
            "with the cause and the fix and exits 0, or 1 with --strict."
        ),
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--github",
        dest="provider",
        action="store_const",
        const="github",
        help="post on the pull request of this GitHub Actions job",
    )
    where.add_argument(
        "--gitlab",
        dest="provider",
        action="store_const",
        const="gitlab",
        help="post on the merge request of this GitLab CI job",
    )
    parser.add_argument(
        "report", metavar="REPORT.md", help="the Markdown report (pytest --retrieval-markdown)"
    )
    parser.add_argument(
        "--key",
        type=_key,
        metavar="KEY",
        help="what tells this comment from others on the pull request (default: "
        "'golden=NAME job=JOB', the report's golden set and the CI job); e.g. the matrix "
        "entry of a matrix job",
    )
    parser.add_argument(
        "--pr",
        type=positive_int,
        metavar="N",
        help="the pull request's number (GitLab: the merge request's IID) instead of the one "
        "the CI environment names",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when the comment cannot be posted (default: a warning, exit 0)",
    )
    parser.set_defaults(func=run)


def _key(text: str) -> str:
    from ..report.comment import MAX_KEY

    if not text.strip():
        raise argparse.ArgumentTypeError("the key is empty")
    if len(text) > MAX_KEY:
        raise argparse.ArgumentTypeError(f"the key is longer than {MAX_KEY} characters")
    return text


@dataclass(frozen=True, slots=True)
class Target:
    """Where the comment goes and what it says about the run, from the CI environment."""

    provider: str
    api: str
    token: str
    repo: str
    number: int | None
    job: str
    commit: str | None = None
    run_url: str | None = None
    fork: str = ""
    web: str = ""
    # A workflow_run of a fork's pull request names no pull request: (owner, branch, sha).
    lookup: tuple[str, str, str] | None = None


def run(args: argparse.Namespace) -> int:
    """Post the report; 0 when posted or when it cannot be (1 then with ``--strict``)."""
    from ..report.comment import comment_body, default_key, footer_line, full_report_at, marker
    from . import forges

    report = _read_report(args.report)
    token = ""
    try:
        if args.provider == "github":
            target = _github(os.environ, args.pr)
        else:
            target = _gitlab(os.environ, args.pr)
        token = target.token
        forge = _forge(target)
        name = os.path.basename(args.report)
        key = args.key or default_key(report, name, target.job)
        mark = marker(key)
        body = comment_body(
            report,
            mark,
            limit=forge.limit,
            provider=forge.name,
            full_report=full_report_at(target.provider, name),
            footer=footer_line(target.commit, target.run_url),
        )
        posted = forges.publish(forge, body, mark)
    except forges.CannotPost as exc:
        return _cannot(args.strict, exc.cause, exc.fix, token)
    except forges.Unreachable as exc:
        if exc.too_long:
            cause = f"{exc.host} asks to wait {exc.wait or 0:.0f} s: {exc.cause}"
            fix = "re-run the job later"
        else:
            tries = f"{exc.attempts} attempts" if exc.attempts > 1 else "the attempt"
            cause = f"{exc.host} failed {tries} (the last: {exc.cause})"
            fix = (
                "re-run the job; check the runner's network, its proxy (HTTPS_PROXY) and "
                + _variable(args.provider)
            )
        return _cannot(args.strict, cause, fix, token)
    # The comment's address when the API gave one (else the pull request is named once).
    address = f": {posted.url}" if posted.url else ""
    if posted.action == "unchanged":
        said = f"the comment on {forge.where} is up to date{address}"
    else:
        said = f"{posted.action} the comment on {forge.where}{address}"
    _say(said, token, err=False)
    return 0


def _variable(provider: str) -> str:
    return "GITHUB_API_URL" if provider == "github" else "CI_API_V4_URL"


def _forge(target: Target) -> Forge:
    """The API client of the target's pull request (a ``workflow_run`` of a fork's pull request
    looks its number up first)."""
    from . import forges

    if target.provider == "gitlab":
        return forges.GitLab(
            target.api, target.token, target.repo, target.number or 0, web=target.web
        )
    github = forges.GitHub(
        target.api, target.token, target.repo, target.number or 0, fork=target.fork
    )
    if target.number is None and target.lookup is not None:
        github.number = github.find_pull_request(*target.lookup)
    return github


def _read_report(path: str) -> str:
    """The report's text; a missing, unreadable or empty file is a usage error."""
    try:
        text = read_text_file(path, what="report", limit=MAX_REPORT_BYTES)
    except FileNotFoundError:
        raise InputError(
            Problem(
                "report not found",
                fix="write it first: pytest --retrieval-markdown PATH (or pytest-retrieval "
                "report ARTIFACT --markdown PATH)",
                source=path,
            )
        ) from None
    if not text.strip():
        raise InputError(Problem("the report is empty", fix="check the path", source=path))
    return text


def _say(line: str, token: str, *, err: bool) -> None:
    """One line, user text escaped, the token (should any answer echo it) masked."""
    text = for_terminal(line)
    if len(token) >= _MASKED:  # a real token; a few letters would mask ordinary words
        text = text.replace(token, "***")
    echo(f"{_PREFIX}: {text}", err=err)


def _cannot(strict: bool, cause: str, fix: str, token: str) -> int:
    label = "error" if strict else "warning"
    fix = fix[0].lower() + fix[1:] if fix else fix
    _say(f"{label}: could not post the comment: {cause}. Fix: {fix}", token, err=True)
    return 1 if strict else 0


# --- the environment --------------------------------------------------------------------------


def _cannot_post(cause: str, fix: str) -> Exception:
    from .forges import CannotPost

    return CannotPost(cause, fix)


def _api(environ: Mapping[str, str], name: str, default: str | None) -> str:
    value = (environ.get(name) or "").strip() or default
    if not value:
        raise _cannot_post(
            f"{name} is not set (this is not a GitLab CI job)",
            fix="run the command in a GitLab CI job, or set CI_API_V4_URL, CI_PROJECT_ID and --pr",
        )
    return value.rstrip("/")


def _github(environ: Mapping[str, str], number: int | None) -> Target:
    repo = (environ.get("GITHUB_REPOSITORY") or "").strip()
    if not _REPO.match(repo):
        raise _cannot_post(
            "GITHUB_REPOSITORY is not set to OWNER/NAME"
            + (f" (it is {repo!r})" if repo else " (this is not a GitHub Actions job)"),
            fix="run the command in a GitHub Actions job, or set GITHUB_REPOSITORY and --pr",
        )
    api = _api(environ, "GITHUB_API_URL", "https://api.github.com")
    event = _github_event(environ) if number is None else {}
    pull = _pull_request(event)
    workflow_run = json_object(event.get("workflow_run"))
    lookup = None
    if number is None:
        number = _number(pull.get("number"))
        if (
            number is None
            and isinstance(event.get("issue"), dict)
            and event["issue"].get("pull_request")
        ):
            number = _number(event["issue"].get("number"))
        if number is None and workflow_run:
            number, lookup = _from_workflow_run(workflow_run)
        if number is None and lookup is None:
            raise _no_pull_request(environ)
    token = (environ.get("GITHUB_TOKEN") or "").strip()
    if not token:
        raise _cannot_post(
            "GITHUB_TOKEN is not set",
            fix="give the step env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }} and the job "
            "permissions: pull-requests: write",
        )
    head = json_object(pull.get("head"))
    base = json_object(pull.get("base"))
    head_repo = _full_name(head.get("repo"))
    fork = head_repo if head_repo and head_repo != (_full_name(base.get("repo")) or repo) else ""
    server = (environ.get("GITHUB_SERVER_URL") or "https://github.com").rstrip("/")
    run_id = (environ.get("GITHUB_RUN_ID") or "").strip()
    run_url = str(workflow_run.get("html_url") or "") or (
        f"{server}/{repo}/actions/runs/{run_id}" if _NUMBER.match(run_id) else None
    )
    commit = str(head.get("sha") or workflow_run.get("head_sha") or "") or environ.get("GITHUB_SHA")
    workflow = (environ.get("GITHUB_WORKFLOW") or "").strip()
    job = "/".join(p for p in (workflow, (environ.get("GITHUB_JOB") or "").strip()) if p)
    return Target(
        "github", api, token, repo, number, job, commit, run_url, fork=fork, lookup=lookup
    )


def _github_event(environ: Mapping[str, str]) -> dict[str, Any]:
    path = (environ.get("GITHUB_EVENT_PATH") or "").strip()
    if not path:
        raise _no_pull_request(environ)
    try:
        text = read_text_file(path, what="event file", limit=MAX_EVENT_BYTES)
        event = load_json(text, source=path, what="event file")
    except FileNotFoundError:
        raise _cannot_post(
            f"the event file GITHUB_EVENT_PATH={path} does not exist",
            fix="pass the pull request's number with --pr N",
        ) from None
    except (InputError, ValueError, RecursionError) as exc:
        reason = exc.problems[0].message if isinstance(exc, InputError) else "it is not JSON"
        raise _cannot_post(
            f"the event file GITHUB_EVENT_PATH={path} cannot be read: {reason}",
            fix="pass the pull request's number with --pr N",
        ) from None
    if not isinstance(event, dict):
        raise _cannot_post(
            f"the event file GITHUB_EVENT_PATH={path} is not a JSON object",
            fix="pass the pull request's number with --pr N",
        )
    return event


def _pull_request(event: Mapping[str, Any]) -> Mapping[str, Any]:
    pull = event.get("pull_request")
    return pull if isinstance(pull, dict) else {}


def _from_workflow_run(
    workflow_run: Mapping[str, Any],
) -> tuple[int | None, tuple[str, str, str] | None]:
    """The pull request a ``workflow_run`` event is about: named in ``pull_requests`` (a pull
    request from a branch of the repository), else looked up by head branch and commit (a
    fork's: GitHub leaves ``pull_requests`` empty then)."""
    sha = str(workflow_run.get("head_sha") or "")
    for pull in workflow_run.get("pull_requests") or ():
        if isinstance(pull, dict):
            head = json_object(pull.get("head"))
            number = _number(pull.get("number"))
            if number is not None and (not sha or head.get("sha") in (None, sha)):
                return number, None
    if workflow_run.get("event") not in ("pull_request", "pull_request_target"):
        return None, None
    repository = workflow_run.get("head_repository")
    owner = repository.get("owner") if isinstance(repository, dict) else None
    login = owner.get("login") if isinstance(owner, dict) else None
    branch = workflow_run.get("head_branch")
    if isinstance(login, str) and isinstance(branch, str) and login and branch and sha:
        return None, (login, branch, sha)
    return None, None


def _no_pull_request(environ: Mapping[str, str]) -> Exception:
    name = (environ.get("GITHUB_EVENT_NAME") or "").strip()
    said = f" (GITHUB_EVENT_NAME={name})" if name else ""
    return _cannot_post(
        f"this run is not for a pull request{said}: there is nothing to comment on",
        fix="run the step on pull requests only (if: github.event_name == 'pull_request'), "
        "or name one with --pr N",
    )


def _number(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _full_name(repo: object) -> str:
    return str(repo.get("full_name") or "") if isinstance(repo, dict) else ""


def _gitlab(environ: Mapping[str, str], number: int | None) -> Target:
    api = _api(environ, "CI_API_V4_URL", None)
    project = (environ.get("CI_MERGE_REQUEST_PROJECT_ID") or "").strip() or (
        environ.get("CI_PROJECT_ID") or ""
    ).strip()
    if not _PROJECT.match(project):
        raise _cannot_post(
            "neither CI_MERGE_REQUEST_PROJECT_ID nor CI_PROJECT_ID names a project",
            fix="run the command in a GitLab CI job, or set CI_PROJECT_ID",
        )
    if number is None:
        iid = (environ.get("CI_MERGE_REQUEST_IID") or "").strip()
        if not _NUMBER.match(iid) or int(iid) == 0:
            raise _cannot_post(
                "this pipeline is not for a merge request (CI_MERGE_REQUEST_IID is not set): "
                "there is nothing to comment on",
                fix="run the job in merge request pipelines (rules: - if: $CI_PIPELINE_SOURCE "
                "== 'merge_request_event'), or name one with --pr N",
            )
        number = int(iid)
    token = (environ.get("GITLAB_TOKEN") or "").strip()
    if not token:
        job_token = " (CI_JOB_TOKEN is, but a job token cannot post notes)"
        raise _cannot_post(
            "GITLAB_TOKEN is not set" + (job_token if environ.get("CI_JOB_TOKEN") else ""),
            fix="store a project access token (api scope, Reporter role) as the masked CI/CD "
            "variable GITLAB_TOKEN",
        )
    commit = (environ.get("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA") or "").strip() or environ.get(
        "CI_COMMIT_SHA"
    )
    web = (environ.get("CI_MERGE_REQUEST_PROJECT_URL") or "").strip() or (
        environ.get("CI_PROJECT_URL") or ""
    ).strip()
    return Target(
        "gitlab",
        api,
        token,
        project,
        number,
        (environ.get("CI_JOB_NAME") or "").strip(),
        commit,
        (environ.get("CI_JOB_URL") or "").strip() or None,
        web=web,
    )
