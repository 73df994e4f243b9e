"""Where boot parameters go on this machine, and adding them through the journal (`tune apply --boot`).

Known: grubby (Fedora, RHEL), /etc/default/grub + update-grub or grub2-mkconfig
(Debian, Ubuntu, SUSE), /etc/kernel/cmdline (systemd-boot and kernel-install).
Without any of them the command line comes from elsewhere (a hypervisor's boot
arguments, PXE, a unified kernel image) and the plan says so.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

from jitterscope import atomic, boundedio
from jitterscope.errors import JitterscopeError
from jitterscope.journal import Journal
from jitterscope.tune import cmdline
from jitterscope.tune.records import BootApplied, BootLoader


def _update_command(root: Path) -> list[str] | None:
    for cmd in (
        ["update-grub"],
        ["grub2-mkconfig", "-o", "/boot/grub2/grub.cfg"],
        ["grub-mkconfig", "-o", "/boot/grub/grub.cfg"],
    ):
        if shutil.which(cmd[0]) and (cmd[0] == "update-grub" or (root / cmd[-1].lstrip("/")).parent.is_dir()):
            return cmd
    return None


def detect(root: Path = Path("/")) -> BootLoader:
    """{kind, file, command (how to add PARAMS), editable} for this machine."""
    grub = root / "etc/default/grub"
    kcmd = root / "etc/kernel/cmdline"
    if root == Path("/") and shutil.which("grubby"):
        return {
            "kind": "grubby",
            "file": None,
            "command": 'grubby --update-kernel=ALL --args="{params}"',
            "editable": False,
        }
    if grub.is_file():
        upd = _update_command(root)
        return {
            "kind": "grub",
            "file": str(grub),
            "editable": True,
            "update": upd,
            "command": f'add "{{params}}" to GRUB_CMDLINE_LINUX in {grub}, then '
            f"{' '.join(upd) if upd else 'regenerate grub.cfg (update-grub / grub2-mkconfig)'}",
        }
    if kcmd.is_file():
        return {
            "kind": "kernel-install",
            "file": str(kcmd),
            "editable": True,
            "update": None,
            "command": f'add "{{params}}" to {kcmd}, then reinstall the kernel (kernel-install add)',
        }
    return {
        "kind": None,
        "file": None,
        "editable": False,
        "command": "no bootloader configuration found here: the kernel command line comes from elsewhere "
        '(a hypervisor\'s boot arguments, PXE, a unified kernel image); add "{params}" there',
    }


def merged(current: str, params: list[str]) -> str:
    """`current` parameters with `params` added, replacing a parameter of the same name."""
    names = {p.split("=", 1)[0].replace("-", "_") for p in params}
    kept = [w for w in shlex.split(current) if w.split("=", 1)[0].replace("-", "_") not in names]
    return " ".join(kept + params)


def _edit_grub(text: str, params: list[str]) -> str:
    m = re.search(r'^GRUB_CMDLINE_LINUX="([^"]*)"', text, re.MULTILINE)
    if not m:
        return text.rstrip("\n") + f'\nGRUB_CMDLINE_LINUX="{" ".join(params)}"\n'
    return text[: m.start(1)] + merged(m.group(1), params) + text[m.end(1) :]


def apply(j: Journal, params: list[str], root: Path = Path("/")) -> BootApplied:
    """Add `params` to the boot configuration through the journal; the record says a reboot is needed."""
    root = root.absolute()  # the record is reverted from wherever `tune revert` runs
    info = detect(root)
    if not info["editable"] or info["file"] is None:
        raise JitterscopeError(
            f"--boot: cannot edit the boot configuration here ({info['kind'] or 'none found'}); "
            f"do it by hand: {info['command'].format(params=' '.join(params))}"
        )
    path = Path(info["file"])
    text = boundedio.read_text(path, "boot configuration")
    new = _edit_grub(text, params) if info["kind"] == "grub" else merged(text.strip(), params) + "\n"
    upd = info.get("update") if root == Path("/") else None
    if upd:
        j.begin("argv", argv=upd, knob="bootloader", runtime=False)  # undone after the file: regenerate again
    j.begin("file", path=str(path), original=text, value=new, form="text", knob=f"boot:{path}", runtime=False)
    atomic.replace_text(path, new)  # a crash mid-write must not leave a truncated boot configuration
    ran = None
    if upd:
        proc = subprocess.run(upd, capture_output=True, text=True, check=False, timeout=300)
        if proc.returncode != 0:
            raise JitterscopeError(f"--boot: {' '.join(upd)} failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
        ran = " ".join(upd)
    pending = [p for p in params if p not in cmdline.current().text.split()]
    return {"file": str(path), "ran": ran, "params": params, "reboot_needed": bool(pending)}
