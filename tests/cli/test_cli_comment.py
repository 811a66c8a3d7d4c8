"""``pytest-retrieval comment --github|--gitlab REPORT.md``: one pull-request comment per golden set
and job, created once and updated on every push, against a loopback server that speaks the API
subset (tests/helpers/forge_server.py); the failures a CI job meets as one warning and exit 0."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from forge_server import Fault, ForgeServer
from paths import GOLDEN_FILES

from pytest_retrieval.cli import EXIT_OK, EXIT_USAGE, forges, main

REPORT = GOLDEN_FILES / "report-fail.md"
TOKEN = "ghs_TESTTOKEN0123456789abcdefABCDEF"
HEAD_SHA = "0123456789abcdef0123456789abcdef01234567"
THREAD = "github:o/r#12"
MR_THREAD = "gitlab:42!7"
# The marker of report-fail.md's golden set ("Golden set help-centre (corpus 2026-01): ...") in
# the job "retrieval" of the workflow "CI".
MARKER = "<!-- pytest-retrieval: golden=help-centre job=CI/retrieval -->"
FOOTER = (
    "<sub>pytest-retrieval · commit `0123456789ab` · "
    "[CI run](https://github.com/o/r/actions/runs/77)</sub>"
)
_CLEARED = ("GITHUB_", "GITLAB_", "CI_", "GH_")
_PROXIES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ForgeServer]:
    """The loopback forge, with the test process's own CI variables and proxies cleared (the
    suite itself may run in GitHub Actions)."""
    for name in list(os.environ):
        if name.startswith(_CLEARED) or name.lower() in _PROXIES:
            monkeypatch.delenv(name)
    with ForgeServer() as forge:
        yield forge


@pytest.fixture(autouse=True)
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits between attempts, recorded instead of slept."""
    recorded: list[float] = []
    monkeypatch.setattr(forges, "_pause", recorded.append)
    return recorded


def pull_request_event(tmp_path: Path, *, head_repo: str = "o/r") -> Path:
    event = {
        "number": 12,
        "pull_request": {
            "number": 12,
            "head": {"sha": HEAD_SHA, "repo": {"full_name": head_repo}},
            "base": {"repo": {"full_name": "o/r"}},
        },
    }
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event), encoding="utf-8")
    return path


