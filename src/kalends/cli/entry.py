"""The ``kalends`` executable: a command loads only its own module.

``kalends preview`` needs the civil-time engine, ``kalends report`` (run from inside a
passage, often at the end of a short script) only its report client; loading every
command's module first would cost each of them well over a second. The first argument
names the command (:mod:`kalends.cli.command_table`); without one, with an option first
(``--help``, ``--version``) or with a name that is no command, the whole command line is
built, which lists the commands or says which name is unknown.
"""

from __future__ import annotations

import sys


def main() -> None:
    from kalends.cli.command_table import COMMANDS  # noqa: PLC0415

    name = sys.argv[1] if len(sys.argv) > 1 else ""
    if name in COMMANDS:
        from kalends.cli.main import command_line  # noqa: PLC0415

        command_line([name])(args=sys.argv[1:], prog_name="kalends")
        return
    from kalends.cli.main import main as full  # noqa: PLC0415

    full()
