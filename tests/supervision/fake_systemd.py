"""Stand-ins for ``systemctl`` and ``loginctl``: small executables a test writes into a
directory it puts first on ``PATH``.

Each records its argument vector (one JSON line per call, in ``calls.jsonl`` beside it)
and answers as a user manager would: the unit's enabled and active states are files
beside it, and ``enable`` fails as systemd does when the unit file is missing. The
``behaviour`` picks the variant: ``manager`` (a user manager answers), ``no-manager``
(``show-environment`` fails as it does in a container), ``failing`` (a manager that
refuses to enable), ``absent`` (no ``systemctl`` at all: ``PATH`` holds only the
directory, with ``loginctl``), ``slow`` (a manager whose ``daemon-reload`` takes 3 s).
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

SYSTEMCTL = textwrap.dedent(
    """\
    import json, os, sys
    from pathlib import Path

    here = Path(__file__).resolve().parent
    behaviour = (here / "behaviour").read_text().strip()
    args = sys.argv[1:]
    with (here / "calls.jsonl").open("a") as log:
        log.write(json.dumps(["systemctl", *args]) + "\\n")
    if args[:1] != ["--user"]:
        print("this stand-in answers only --user", file=sys.stderr)
        sys.exit(1)
    args = args[1:]
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.environ["HOME"], ".config")
    unit = Path(config) / "systemd" / "user" / "kalends.service"
    enabled, active = here / "enabled", here / "active"
    verb, rest = args[0], args[1:]
    if verb == "show-environment":
        if behaviour == "no-manager":
            print("Failed to connect to bus: No medium found", file=sys.stderr)
            sys.exit(1)
        print("HOME=" + os.environ.get("HOME", ""))
    elif verb == "daemon-reload":
        if behaviour == "slow":
            import time
            time.sleep(3)
    elif verb == "enable":
        if behaviour == "failing":
            print("Failed to enable unit: Access denied", file=sys.stderr)
            sys.exit(1)
        if not unit.is_file():
            missing = "Unit file kalends.service does not exist."
            print("Failed to enable unit: " + missing, file=sys.stderr)
            sys.exit(1)
        enabled.touch()
        if "--now" in rest:
            active.touch()
    elif verb == "disable":
        enabled.unlink(missing_ok=True)
        if "--now" in rest:
            active.unlink(missing_ok=True)
    elif verb == "is-enabled":
        if not unit.is_file():
            print("Failed to get unit file state for kalends.service: No such file or directory",
                  file=sys.stderr)
            sys.exit(1)
        print("enabled" if enabled.exists() else "disabled")
        sys.exit(0 if enabled.exists() else 1)
    elif verb == "is-active":
        print("active" if active.exists() else "inactive")
        sys.exit(0 if active.exists() else 3)
    elif verb == "show":
        last = here / "last-exit"
        if last.exists():
            print(last.read_text().strip())
        else:
            print("ExecMainCode=0\\nExecMainStatus=0\\nExecMainExitTimestamp=")
    else:
        print(f"Unknown command verb {verb}.", file=sys.stderr)
        sys.exit(1)
    """
)

LOGINCTL = textwrap.dedent(
    """\
    import json, sys
    from pathlib import Path

    here = Path(__file__).resolve().parent
    with (here / "calls.jsonl").open("a") as log:
        log.write(json.dumps(["loginctl", *sys.argv[1:]]) + "\\n")
    print("Linger=no")
    """
)

BEHAVIOURS = ("manager", "no-manager", "failing", "absent", "slow")


@dataclass
class FakeSystemd:
    """The stand-ins' directory and the home the processes run with."""

    bin: Path
    home: Path
    behaviour: str

    @property
    def config(self) -> Path:
        return self.home / ".config"

    @property
    def unit(self) -> Path:
        return self.config / "systemd" / "user" / "kalends.service"

    def env(self) -> dict[str, str]:
        """What a process needs to reach the stand-ins instead of the machine's systemd,
        and to keep away from the real home."""
        path = str(self.bin)
        if self.behaviour != "absent":
            path += os.pathsep + os.environ.get("PATH", os.defpath)
        return {
            "PATH": path,
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.config),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "USER": "olivia",
        }

    def calls(self) -> list[list[str]]:
        log = self.bin / "calls.jsonl"
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]

    def systemctl_calls(self) -> list[list[str]]:
        """The systemctl calls but the availability question."""
        return [
            c[2:] for c in self.calls() if c[0] == "systemctl" and c[2:] != ["show-environment"]
        ]

    def forget_calls(self) -> None:
        (self.bin / "calls.jsonl").unlink(missing_ok=True)

    @property
    def enabled(self) -> bool:
        return (self.bin / "enabled").exists()

    @property
    def active(self) -> bool:
        return (self.bin / "active").exists()

    def set_last_exit(self, code: int, status: int, when: str) -> None:
        (self.bin / "last-exit").write_text(
            f"ExecMainCode={code}\nExecMainStatus={status}\nExecMainExitTimestamp={when}\n"
        )


def install_fake(directory: Path, behaviour: str) -> FakeSystemd:
    """Writes the stand-ins for ``behaviour`` into ``directory``/bin, with a home beside."""
    assert behaviour in BEHAVIOURS
    bin_dir = directory / "bin"
    bin_dir.mkdir(parents=True)
    home = directory / "home"
    home.mkdir()
    (bin_dir / "behaviour").write_text(behaviour)
    programs: dict[str, str] = {"loginctl": LOGINCTL}
    if behaviour != "absent":
        programs["systemctl"] = SYSTEMCTL
    for name, text in programs.items():
        path = bin_dir / name
        path.write_text(f"#!{sys.executable}\n{text}")
        path.chmod(0o755)
    return FakeSystemd(bin=bin_dir, home=home, behaviour=behaviour)