@pytest.fixture
def github(server: ForgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ForgeServer:
    """A GitHub Actions job of a pull_request event for PR #12 of o/r."""
    env = {
        "GITHUB_API_URL": server.url,
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(pull_request_event(tmp_path)),
        "GITHUB_WORKFLOW": "CI",
        "GITHUB_JOB": "retrieval",
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_RUN_ID": "77",
        "GITHUB_SHA": "f" * 40,  # the merge commit: not what the comment names
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return server


@pytest.fixture
def gitlab(server: ForgeServer, monkeypatch: pytest.MonkeyPatch) -> ForgeServer:
    """A GitLab CI job of a merge request pipeline for !7 of project 42, run in a fork (project
    99): notes go to the merge request's project."""
    env = {
        "CI_API_V4_URL": f"{server.url}/api/v4",
        "GITLAB_TOKEN": TOKEN,
        "CI_PROJECT_ID": "99",
        "CI_MERGE_REQUEST_PROJECT_ID": "42",
        "CI_MERGE_REQUEST_IID": "7",
        "CI_MERGE_REQUEST_PROJECT_URL": "https://gitlab.example/group/app",
        "CI_JOB_NAME": "retrieval",
        "CI_JOB_URL": "https://gitlab.example/group/app/-/jobs/5",
        "CI_COMMIT_SHA": HEAD_SHA,
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return server


def expected_body(marker: str = MARKER, footer: str = FOOTER) -> str:
    return f"{marker}\n{REPORT.read_text(encoding='utf-8').rstrip()}\n\n{footer}\n"


def comment(*args: str) -> int:
    return main(["comment", *args])


# --- GitHub -----------------------------------------------------------------------------------


def test_github_creates_one_comment_holding_the_marker_the_report_and_the_commit(
    github: ForgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert comment("--github", str(REPORT)) == EXIT_OK
    assert github.bodies(THREAD) == [expected_body()]
    [post] = github.requests("POST")
    assert post.path == "/repos/o/r/issues/12/comments"
    assert post.headers["authorization"] == f"Bearer {TOKEN}"
    assert post.headers["accept"] == "application/vnd.github+json"
    assert post.headers["x-github-api-version"] == "2022-11-28"
    assert [r.query.get("per_page") for r in github.requests("GET")[1:]] == ["100"]
    out, err = capsys.readouterr()
    assert out == (
        "pytest-retrieval comment: created the comment on pull request #12 of o/r: "
        "https://github.com/o/r/pull/12#issuecomment-1001\n"
    )
    assert err == ""


def test_without_the_comments_address_the_line_names_the_pull_request_once(
    github: ForgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    github.state.html_urls = False  # an API that answers without html_url
    assert comment("--github", str(REPORT)) == EXIT_OK
    assert comment("--github", str(REPORT)) == EXIT_OK
    assert capsys.readouterr().out == (
        "pytest-retrieval comment: created the comment on pull request #12 of o/r\n"
        "pytest-retrieval comment: the comment on pull request #12 of o/r is up to date\n"
    )


def test_the_next_push_updates_the_comment_found_on_page_2_and_creates_none(
    github: ForgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    github.state.page_size = 2  # pages of 2: the marker is on page 2
    github.add_comment(THREAD, "LGTM", login="alice")
    github.add_comment(THREAD, "please rebase", login="bob")
    ours = github.add_comment(
        THREAD, f"{MARKER}\nthe last push's report", login="github-actions[bot]", bot=True
    )
    github.add_comment(THREAD, "thanks", login="alice")
    assert comment("--github", str(REPORT)) == EXIT_OK
    assert github.comment(THREAD, ours)["body"] == expected_body()
    assert len(github.bodies(THREAD)) == 4
    assert github.requests("POST") == []
    listed = [
        r.query.get("page", "1") for r in github.requests("GET") if r.path.endswith("/comments")
    ]
    assert listed == ["1", "2"]  # followed Link rel="next", stopped at the comment
    [patch] = github.requests("PATCH")
    assert patch.path == f"/repos/o/r/issues/comments/{ours}"
    assert capsys.readouterr().out.startswith("pytest-retrieval comment: updated the comment on")


def test_an_unchanged_report_leaves_the_comment_alone(
    github: ForgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    ours = github.add_comment(
        THREAD, expected_body().replace("\n", "\r\n"), login="github-actions[bot]", bot=True
    )
    assert comment("--github", str(REPORT)) == EXIT_OK
    assert github.requests("PATCH") == github.requests("POST") == []
    assert github.comment(THREAD, ours)["body"] == expected_body().replace("\n", "\r\n")
    assert capsys.readouterr().out == (
        "pytest-retrieval comment: the comment on pull request #12 of o/r is up to date: "
        f"https://github.com/o/r/pull/12#issuecomment-{ours}\n"
    )


def test_another_golden_sets_marker_and_a_persons_copy_of_ours_are_left_alone(
    github: ForgeServer,
) -> None:
    other = "<!-- pytest-retrieval: golden=faq job=CI/retrieval -->\nthe faq set's report"
    forged = f"{MARKER}\n### ✅ Retrieval quality: all gates passed"
    github.add_comment(THREAD, other, login="github-actions[bot]", bot=True)
    github.add_comment(THREAD, forged, login="mallory")  # a person could edit it afterwards
    assert comment("--github", str(REPORT)) == EXIT_OK
    assert github.bodies(THREAD) == [other, forged, expected_body()]


def test_with_the_actions_token_another_apps_comment_is_left_alone_and_a_new_one_created(
    github: ForgeServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # GET /user is 403 (the Actions GITHUB_TOKEN): its comments are github-actions[bot]'s, and
    # another app's bot comment with our marker is not ours (GitHub would refuse the edit, 403).
    other = github.add_comment(THREAD, f"{MARKER}\nother app", login="other-app[bot]", bot=True)
    assert comment("--github", str(REPORT)) == EXIT_OK
    assert github.requests("PATCH") == []
    assert github.comment(THREAD, other)["body"] == f"{MARKER}\nother app"
    assert github.bodies(THREAD) == [f"{MARKER}\nother app", expected_body()]
    assert capsys.readouterr().out.startswith("pytest-retrieval comment: created the comment on")
    # The next push finds the comment it created (by github-actions[bot]) and updates that one.
    newer = tmp_path / "newer.md"
    newer.write_text(REPORT.read_text(encoding="utf-8") + "\n_the next push_\n", encoding="utf-8")
    assert comment("--github", str(newer)) == EXIT_OK
    [patch] = github.requests("PATCH")
    [created] = [c for c in github.state.threads[THREAD] if c["login"] == "github-actions[bot]"]
    assert patch.path == f"/repos/o/r/issues/comments/{created['id']}"
    assert len(github.requests("POST")) == 1
    assert github.comment(THREAD, other)["body"] == f"{MARKER}\nother app"


def test_with_a_personal_token_only_the_tokens_own_comments_are_updated(
    github: ForgeServer,
) -> None:
    github.state.github_user = {"login": "release-bot", "type": "User"}
    someone = github.add_comment(THREAD, f"{MARKER}\nold", login="other-app[bot]", bot=True)
    ours = github.add_comment(THREAD, f"{MARKER}\nold", login="release-bot")
    assert comment("--github", str(REPORT)) == EXIT_OK
    assert github.comment(THREAD, someone)["body"] == f"{MARKER}\nold"
    assert github.comment(THREAD, ours)["body"] == expected_body()


def test_a_matrix_job_keeps_one_comment_per_key(github: ForgeServer) -> None:
    assert comment("--github", str(REPORT), "--key", "py3.11") == EXIT_OK
    assert comment("--github", str(REPORT), "--key", "py3.12") == EXIT_OK
    assert comment("--github", str(REPORT), "--key", "py3.12") == EXIT_OK
    assert github.bodies(THREAD) == [
        expected_body("<!-- pytest-retrieval: py3.11 -->"),
        expected_body("<!-- pytest-retrieval: py3.12 -->"),
    ]


def test_a_forks_read_only_token_is_one_warning_with_the_cause_and_the_fix_and_exit_0(
    github: ForgeServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(pull_request_event(tmp_path, head_repo="eve/r")))
    github.state.faults.append(
        Fault(
            "POST",
            r"/repos/o/r/issues/12/comments",
            403,
            times=9,
            message="Resource not accessible by integration",
        )
    )
    assert comment("--github", str(REPORT)) == EXIT_OK
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "pytest-retrieval comment: warning: could not post the comment: GitHub refused to "
        "create the comment on pull request #12 of o/r (403 Resource not accessible by "
        "integration): the pull request comes from the fork eve/r, and a fork's pull_request "
        "run gets a read-only GITHUB_TOKEN. Fix: post the comment from a second workflow on "
        "workflow_run (see 'Pull requests from forks' in the reports guide)\n"
    )
    assert len(github.requests("POST")) == 1  # a 4xx is never retried
    assert comment("--github", str(REPORT), "--strict") == 1
    assert capsys.readouterr().err.startswith("pytest-retrieval comment: error: could not post")


def test_a_403_of_the_repositorys_own_branch_says_to_grant_pull_requests_write(
    github: ForgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    github.state.faults.append(Fault("POST", r".*/comments", 403, message="Forbidden"))
    assert comment("--github", str(REPORT)) == EXIT_OK
    err = capsys.readouterr().err
    assert "GitHub refused to create the comment on pull request #12 of o/r (403 Forbidden)" in err
    assert "Fix: grant the job permissions: pull-requests: write" in err


def test_a_404_is_not_retried_and_names_the_pull_request(
    github: ForgeServer, waits: list[float], capsys: pytest.CaptureFixture[str]
) -> None:
    github.state.faults.append(Fault("GET", r".*/comments", 404, message="Not Found"))
    assert comment("--github", str(REPORT)) == EXIT_OK
    assert [r.path for r in github.requests()] == ["/user", "/repos/o/r/issues/12/comments"]
    assert waits == []
    err = capsys.readouterr().err
    assert (
        "GitHub found no pull request #12 of o/r, or the token cannot see it (404 Not Found)" in err
    )
    assert err.count("\n") == 1


def test_5xx_answers_are_retried_with_backoff_then_the_comment_is_created_once(
    github: ForgeServer, waits: list[float], capsys: pytest.CaptureFixture[str]
) -> None:
    github.state.faults += [
        Fault("GET", r".*/comments", 503, times=2),
        Fault("POST", r".*/comments", 502),
    ]
    assert comment("--github", str(REPORT)) == EXIT_OK
    assert github.bodies(THREAD) == [expected_body()]
    # two GETs failed (waits 1 s, 2 s), one succeeded, the POST failed: look again (wait 1 s)
    # before posting again, in case the failed POST had created the comment.
    assert waits == [1.0, 2.0, 1.0]
    assert [(r.method, r.path.rsplit("/", 1)[-1]) for r in github.requests()] == [
        ("GET", "user"),
        ("GET", "comments"),
        ("GET", "comments"),
        ("GET", "comments"),
        ("POST", "comments"),
        ("GET", "comments"),
        ("POST", "comments"),
    ]
    assert "created the comment" in capsys.readouterr().out


def test_a_create_whose_answer_was_lost_is_not_posted_twice(github: ForgeServer) -> None:
    # The server stored the comment, but the 502 came back: looking again finds it.
    github.state.faults.append(Fault("POST", r".*/comments", 502, apply=True))
    assert comment("--github", str(REPORT)) == EXIT_OK
    assert github.bodies(THREAD) == [expected_body()]
    assert len(github.requests("POST")) == 1


def test_retry_after_is_respected_and_a_long_rate_limit_gives_up_with_a_warning(
    github: ForgeServer, waits: list[float], capsys: pytest.CaptureFixture[str]
) -> None:
    github.state.faults.append(Fault("GET", r".*/comments", 429, headers={"Retry-After": "7"}))
    assert comment("--github", str(REPORT)) == EXIT_OK
    assert waits == [7.0]
    assert len(github.bodies(THREAD)) == 1
    github.state.faults.append(
        Fault(
            "GET",
            r".*/comments",
            403,
            message="API rate limit exceeded",
            headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "9999999999"},
        )
    )
    capsys.readouterr()
    assert comment("--github", str(REPORT)) == EXIT_OK
    err = capsys.readouterr().err
    assert err.startswith(
        "pytest-retrieval comment: warning: could not post the comment: 127.0.0.1 asks to wait "
    )
    assert err.endswith(
        " s: rate limited (HTTP 403 API rate limit exceeded). Fix: re-run the job later\n"
    )
    assert waits == [7.0]


def test_an_unreachable_api_is_retried_three_times_then_one_warning_and_exit_0(
    github: ForgeServer,
    waits: list[float],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    monkeypatch.setenv("GITHUB_API_URL", f"http://127.0.0.1:{closed}")
    assert comment("--github", str(REPORT)) == EXIT_OK
    assert waits == [1.0, 2.0, 4.0]
    err = capsys.readouterr().err
    assert err.startswith(
        "pytest-retrieval comment: warning: could not post the comment: 127.0.0.1 failed 4 "
        "attempts (the last: no connection to 127.0.0.1 ("
    )
    assert err.endswith(
        ")). Fix: re-run the job; check the runner's network, its proxy (HTTPS_PROXY) and "
        "GITHUB_API_URL\n"
    )
    assert err.count("\n") == 1


def test_without_a_pull_request_a_push_build_warns_and_calls_no_api(
    github: ForgeServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    event = tmp_path / "push.json"
    event.write_text(json.dumps({"ref": "refs/heads/main", "after": HEAD_SHA}), encoding="utf-8")
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    monkeypatch.setenv("GITHUB_EVENT_NAME", "push")
    assert comment("--github", str(REPORT)) == EXIT_OK
    assert capsys.readouterr().err == (
        "pytest-retrieval comment: warning: could not post the comment: this run is not for a "
        "pull request (GITHUB_EVENT_NAME=push): there is nothing to comment on. Fix: run the "
        "step on pull requests only (if: github.event_name == 'pull_request'), or name one "
        "with --pr N\n"
    )
    assert github.requests() == []
    assert comment("--github", str(REPORT), "--strict") == 1
    assert comment("--github", str(REPORT), "--pr", "12") == EXIT_OK  # named: posted
    assert len(github.bodies(THREAD)) == 1


def test_a_malformed_event_file_is_a_warning_that_names_it(
    github: ForgeServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    event = tmp_path / "event.json"
    event.write_text('{"pull_request": {"number": 12', encoding="utf-8")
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    assert comment("--github", str(REPORT)) == EXIT_OK
    assert capsys.readouterr().err == (
        "pytest-retrieval comment: warning: could not post the comment: the event file "
        f"GITHUB_EVENT_PATH={event} cannot be read: the event file is not valid JSON "
        "(Expecting ',' delimiter). Fix: pass the pull request's number with --pr N\n"
    )
    assert github.requests() == []


def test_without_a_token_the_warning_says_how_to_pass_one(
    github: ForgeServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("GITHUB_TOKEN")
    assert comment("--github", str(REPORT)) == EXIT_OK
    assert capsys.readouterr().err == (
        "pytest-retrieval comment: warning: could not post the comment: GITHUB_TOKEN is not "
        "set. Fix: give the step env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }} and the job "
        "permissions: pull-requests: write\n"
    )
    assert github.requests() == []


def test_the_token_is_never_printed_even_when_the_api_echoes_it(
    github: ForgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    github.state.faults.append(Fault("GET", "/user", 401, message=f"Bad credentials {TOKEN}"))
    assert comment("--github", str(REPORT)) == EXIT_OK
    out, err = capsys.readouterr()
    assert TOKEN not in out + err
    assert "GitHub refused the token (401 Bad credentials ***)" in err
    assert all(TOKEN not in r.path and TOKEN not in str(r.query) for r in github.requests())


def test_a_redirect_is_not_followed_so_the_token_stays_with_the_api(
    github: ForgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    with ForgeServer() as elsewhere:
        github.state.faults.append(
            Fault("GET", r".*/comments", 301, headers={"Location": f"{elsewhere.url}/x"})
        )
        assert comment("--github", str(REPORT)) == EXIT_OK
        assert elsewhere.requests() == []
    assert capsys.readouterr().err == (
        "pytest-retrieval comment: warning: could not post the comment: GitHub answered a "
        "redirect (301 to 127.0.0.1) when asked to list the comments; redirects are not "
        "followed, so the token goes to no other address. Fix: set GITHUB_API_URL to the API's "
        "own address\n"
    )


def test_a_next_page_link_to_another_host_is_refused(
    github: ForgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    with ForgeServer() as elsewhere:
        github.state.faults.append(
            Fault(
                "GET",
                r".*/comments",
                200,
                payload=[],
                headers={
                    "Link": f'<{elsewhere.url}/repos/o/r/issues/12/comments?page=2>; rel="next"'
                },
            )
        )
        assert comment("--github", str(REPORT)) == EXIT_OK
        assert elsewhere.requests() == []
    err = capsys.readouterr().err
    assert "the API sent a link to another address (127.0.0.1); the token is only sent to" in err


def test_plain_http_to_a_remote_api_is_refused_before_any_request(
    github: ForgeServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GITHUB_API_URL", "http://github.example.invalid/api/v3")
    assert comment("--github", str(REPORT)) == EXIT_OK
    assert capsys.readouterr().err == (
        "pytest-retrieval comment: warning: could not post the comment: the API address "
        "http://github.example.invalid/api/v3 is plain http: the token would cross the network "
        "unencrypted. Fix: set GITHUB_API_URL to the API's https:// address\n"
    )


def test_a_workflow_run_of_a_forks_pull_request_finds_it_by_its_head_commit(
    github: ForgeServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GitHub leaves workflow_run.pull_requests empty for a fork's pull request.
    event = tmp_path / "workflow_run.json"
    run = {
        "event": "pull_request",
        "head_sha": HEAD_SHA,
        "head_branch": "fix-typo",
        "head_repository": {"full_name": "eve/r", "owner": {"login": "eve"}},
        "pull_requests": [],
        "html_url": "https://github.com/o/r/actions/runs/76",
    }
    event.write_text(json.dumps({"workflow_run": run}), encoding="utf-8")
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    monkeypatch.setenv("GITHUB_EVENT_NAME", "workflow_run")
    github.state.pulls = [
        {"number": 11, "head": {"sha": "a" * 40, "ref": "fix-typo", "user": {"login": "eve"}}},
        {"number": 12, "head": {"sha": HEAD_SHA, "ref": "fix-typo", "user": {"login": "eve"}}},
    ]
    assert comment("--github", str(REPORT)) == EXIT_OK
    [lookup] = [r for r in github.requests() if r.path == "/repos/o/r/pulls"]
    assert lookup.query == {"head": "eve:fix-typo", "state": "open", "per_page": "100"}
    footer = (
        "<sub>pytest-retrieval · commit `0123456789ab` · "
        "[CI run](https://github.com/o/r/actions/runs/76)</sub>"
    )
    assert github.bodies(THREAD) == [expected_body(footer=footer)]
    github.state.pulls = []  # closed meanwhile: nothing to post to
    assert comment("--github", str(REPORT)) == EXIT_OK
    assert "no open pull request of o/r has the commit 0123456789ab" in capsys.readouterr().err


def test_the_comment_stays_under_githubs_limit_cut_at_a_line_and_saying_so(
    github: ForgeServer, tmp_path: Path
) -> None:
    rows = "\n".join(f"| `q{i:05d}` | {'x' * 80} | 0.5000 |" for i in range(1200))
    text = REPORT.read_text(encoding="utf-8")
    big = tmp_path / "big.md"
    big.write_text(
        text.replace(
            "#### Failed queries (1)",
            f"<details><summary>rows</summary>\n\n"
            f"| Query | Text | Value |\n| --- | --- | ---: |\n{rows}\n\n#### Failed",
        ),
        encoding="utf-8",
    )
    assert len(big.read_text(encoding="utf-8")) > 110_000
    assert comment("--github", str(big)) == EXIT_OK
    [body] = github.bodies(THREAD)
    assert len(body) <= 65_536
    lines = body.split("\n")
    assert lines[0] == MARKER
    assert lines[1] == text.split("\n")[0]  # the verdict line stays first
    report_lines = big.read_text(encoding="utf-8").split("\n")
    cut_at = lines.index("</details>")
    assert lines[1:cut_at] == [*report_lines[: cut_at - 2], ""]  # whole lines, in order
    assert lines[cut_at - 2].startswith("| `q0")  # the last kept line is a whole table row
    assert body.count("<details>") == body.count("</details>") == 1
    assert "_Cut at GitHub's 65,536-character comment limit: " in body
    assert (
        "more lines; the full report is in the CI run's job summary and in `big.md` among "
        "its artifacts._" in body
    )
    assert body.endswith(FOOTER + "\n")


# --- GitLab -----------------------------------------------------------------------------------


def test_gitlab_creates_a_note_on_the_merge_requests_project_with_a_private_token(
    gitlab: ForgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert comment("--gitlab", str(REPORT)) == EXIT_OK
    marker = "<!-- pytest-retrieval: golden=help-centre job=retrieval -->"
    footer = (
        "<sub>pytest-retrieval · commit `0123456789ab` · "
        "[CI run](https://gitlab.example/group/app/-/jobs/5)</sub>"
    )
    assert gitlab.bodies(MR_THREAD) == [expected_body(marker, footer)]
    [post] = gitlab.requests("POST")
    assert post.path == "/api/v4/projects/42/merge_requests/7/notes"
    assert post.headers["private-token"] == TOKEN
    assert "authorization" not in post.headers
    assert capsys.readouterr().out == (
        "pytest-retrieval comment: created the comment on merge request !7 of project 42: "
        "https://gitlab.example/group/app/-/merge_requests/7#note_1001\n"
    )


def test_gitlab_updates_its_own_note_on_page_2_and_leaves_others_alone(
    gitlab: ForgeServer,
) -> None:
    gitlab.state.page_size = 2
    marker = "<!-- pytest-retrieval: golden=help-centre job=retrieval -->"
    gitlab.add_comment(MR_THREAD, "approved", user_id=3)
    gitlab.add_comment(MR_THREAD, f"{marker}\nforged", user_id=3)  # not the token's user
    gitlab.add_comment(MR_THREAD, f"{marker}\nsystem note", user_id=7, system=True)
    ours = gitlab.add_comment(MR_THREAD, f"{marker}\nlast push", user_id=7)
    assert comment("--gitlab", str(REPORT)) == EXIT_OK
    footer = (
        "<sub>pytest-retrieval · commit `0123456789ab` · "
        "[CI run](https://gitlab.example/group/app/-/jobs/5)</sub>"
    )
    assert gitlab.comment(MR_THREAD, ours)["body"] == expected_body(marker, footer)
    assert gitlab.bodies(MR_THREAD)[:3] == [
        "approved",
        f"{marker}\nforged",
        f"{marker}\nsystem note",
    ]
    assert gitlab.requests("POST") == []
    pages = [r.query["page"] for r in gitlab.requests("GET") if r.path.endswith("/notes")]
    assert pages == ["1", "2"]  # X-Next-Page followed
    [put] = gitlab.requests("PUT")
    assert put.path == f"/api/v4/projects/42/merge_requests/7/notes/{ours}"


def test_gitlab_5xx_is_retried_then_the_note_is_created(
    gitlab: ForgeServer, waits: list[float]
) -> None:
    gitlab.state.faults.append(Fault("GET", r".*/notes", 500, times=3))
    assert comment("--gitlab", str(REPORT)) == EXIT_OK
    assert waits == [1.0, 2.0, 4.0]
    assert len(gitlab.bodies(MR_THREAD)) == 1


def test_gitlab_403_is_one_warning_with_the_role_to_grant(
    gitlab: ForgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    gitlab.state.faults.append(Fault("POST", r".*/notes", 403, message="403 Forbidden"))
    assert comment("--gitlab", str(REPORT)) == EXIT_OK
    assert capsys.readouterr().err == (
        "pytest-retrieval comment: warning: could not post the comment: GitLab refused to "
        "create the note on merge request !7 of project 42 (403 Forbidden). Fix: give "
        "GITLAB_TOKEN the api scope and at least the Reporter role in the project\n"
    )
    assert len(gitlab.requests("POST")) == 1


def test_a_branch_pipeline_has_no_merge_request_and_calls_no_api(
    gitlab: ForgeServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("CI_MERGE_REQUEST_IID")
    assert comment("--gitlab", str(REPORT)) == EXIT_OK
    assert capsys.readouterr().err == (
        "pytest-retrieval comment: warning: could not post the comment: this pipeline is not "
        "for a merge request (CI_MERGE_REQUEST_IID is not set): there is nothing to comment "
        "on. Fix: run the job in merge request pipelines (rules: - if: $CI_PIPELINE_SOURCE == "
        "'merge_request_event'), or name one with --pr N\n"
    )
    assert gitlab.requests() == []


def test_the_job_token_is_not_taken_for_a_token_that_can_post(
    gitlab: ForgeServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("GITLAB_TOKEN")
    monkeypatch.setenv("CI_JOB_TOKEN", "job-token-value")
    assert comment("--gitlab", str(REPORT)) == EXIT_OK
    err = capsys.readouterr().err
    assert "GITLAB_TOKEN is not set (CI_JOB_TOKEN is, but a job token cannot post notes)" in err
    assert "job-token-value" not in err
    assert gitlab.requests() == []


def test_gitlab_keeps_a_note_under_its_limit(gitlab: ForgeServer, tmp_path: Path) -> None:
    big = tmp_path / "report.md"
    row = "| `q` | " + "y" * 1000 + " |"
    big.write_text(
        "### ❌ Retrieval quality: 1 of 1 gates failed\n\n| a | b |\n| --- | --- |\n"
        + "\n".join([row] * 1100)
        + "\n",
        encoding="utf-8",
    )
    assert comment("--gitlab", str(big)) == EXIT_OK
    [body] = gitlab.bodies(MR_THREAD)
    assert 990_000 < len(body) <= 1_000_000
    assert "_Cut at GitLab's 1,000,000-character comment limit: " in body
    assert "the full report is in `report.md` among the job's artifacts._" in body


# --- usage errors -----------------------------------------------------------------------------


def test_a_provider_is_required_and_a_missing_or_empty_report_is_a_usage_error(
    github: ForgeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert comment(str(REPORT)) == EXIT_USAGE
    assert "one of the arguments --github --gitlab is required" in capsys.readouterr().err
    missing = tmp_path / "missing.md"
    assert comment("--github", str(missing)) == EXIT_USAGE
    assert f"{missing}: report not found" in capsys.readouterr().err
    empty = tmp_path / "empty.md"
    empty.write_text("\n", encoding="utf-8")
    assert comment("--github", str(empty), "--strict") == EXIT_USAGE
    assert "the report is empty" in capsys.readouterr().err
    assert github.requests() == []
