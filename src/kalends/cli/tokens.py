"""``kalends token`` and ``kalends login-link``: credentials for the HTTP API.

In local mode both work directly on the database: ``--as HANDLE`` names the actor
whose token or login link it is. A token's secret is printed once and only its hash
is stored; ``kalends serve`` takes it as ``Authorization: Bearer <secret>``.

``kalends token`` also works against a server (``--server URL``), as the owner of the
token ``kalends login`` stored: ``ls`` and ``revoke`` on ``/api/tokens``. A token never
poses as a login session, and creating one needs a session, so ``token create`` does
what ``kalends login`` does: it asks for the password (or reads it with
``--password-stdin``) and trades it for the new token (``POST
/api/auth/tokens/exchange``); the stored token is left as it is. ``login-link`` and
``password`` stay local.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from kalends.auth.links import LOGIN_LINK_TTL
from kalends.auth.passwords import check_new_password
from kalends.auth.tokens import (
    MAX_TOKEN_LIFETIME,
    check_token_id,
    check_token_name,
)
from kalends.cli.commands import session_command
from kalends.cli.credential_commands import (
    LIFETIME_COLUMNS,
    NEVER,
    CredentialJson,
    print_created,
    print_credentials,
    print_revoked,
    when,
)
from kalends.cli.output import console, emit_json
from kalends.cli.remote import SERVER_MODE_HELP, Remote
from kalends.cli.session import (
    EXIT_CODES_HELP,
    LOCAL_MODE_HELP,
    ActorOption,
    DatabaseOption,
    JsonOption,
    Session,
    group_help,
    session,
)
from kalends.errors import InvalidInput

if TYPE_CHECKING:
    from kalends.auth import Accounts

__all__ = [
    "DEFAULT_TOKEN_DAYS",
    "login_link_command",
    "parse_days",
    "password_command",
    "token_app",
]

# A token's lifetime unless told otherwise, as the API's token routes default it.
DEFAULT_TOKEN_DAYS = 90

token_app = typer.Typer(
    help=group_help(
        "API tokens for the CLI and paired devices.",
        "A token is sent as `Authorization: Bearer <secret>`; only its hash is stored. In "
        "server mode `token create` asks for your password, as `kalends login` does.",
        LOCAL_MODE_HELP,
        SERVER_MODE_HELP,
        EXIT_CODES_HELP,
    ),
    no_args_is_help=True,
)

TokenIdArgument = Annotated[
    str, typer.Argument(metavar="ID", help="The token's ID (`kalends token ls`).")
]


def parse_days(text: str | None) -> timedelta | None:
    """``--expires-in-days``: N whole days (1 to the longest lifetime), or ``never``."""
    if text is None:
        return timedelta(days=DEFAULT_TOKEN_DAYS)
    value = text.strip().lower()
    if value == NEVER:
        return None
    most = MAX_TOKEN_LIFETIME.days
    if re.fullmatch(r"[0-9]{1,4}", value) is None or not 1 <= int(value) <= most:
        raise InvalidInput(
            f"expires-in-days: a whole number of days from 1 to {most}, or {NEVER!r}; got {text!r}",
            field="expires_in_days",
        )
    return timedelta(days=int(value))


def _accounts(s: Session) -> Accounts:
    return s.accounts()


@session_command(token_app, "create")
def create_command(
    s: Session | Remote,
    name: Annotated[str, typer.Argument(metavar="NAME", help="What the token is for.")],
    expires_in_days: Annotated[
        str | None,
        typer.Option(
            "--expires-in-days",
            metavar="N|never",
            help=f"Its lifetime in days, 1-{MAX_TOKEN_LIFETIME.days} (default "
            f"{DEFAULT_TOKEN_DAYS}), or never.",
            show_default=False,
        ),
    ] = None,
    password_stdin: Annotated[
        bool,
        typer.Option(
            "--password-stdin",
            help="Server mode: read your password from the first line of standard input "
            "(no prompt). Local mode asks no password.",
        ),
    ] = False,
) -> None:
    """Create an API token of the acting actor and print its secret, this once.

    Server mode: a token cannot create tokens, so your password is asked (or read with
    --password-stdin) and traded for the new one, as `kalends login` does; the token
    `kalends login` stored stays. With --json: {"token": {...}, "secret"}.
    """
    label = check_token_name(name)
    lifetime = parse_days(expires_in_days)
    accounts = s.accounts(password_stdin=password_stdin)
    info, secret = accounts.create_token(s.actor, label, expires_in=lifetime)
    token = info.to_json()
    print_created(
        s,
        {"token": token, "secret": secret},
        headline=f"created token {token['name']} for {s.actor}, "
        f"expires {when(token['expiresAt'], NEVER)}",
        credential_id=token["id"],
        secret=secret,
        note="the secret is shown this once; only its hash is stored",
    )


@session_command(token_app, "ls")
def ls_command(s: Session | Remote) -> None:
    """List the acting actor's tokens, newest first, revoked and expired ones included."""
    found: list[CredentialJson] = [t.to_json() for t in s.accounts().tokens(s.actor)]
    # The creation's time is in --json.
    print_credentials(
        s, found, nothing=f"{s.actor} has no API token", columns=LIFETIME_COLUMNS, named=True
    )


