"""A Play's word on service supervision without a browser, on both databases: without
script the form posts, the redirect carries the state as a short code, and the page it
lands on says the sentence once (a warning when supervision is not keeping the server
running, else a plain note); a forged or stray code shows nothing; with script the
fragment still shows the outcome's own message.

The schedule service is wired with a real :class:`~kalends.supervision.Supervisor`:
with this machine's own ``systemctl`` (or none) and no user manager reachable
(tests/conftest.py) it answers ``unavailable``; with the stand-ins of
tests/supervision it answers ``enabled``, ``already`` or ``failed``. The home is the
test's own, so nothing is written into the real one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from httpx2 import Response

from api.conftest import make_api_world
from kalends.bootstrap import build
from kalends.clock import FakeClock
from kalends.storage.unit_of_work import Store
from kalends.supervision import Launch, Supervisor, kalends_command
from pages.conftest import Pages, csrf_of
from supervision.fake_systemd import install_fake

WARNING = 'class="banner warn supervision" role="status"'
NOTE = '<p class="supervision" role="status"'


@contextmanager
def supervised(
    store: Store, clock: FakeClock, root: Path, environ: Mapping[str, str]
) -> Iterator[Pages]:
    """The pages' world with its Play supervised by a real supervisor in ``environ``
    (this process is the server, so the unit is enabled, never started)."""
    supervisor = Supervisor(store, Launch(command=kalends_command()), serving=True, environ=environ)
    world = make_api_world(build(store, supervisor=supervisor), clock, root)
    clients = {
        who: TestClient(world.client.app, raise_server_exceptions=False) for who in ("alice", "bob")
    }
    with world.client:
        clock.set(datetime(2026, 3, 6, 12, tzinfo=UTC))
        yield Pages(world=world, clients=clients)


def machine_environment(root: Path) -> dict[str, str]:
    """This machine's PATH (its systemctl, or none) with a home of the test's own."""
    home = root / "home-of-test"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KALENDS_")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    return env


def stand_in_environment(root: Path, behaviour: str) -> dict[str, str]:
    """The stand-in ``systemctl`` and ``loginctl`` first on PATH, answering as
    ``behaviour`` says (tests/supervision/fake_systemd.py)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KALENDS_")}
    env.update(install_fake(root / "systemd", behaviour).env())
    return env


def request_id_of(html: str, action: str) -> str:
    """The request ID the rendered page minted for its ``action`` control."""
    forms = html.split('name="action" value="')
    form = next(f for f in forms[1:] if f.startswith(f'{action}"'))
    return form.split('name="request_id" value="', 1)[1].split('"', 1)[0]


def play(pages: Pages, sid: str, *, script: bool = False) -> tuple[Response, str]:
    """Bob presses Play on the schedule page of ``sid``: the reply and its request ID."""
    client = pages.sign_in("bob")
    home = pages.world.home.id
    html = client.get(f"/w/{home}/schedules/{sid}").text
    rid = request_id_of(html, "play")
    data = {"csrf": csrf_of(html), "action": "play", "request_id": rid, "revision": 1}
    headers = {"HX-Request": "true"} if script else {}
    reply = client.post(
        f"/w/{home}/schedules/{sid}/control", data=data, headers=headers, follow_redirects=False
    )
    return reply, rid


