"""The kernel command line as tune reads it: quoting, `--`, isolcpus flags, nohz_full with nohz=off."""

from __future__ import annotations

import pytest

from jitterscope.errors import JitterscopeError
from jitterscope.tune import cmdline
from jitterscope.tune.plan import merge_boot


def test_parse_quotes_dashes_repeats_and_init_arguments():
    c = cmdline.parse(
        'BOOT_IMAGE=/vmlinuz root=UUID=1 quiet dyndbg="file x.c +p" rcu-nocbs=2 '
        "nohz_full=1 nohz_full=2-3 -- nohz_full=9 single"
    )
    assert c.get("root") == "UUID=1"
    assert c.get("dyndbg") == "file x.c +p"
    assert c.has("quiet") and c.get("quiet") is None
    assert c.get("rcu_nocbs") == "2"  # '-' and '_' are the same in a name
    assert c.get("nohz_full") == "2-3"  # the last one counts
    assert not c.has("single")  # after `--`: init's, not the kernel's
    assert cmdline.parse('a="unterminated b').has("a")  # an unbalanced quote does not raise


def test_isolcpus_flags_and_lists():
    assert cmdline.isolcpus("2-3", 8) == (["domain"], [2, 3])  # no flag means domain
    assert cmdline.isolcpus("nohz,managed_irq,1,5-N", 8) == (["nohz", "managed_irq"], [1, 5, 6, 7])
    assert cmdline.isolcpus("domain,0-7:1/2", 8) == (["domain"], [0, 2, 4, 6])
    assert cmdline.isolcpus(None, 8) == ([], [])
    with pytest.raises(JitterscopeError, match="no CPU list"):
        cmdline.isolcpus("nohz,domain", 8)


def test_nohz_full_is_void_with_nohz_off_and_implies_rcu_nocbs():
    c = cmdline.parse("nohz_full=2-3 rcu_nocbs=1")
    assert cmdline.cpus_of(c, "nohz_full", 4) == [2, 3]
    assert cmdline.rcu_offloaded(c, 4) == [1, 2, 3]
    off = cmdline.parse("nohz_full=2-3 nohz=off")
    assert cmdline.cpus_of(off, "nohz_full", 4) == []
    assert cmdline.rcu_offloaded(off, 4) == []
    assert cmdline.cpus_of(cmdline.parse("rcu_nocbs"), "rcu_nocbs", 4) == [0, 1, 2, 3]  # bare: every CPU
    assert cmdline.cpus_of(cmdline.parse("isolcpus=managed_irq,3"), "isolcpus", 4) == [3]


def test_boot_parameters_merge_into_one_line():
    got = merge_boot(
        [
            "nohz_full=1",
            "isolcpus=managed_irq,domain,1",
            "rcu_nocbs=1",
            "isolcpus=domain,nohz,1",
            "nohz_full=1",
            "psi=0",
        ]
    )
    assert got == ["nohz_full=1", "isolcpus=managed_irq,domain,nohz,1", "rcu_nocbs=1", "psi=0"]
    assert merge_boot(["psi=0", "skew_tick=1"], cmdline.parse("quiet psi=0")) == ["skew_tick=1"]


def test_the_bootloader_is_found_per_distribution(tmp_path):
    """Debian/Ubuntu/SUSE keep the line in /etc/default/grub, systemd-boot in /etc/kernel/cmdline; with
    neither (this VM: the hypervisor passes it) the plan says where else it comes from."""
    from jitterscope.tune import bootloader

    none = bootloader.detect(tmp_path)
    assert none["kind"] is None and not none["editable"] and "hypervisor" in none["command"]
    (tmp_path / "etc/kernel").mkdir(parents=True)
    (tmp_path / "etc/kernel/cmdline").write_text("root=/dev/vda1 quiet\n")
    ki = bootloader.detect(tmp_path)
    assert ki["kind"] == "kernel-install" and ki["editable"] and "kernel-install add" in ki["command"]
    (tmp_path / "etc/default").mkdir()
    (tmp_path / "etc/default/grub").write_text('GRUB_CMDLINE_LINUX="quiet nohz_full=2"\n')
    grub = bootloader.detect(tmp_path)  # where both exist, grub is looked for first
    assert grub["kind"] == "grub" and grub["file"] == str(tmp_path / "etc/default/grub")
    assert "GRUB_CMDLINE_LINUX" in grub["command"]
    assert bootloader.merged("quiet nohz_full=2", ["nohz_full=1", "rcu_nocbs=1"]) == "quiet nohz_full=1 rcu_nocbs=1"
