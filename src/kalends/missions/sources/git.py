"""The ``git-branch`` source: the commit of a local branch, and the commits that moved it.

kalends runs the ``git`` executable, with an argument list and no shell, only its local
plumbing (``rev-parse``, ``rev-list``), never a command that reaches a remote:

- **A clean environment.** Nothing of the server's environment reaches git (no
  ``GIT_DIR``, ``GIT_WORK_TREE``, proxies or credentials): ``PATH``, an empty ``HOME``,
  ``LC_ALL=C``, no system or global configuration, no terminal prompt, no optional locks,
  no lazy fetch of a partial clone's objects, and ``protocol.allow=never`` on the command
  line, so no transport runs whatever the repository's configuration says.
- **The repository at the path, never a parent's.** The path is opened beneath the
  workspace (:mod:`.beneath`), so it cannot leave it, and ``GIT_CEILING_DIRECTORIES``
  stops git's search at the path itself: a plain directory inside a checkout is not a
  repository. A ``.git`` that points elsewhere (a linked worktree's ``gitdir:`` file, a
  link, a ``commondir``) must point inside the workspace too, or the read is refused: a
  passage could otherwise aim a condition's proof at another repository of the machine.
  (Checked just before git runs; git then opens what it names.)
- **Whoever owns it.** kalends' decision: the repository is trusted as a
  ``safe.directory`` for the read, so a server running as another user than the
  workspace's owner can read it. These commands run no hooks, filters, pager or
  monitor (``core.fsmonitor=false`` on the command line), so a repository's own
  configuration cannot make the read run code.
- **Bounded.** Each git process runs in a session of its own and is killed, with
  anything it started, when the budget is spent or cancelled.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import shutil
import signal
import stat
import subprocess
import tempfile
from datetime import datetime
from pathlib import Path

from kalends.errors import InvalidInput
from kalends.missions.limits import MAX_PROOF_COMMITS, MAX_PROOF_SUBJECT_CHARS
from kalends.missions.runtime.isolation import DEFAULT_PATH
from kalends.missions.sources.beneath import Found, Missing, Refused, open_beneath, open_root
from kalends.missions.sources.budget import Budget
from kalends.missions.sources.outcomes import (
    BlockReason,
    Commit,
    CommitProof,
    Observation,
    SourceBlocked,
    aware,
)

__all__ = ["KIND", "commits_between", "git_environment", "read_branch"]

KIND = "git-branch"
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
# How often a running git is checked against the budget (a cancel takes effect within it).
_POLL_SECONDS = 0.05
_NOT_A_REPOSITORY = "not a git repository"


def git_environment(home: str, ceiling: str) -> dict[str, str]:
    """Everything a git process of a source read gets (see the module docstring)."""
    return {
        "PATH": DEFAULT_PATH,
        "HOME": home,
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_NO_LAZY_FETCH": "1",
        "GIT_CEILING_DIRECTORIES": ceiling,
    }


def read_branch(
    branch: str,
    path: str,
    workspace_root: str | Path,
    budget: Budget,
    *,
    at: datetime,
    git: str = "git",
) -> Observation | SourceBlocked:
    """The commit of ``refs/heads/<branch>`` in the repository at ``path`` (relative to
    ``workspace_root``) as read at ``at``, or why it cannot be read: ``source-missing``
    when the workspace, the repository or the local branch is gone, ``source-unreadable``
    otherwise (budget, permission, a path leaving the workspace, git failing). A
    remote-tracking branch of that name does not count. Blocks the calling thread."""
    at = aware(at)
    done = _git(
        git,
        path,
        workspace_root,
        budget,
        ["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}"],
    )
    if not isinstance(done, tuple):
        return _blocked(done, at)
    code, out, err = done
    sha = out.strip()
    if code == 0 and _SHA.fullmatch(sha):
        return Observation(kind=KIND, checkpoint=sha, observed_at=at)
    if code == 1:
        return SourceBlocked(
            kind=KIND,
            reason=BlockReason.SOURCE_MISSING,
            detail=f"no local branch {branch!r} in {path!r}",
            observed_at=at,
        )
    return _failed(code, err, path, at)


def commits_between(
    baseline: str,
    observed: str,
    path: str,
    workspace_root: str | Path,
    budget: Budget,
    *,
    at: datetime,
    limit: int = MAX_PROOF_COMMITS,
    git: str = "git",
) -> CommitProof | SourceBlocked:
    """The proof of a moved branch: the commits reachable from ``observed`` and not from
    ``baseline``, newest first, at most ``limit`` of them. A baseline the repository no
    longer has (a branch rewritten and pruned) is ignored: the proof then lists the newest
    commits of ``observed``. Blocks the calling thread."""
    at = aware(at)
    for sha in (baseline, observed):
        if not _SHA.fullmatch(sha):
            raise InvalidInput(f"{sha!r} is not a commit ID")
    done = _git(git, path, workspace_root, budget, [
        "rev-list", "--ignore-missing", f"--max-count={limit + 1}",
        f"--format=%H%x09%<({MAX_PROOF_SUBJECT_CHARS},trunc)%s",
        observed, "--not", baseline,
    ])  # fmt: skip
    if not isinstance(done, tuple):
        return _blocked(done, at)
    code, out, err = done
    if code != 0:
        return _failed(code, err, path, at)
    commits = []
    for line in out.splitlines():
        sha, tab, subject = line.partition("\t")
        if tab and _SHA.fullmatch(sha):  # rev-list's own "commit <sha>" lines have no tab
            commits.append(Commit(sha=sha, subject=subject.rstrip()[:MAX_PROOF_SUBJECT_CHARS]))
    return CommitProof(
        baseline=baseline,
        observed=observed,
        commits=tuple(commits[:limit]),
        truncated=len(commits) > limit,
    )


def _blocked(why: Missing | Refused, at: datetime) -> SourceBlocked:
    reason = (
        BlockReason.SOURCE_MISSING if isinstance(why, Missing) else BlockReason.SOURCE_UNREADABLE
    )
    return SourceBlocked(kind=KIND, reason=reason, detail=why.detail, observed_at=at)


def _failed(code: int, err: str, path: str, at: datetime) -> SourceBlocked:
    if _NOT_A_REPOSITORY in err:
        return SourceBlocked(
            kind=KIND,
            reason=BlockReason.SOURCE_MISSING,
            detail=f"{path!r} is not a git repository",
            observed_at=at,
        )
    first = err.strip().splitlines()[0][:200] if err.strip() else f"exit status {code}"
    return SourceBlocked(
        kind=KIND,
        reason=BlockReason.SOURCE_UNREADABLE,
        detail=f"git failed in {path!r}: {first}",
        observed_at=at,
    )


def _repository(path: str, workspace_root: str | Path) -> str | Missing | Refused:
    """The resolved directory of ``path`` beneath the workspace, or why there is none."""
    root = open_root(workspace_root)
    if not isinstance(root, Found):
        return root
    try:
        opened = open_beneath(root.fd, root.path, path)
    finally:
        os.close(root.fd)
    if isinstance(opened, Missing):
        return Missing(f"no repository at {path!r}")
    if not isinstance(opened, Found):
        return opened
    try:
        if not stat.S_ISDIR(os.fstat(opened.fd).st_mode):
            return Missing(f"no repository at {path!r}: it is a file")
    finally:
        os.close(opened.fd)
    escape = _git_dir_outside(opened.path, root.path)
    if escape is not None:
        return Refused(f"the repository at {path!r} keeps its objects outside the workspace")
    return opened.path


def _git_dir_outside(repository: str, root: str) -> str | None:
    """Where the repository's ``.git`` (a link, or a ``gitdir:`` file) or its
    ``commondir`` leads outside ``root``, if it does."""
    git_dir = posixpath.join(repository, ".git")
    try:
        mode = os.lstat(git_dir).st_mode
    except OSError:
        git_dir = repository  # a bare repository, or none: git decides
    else:
        if stat.S_ISREG(mode):
            pointed = _pointer(git_dir, "gitdir:")
            if pointed is None:
                return git_dir
            git_dir = posixpath.join(repository, pointed)
    common = _pointer(posixpath.join(git_dir, "commondir"), "")
    for place in (git_dir, *(() if common is None else (posixpath.join(git_dir, common),))):
        real = str(os.path.realpath(place))
        if real != root and not real.startswith(root.rstrip("/") + "/"):
            return real
    return None


def _pointer(file: str, prefix: str) -> str | None:
    """The path a small pointer file names after ``prefix`` (its first line), if any."""
    try:
        with open(file, "rb") as opened:
            first = opened.read(4096).decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    if not first or not first[0].startswith(prefix):
        return None
    return first[0][len(prefix) :].strip() or None


def _git(
    git: str, path: str, workspace_root: str | Path, budget: Budget, args: list[str]
) -> tuple[int, str, str] | Missing | Refused:
    """Runs git in the repository at ``path``: its exit status and output, or why it did
    not run or did not finish."""
    if budget.spent():
        return Refused("the read budget was spent")
    repository = _repository(path, workspace_root)
    if not isinstance(repository, str):
        return repository
    executable = shutil.which(git)
    if executable is None:
        return Refused(f"the git executable {git!r} is not installed")
    ceiling = posixpath.dirname(repository.rstrip("/")) or "/"
    with tempfile.TemporaryDirectory(prefix="kalends-git-") as home:
        command = [
            executable,
            "-c", f"safe.directory={repository}",
            "-c", "core.fsmonitor=false",
            "-c", "protocol.allow=never",
            "-C", repository,
            *args,
        ]  # fmt: skip
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=git_environment(home, ceiling),
                cwd=home,
                start_new_session=True,
            )
        except OSError as exc:
            return Refused(f"cannot run git: {exc.strerror}")
        try:
            while True:
                wait = min(budget.remaining(), _POLL_SECONDS)
                if wait <= 0:
                    _kill(process)
                    return Refused("the read budget was spent while git ran")
                try:
                    out, err = process.communicate(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        finally:
            if process.poll() is None:
                _kill(process)
    return (
        process.returncode,
        out.decode("utf-8", "replace"),
        err.decode("utf-8", "replace"),
    )


def _kill(process: subprocess.Popen[bytes]) -> None:
    """Kills git and everything in its session, then reaps it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.communicate()
