"""``kalends device pair|ls|revoke``: phones and other browsers paired to act as you.

``pair`` prints a one-time pairing link; opened once in the device's browser within
15 minutes, it pairs that browser, which then stays signed in as the acting actor for
the lifetime given (``--expires-in``, 90 days unless told otherwise) or until revoked.
A device's credential lives in its browser's cookie and is never an API token.
Local mode gives the link an address under ``--base-url``, else under the base URL the
last ``kalends serve`` on the database recorded; a server gives its own.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated

import typer

from kalends.auth import DEVICE_PAIRING_TTL, MAX_TOKEN_LIFETIME
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
from kalends.cli.device_client import devices_of
from kalends.cli.remote import SERVER_MODE_HELP, Remote
from kalends.cli.session import EXIT_CODES_HELP, LOCAL_MODE_HELP, Session, group_help
from kalends.errors import InvalidInput

__all__ = ["DEFAULT_DEVICE_LIFETIME", "device_app", "parse_lifetime"]

# A device's lifetime unless told otherwise (kalends decision: a season, as a token's
# and as the settings page offers).
DEFAULT_DEVICE_LIFETIME = timedelta(days=90)
# What each unit of --expires-in stands for.
_UNITS = {"m": timedelta(minutes=1), "h": timedelta(hours=1), "d": timedelta(days=1)}

device_app = typer.Typer(
    help=group_help(
        "Paired devices: phones and other browsers signed in as you without a password.",
        "`device pair` prints a one-time link: open it in the device's browser within "
        f"{int(DEVICE_PAIRING_TTL.total_seconds() // 60)} minutes to pair it. The device "
        "stays signed in until its lifetime ends or `device revoke` unpairs it.",
        LOCAL_MODE_HELP,
        SERVER_MODE_HELP,
        EXIT_CODES_HELP,
    ),
    no_args_is_help=True,
)

DeviceIdArgument = Annotated[
    str, typer.Argument(metavar="ID", help="The device's ID (`kalends device ls`).")
]


def parse_lifetime(text: str | None) -> timedelta | None:
    """``--expires-in``: N minutes, hours or days (``45m``, ``12h``, ``30d``) up to the
    longest lifetime of a token, or ``never``; ``None`` (not given) is the default."""
    if text is None:
        return DEFAULT_DEVICE_LIFETIME
    value = text.strip().lower()
    if value == NEVER:
        return None
    found = re.fullmatch(r"([0-9]{1,6})\s*([mhd])", value)
    lifetime = None if found is None else int(found[1]) * _UNITS[found[2]]
    if lifetime is None or not timedelta(0) < lifetime <= MAX_TOKEN_LIFETIME:
        raise InvalidInput(
            f"expires-in: minutes, hours or days (45m, 12h, 30d) up to "
            f"{MAX_TOKEN_LIFETIME.days}d, or {NEVER!r}; got {text!r}",
            field="expires_in",
        )
    return lifetime


def _lifetime(seconds: object) -> str:
    if not isinstance(seconds, int):
        return "until revoked"
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds % size == 0:
            count = seconds // size
            return f"for {count} {unit}{'' if count == 1 else 's'}"
    return f"for {seconds} seconds"


@session_command(device_app, "pair")
def pair_command(
    s: Session | Remote,
    name: Annotated[
        str, typer.Argument(metavar="NAME", help='What the device is ("Anna\'s phone").')
    ],
    expires_in: Annotated[
        str | None,
        typer.Option(
            "--expires-in",
            metavar="N[m|h|d]|never",
            help="How long the device stays paired once the link is opened: minutes, "
            f"hours or days up to {MAX_TOKEN_LIFETIME.days}d (default "
            f"{DEFAULT_DEVICE_LIFETIME.days}d), or never.",
            show_default=False,
        ),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            metavar="URL",
            envvar="KALENDS_BASE_URL",
            help="Local mode: the server's public URL for the link (default: the one "
            "the last `kalends serve` on this database recorded). A server gives its own.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Print a one-time link that pairs a device as the acting actor.

    Open the link once in the device's browser within 15 minutes; the device
    then stays signed in for --expires-in. With --json: {"pairingUrl", "name",
    "expiresAt", "lifetimeSeconds"}.
    """
    from kalends.auth.tokens import check_token_name  # noqa: PLC0415

    label = check_token_name(name)
    lifetime = parse_lifetime(expires_in)
    made = devices_of(s).pair(s.actor, label, lifetime, base_url=base_url)
    print_created(
        s,
        made,
        headline=f"pairing link for device {made['name']} of {s.actor}, paired "
        f"{_lifetime(made['lifetimeSeconds'])} once opened",
        secret=made["pairingUrl"],
        note=f"open it once in the device's browser; it stops working at {when(made['expiresAt'])}",
    )


@session_command(device_app, "ls")
def ls_command(s: Session | Remote) -> None:
    """List the acting actor's paired devices, revoked and expired ones too.

    Newest first. With --json: the devices as `kalends token ls --json` prints tokens.
    """
    found: list[CredentialJson] = [d.to_json() for d in devices_of(s).list(s.actor)]
    # The pairing's time is in --json.
    print_credentials(
        s, found, nothing=f"{s.actor} has no paired device", columns=LIFETIME_COLUMNS, named=True
    )


@session_command(device_app, "revoke")
def revoke_command(s: Session | Remote, device_id: DeviceIdArgument) -> None:
    """Unpair one of the acting actor's devices: signed out at its next request.

    Revoking a revoked device changes nothing. With --json: the device.
    """
    from kalends.auth.devices import check_device_id  # noqa: PLC0415

    parsed = check_device_id(device_id)
    revoked: CredentialJson = devices_of(s).revoke(s.actor, parsed).to_json()
    print_revoked(s, revoked, f"unpaired device {revoked['name']}")
