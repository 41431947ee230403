"""Signing in and out of the pages, the shared session with the API, and the CSRF checks
of every form (browserless: the application in-process)."""

from __future__ import annotations

from pages.conftest import Pages, csrf_of


def test_a_page_without_a_session_sends_the_browser_to_sign_in_and_back(pages: Pages) -> None:
    client = pages.client("alice")
    reply = client.get("/w/00000000-0000-0000-0000-000000000001/schedules", follow_redirects=False)
    assert reply.status_code == 303
    assert reply.headers["location"] == (
        "/login?next=/w/00000000-0000-0000-0000-000000000001/schedules"
    )
    page = client.get("/login?next=/somewhere")
    assert page.status_code == 200
    assert 'name="next" value="/somewhere"' in page.text
    assert "<h1>Sign in to kalends</h1>" in page.text


def test_sign_in_opens_the_apis_own_session(pages: Pages) -> None:
    client = pages.sign_in("alice")
    me = client.get("/api/auth/me")
    assert me.status_code == 200
    assert me.json()["actor"]["handle"] == "alice"
    now = client.get("/")
    assert now.status_code == 200
    assert "<h1>Now</h1>" in now.text
    assert "Signed in as <strong>alice</strong>" in now.text


def test_a_wrong_password_is_said_on_the_form_and_opens_nothing(pages: Pages) -> None:
    client = pages.client("bob")
    page = client.get("/login")
    reply = client.post(
        "/login",
        data={"handle": "bob", "password": "wrong", "csrf": csrf_of(page.text)},
        follow_redirects=False,
    )
    assert reply.status_code == 401
    assert 'role="alert"' in reply.text
    assert 'aria-invalid="true"' in reply.text
    assert "kalends_session" not in reply.headers.get("set-cookie", "")
    assert client.get("/", follow_redirects=False).status_code == 303


def test_the_sign_in_form_needs_its_own_token(pages: Pages) -> None:
    client = pages.client("bob")
    client.get("/login")
    reply = client.post(
        "/login",
        data={"handle": "bob", "password": "correct horse battery", "csrf": "forged"},
        follow_redirects=False,
    )
    assert reply.status_code == 403
    assert "csrf-failed" in reply.text
    assert client.get("/", follow_redirects=False).status_code == 303


def test_next_never_leaves_the_server(pages: Pages) -> None:
    client = pages.client("alice")
    page = client.get("/login")
    for target in ("//evil.example/x", "https://evil.example/", "/\\evil"):
        reply = client.post(
            "/login",
            data={
                "handle": "alice",
                "password": "correct horse battery",
                "csrf": csrf_of(client.get("/login").text),
                "next": target,
            },
            follow_redirects=False,
        )
        assert reply.status_code == 303
        assert reply.headers["location"] == "/"
    assert page.status_code == 200


def test_sign_out_needs_the_csrf_token_and_ends_the_session(pages: Pages) -> None:
    client = pages.sign_in("alice")
    refused = client.post("/logout", data={"csrf": "forged"}, follow_redirects=False)
    assert refused.status_code == 403
    assert client.get("/api/auth/me").status_code == 200
    token = csrf_of(client.get("/").text)
    reply = client.post("/logout", data={"csrf": token}, follow_redirects=False)
    assert reply.status_code == 303
    assert reply.headers["location"] == "/login?out=1"
    assert client.get("/api/auth/me").status_code == 401


def test_the_theme_is_stored_and_rendered(pages: Pages) -> None:
    client = pages.sign_in("alice")
    token = csrf_of(client.get("/").text)
    reply = client.post(
        "/theme", data={"csrf": token, "theme": "dark", "next": "/"}, follow_redirects=False
    )
    assert reply.status_code == 303
    assert '<html lang="en" class="no-js" data-theme="dark">' in client.get("/").text
    client.post("/theme", data={"csrf": token, "theme": "", "next": "/"})
    assert "data-theme" not in client.get("/").text.split(">", 2)[1]


def test_static_files_are_served_and_nothing_else(pages: Pages) -> None:
    client = pages.client("alice")
    css = client.get("/static/kalends.css")
    assert css.status_code == 200
    assert css.headers["content-type"].startswith("text/css")
    assert "color-scheme: light dark" in css.text and "light-dark(" in css.text
    assert client.get("/static/htmx-2.0.11.min.js").status_code == 200
    for name in ("../__init__.py", "nothing.css", ".hidden.js", "session.py"):
        assert client.get(f"/static/{name}").status_code == 404