class TestWithoutScript:
    def test_without_a_user_manager_the_landing_page_warns_once_and_a_reload_drops_it(
        self, store: Store, fake_clock: FakeClock, tmp_path: Path
    ) -> None:
        with supervised(store, fake_clock, tmp_path, machine_environment(tmp_path)) as pages:
            sid = pages.schedule("alice", "Nightly")
            reply, rid = play(pages, sid)
            assert reply.status_code == 303
            page = f"/w/{pages.world.home.id}/schedules/{sid}"
            assert reply.headers["location"] == f"{page}?request={rid}&supervision=unavailable"
            client = pages.client("bob")
            landed = client.get(reply.headers["location"]).text
            assert "Play applied" in landed
            assert f'{WARNING} data-state="unavailable"><p><strong>' in landed
            assert "Service supervision is unavailable:</strong> no systemd user manager" in (
                landed
            )
            assert landed.count("Service supervision") == 1
            # A reload of the page without the code shows the status, not the sentence.
            again = client.get(f"{page}?request={rid}").text
            assert "Play applied" in again
            assert "Service supervision" not in again
            assert "Service supervision" not in client.get(page).text
            doc = pages.world.services.schedules.detail(pages.world.actors["alice"].id, sid)
            assert doc["state"] == "running"
            # The same request again is a repeat: nothing acts, so nothing is said.
            data = {
                "csrf": csrf_of(again),
                "action": "play",
                "request_id": rid,
                "revision": 1,
            }
            repeat = client.post(f"{page}/control", data=data, follow_redirects=False)
            assert repeat.status_code == 303
            assert repeat.headers["location"] == f"{page}?request={rid}"
        assert not (tmp_path / "home-of-test" / ".config" / "systemd").exists()

    @pytest.mark.parametrize(
        ("behaviour", "state", "warning", "words"),
        [
            # A user manager answers: the unit is installed and enabled now.
            ("manager", "enabled", False, "<code>kalends.service</code> is installed and"),
            # systemctl refuses to enable: the Play applied, supervision failed.
            ("failing", "failed", True, "Service supervision could not be turned on:"),
        ],
    )
    def test_with_the_stand_in_systemctl_the_landing_page_says_what_supervision_did(
        self,
        store: Store,
        fake_clock: FakeClock,
        tmp_path: Path,
        behaviour: str,
        state: str,
        warning: bool,
        words: str,
    ) -> None:
        environ = stand_in_environment(tmp_path, behaviour)
        with supervised(store, fake_clock, tmp_path, environ) as pages:
            sid = pages.schedule("alice", "Nightly")
            reply, rid = play(pages, sid)
            assert reply.status_code == 303
            assert reply.headers["location"].endswith(f"?request={rid}&supervision={state}")
            landed = pages.client("bob").get(reply.headers["location"]).text
            assert "Play applied" in landed
            assert words in landed
            shown = f'{WARNING if warning else NOTE} data-state="{state}">'
            assert shown in landed
            assert (WARNING in landed) is warning
            assert (NOTE in landed) is not warning

    def test_a_second_play_with_the_unit_enabled_already_is_a_plain_note(
        self, store: Store, fake_clock: FakeClock, tmp_path: Path
    ) -> None:
        environ = stand_in_environment(tmp_path, "manager")
        with supervised(store, fake_clock, tmp_path, environ) as pages:
            first, second = pages.schedule("alice", "First"), pages.schedule("alice", "Second")
            play(pages, first)
            reply, _ = play(pages, second)
            assert reply.headers["location"].endswith("&supervision=already")
            landed = pages.client("bob").get(reply.headers["location"]).text
            assert f'{NOTE} data-state="already">Service supervision: <code>' in landed
            assert "was installed and enabled already; nothing changed." in landed
            assert WARNING not in landed


def test_a_forged_or_stray_supervision_code_shows_nothing(
    store: Store, fake_clock: FakeClock, tmp_path: Path
) -> None:
    with supervised(store, fake_clock, tmp_path, machine_environment(tmp_path)) as pages:
        sid, other = pages.schedule("alice", "Nightly"), pages.schedule("alice", "Other")
        reply, rid = play(pages, sid)
        assert reply.status_code == 303
        client = pages.client("bob")
        home = pages.world.home.id
        page = f"/w/{home}/schedules/{sid}"
        # A pause applied: its status is not a Play's, so no code speaks beside it.
        html = client.get(page).text
        pause = {
            "csrf": csrf_of(html),
            "action": "pause",
            "request_id": request_id_of(html, "pause"),
            "revision": 2,
        }
        paused = client.post(f"{page}/control", data=pause, follow_redirects=False)
        assert paused.status_code == 303
        assert "supervision=" not in paused.headers["location"]
        cases = [
            # A code that is no state, markup, another case, nothing at all.
            f"{page}?request={rid}&supervision=bogus",
            f"{page}?request={rid}&supervision=%3Cscript%3Ealert(1)%3C%2Fscript%3E",
            f"{page}?request={rid}&supervision=FAILED",
            f"{page}?request={rid}&supervision=",
            # A known state with no request, an unknown request, or a non-Play control.
            f"{page}?supervision=failed",
            f"{page}?request=web-never-sent-1&supervision=failed",
            f"{page}?request={pause['request_id']}&supervision=failed",
            # The Play's request read on another schedule: unknown there.
            f"/w/{home}/schedules/{other}?request={rid}&supervision=enabled",
        ]
        for url in cases:
            answer = client.get(url)
            assert answer.status_code == 200, (url, answer.text[:300])
            assert "Service supervision" not in answer.text, url
            assert 'data-state="' not in answer.text, url
            assert "<script>alert" not in answer.text, url


def test_with_script_the_play_result_shows_the_outcomes_own_message_once(
    store: Store, fake_clock: FakeClock, tmp_path: Path
) -> None:
    environ = stand_in_environment(tmp_path, "no-manager")
    with supervised(store, fake_clock, tmp_path, environ) as pages:
        sid = pages.schedule("alice", "Nightly")
        reply, _ = play(pages, sid, script=True)
        assert reply.status_code == 200
        assert "<html" not in reply.text
        assert "Play applied" in reply.text
        assert '<p class="supervision" data-state="unavailable">' in reply.text
        assert (
            "Service supervision: no systemd user manager answers here "
            "(Failed to connect to bus: No medium found)"
        ) in reply.text
        assert reply.text.count("Service supervision") == 1
        assert WARNING not in reply.text