@session_command(token_app, "revoke")
def revoke_command(s: Session | Remote, token_id: TokenIdArgument) -> None:
    """Revoke one of the acting actor's tokens; it is refused from its next request on.

    Revoking a revoked token changes nothing.
    """
    parsed = check_token_id(token_id)
    revoked: CredentialJson = s.accounts().revoke_token(s.actor, parsed).to_json()
    print_revoked(s, revoked, f"revoked token {revoked['name']}")


def login_link_command(
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            metavar="URL",
            envvar="KALENDS_BASE_URL",
            help="The server's public URL (default: the base URL the last `kalends serve` "
            "on this database recorded; required while none has).",
            show_default=False,
        ),
    ] = None,
    actor: ActorOption = None,
    database: DatabaseOption = None,
    json_output: JsonOption = False,
) -> None:
    """Print a one-time login link for the acting actor (valid 15 minutes).

    The link points at --base-url, else at the base URL that the last `kalends serve` on
    this database recorded when it started (its real port, or its own --base-url); the
    output says which. The actor gets an account (without a password) unless it has one.
    Open the link in a browser to sign in to `kalends serve`. With --json: {"handle",
    "url", "expiresAt", "baseUrlFrom": "option" or "server"}.
    """
    from kalends.cli.serve import login_link_base  # noqa: PLC0415

    with session(database, json_output, actor=actor) as s:
        base, recorded = login_link_base(base_url, s.services.store)
        accounts = _accounts(s)

        def issue() -> tuple[str, str, datetime]:
            accounts.ensure_account(s.actor)
            link = accounts.login_link(s.actor)
            handle = s.directory.actor(s.actor).handle
            return handle, link.secret, link.expires_at

        handle, secret, expires_at = s.atomic(issue)
    url = f"{base}/api/auth/link?token={secret}"
    if json_output:
        emit_json(
            {
                "handle": handle,
                "url": url,
                "expiresAt": expires_at.isoformat().replace("+00:00", "Z"),
                "baseUrlFrom": "server" if recorded else "option",
            }
        )
        return
    typer.echo(f"open this link once to log in as {handle}: {url}")
    minutes = int(LOGIN_LINK_TTL.total_seconds() // 60)
    whence = (
        "the address `kalends serve` recorded on this database; --base-url names another"
        if recorded
        else "the address --base-url (or KALENDS_BASE_URL) gave"
    )
    console.print(Text(f"valid for {minutes} minutes; {whence}", style="dim"), soft_wrap=True)


def password_command(
    password_stdin: Annotated[
        bool,
        typer.Option(
            "--password-stdin",
            help="Read the new password from the first line of standard input (no prompt).",
        ),
    ] = False,
    actor: ActorOption = None,
    database: DatabaseOption = None,
    json_output: JsonOption = False,
) -> None:
    """Set the acting actor's password for `kalends serve` (local mode: no current one asked).

    The actor gets an account unless it has one; their other login sessions end. With
    --json: {"handle", "passwordSet": true}.
    """
    if password_stdin:
        line = typer.get_text_stream("stdin").readline()
        new_password = line[:-1] if line.endswith("\n") else line
    else:
        new_password = typer.prompt("new password", hide_input=True, confirmation_prompt=True)
    with session(database, json_output, actor=actor) as s:
        accounts = _accounts(s)
        check_new_password(new_password)
        accounts.ensure_account(s.actor)
        # Whoever runs the CLI on the database is trusted (local mode), as for tokens.
        accounts.set_password(s.actor, new_password, current_password=None, reset=True)
        handle = s.directory.actor(s.actor).handle
    if json_output:
        emit_json({"handle": handle, "passwordSet": True})
        return
    console.print(Text(f"password set for {handle}"), soft_wrap=True)
