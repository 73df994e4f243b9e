"""`jitterscope --version`: the version and the commit the package was built from."""

import shutil
import subprocess
import sys
import types

import pytest

from jitterscope import __version__, buildinfo
from jitterscope.cli import main

ROOT = buildinfo._CHECKOUT
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")


def _git(tree, *args):
    return subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    _git(tmp_path, "init", "-q")
    (tmp_path / "f").write_text("a")
    _git(tmp_path, "add", "f")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    return tmp_path


@needs_git
def test_a_checkout_gives_its_head_and_says_when_tracked_files_differ(repo):
    head = _git(repo, "rev-parse", "HEAD")
    (repo / "untracked").write_text("x")  # not a change to what was built
    assert buildinfo.git_commit(repo) == head
    (repo / "f").write_text("b")
    assert buildinfo.git_commit(repo) == head + "+modified"


@needs_git
def test_only_the_top_of_a_checkout_counts(repo):
    (repo / "sub").mkdir()
    assert buildinfo.git_commit(repo / "sub") is None  # e.g. a venv inside somebody's repository


def test_no_checkout_is_none(tmp_path):
    assert buildinfo.git_commit(tmp_path) is None


def test_the_recorded_commit_wins_over_git(monkeypatch):
    monkeypatch.setitem(sys.modules, "jitterscope._build_info", types.SimpleNamespace(COMMIT="0123abc"))
    assert buildinfo.build_commit() == "0123abc"


def test_without_record_or_checkout_it_is_unknown(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "jitterscope._build_info", None)  # import raises ImportError
    monkeypatch.setattr(buildinfo, "_CHECKOUT", tmp_path)
    assert buildinfo.build_commit() == "unknown"


def test_write_build_info_replaces_a_hard_link_and_reads_back(tmp_path):
    shared = tmp_path / "checkout.py"
    shared.write_text("COMMIT = 'old'\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / buildinfo.BUILD_INFO).hardlink_to(shared)  # as an sdist's release tree does
    buildinfo.write_build_info(tmp_path / "pkg", "feed42")
    assert shared.read_text() == "COMMIT = 'old'\n"
    ns: dict = {}
    exec((tmp_path / "pkg" / buildinfo.BUILD_INFO).read_text(), ns)
    assert ns["COMMIT"] == "feed42"


@pytest.mark.skipif(not (ROOT / ".git").exists() or shutil.which("git") is None, reason="not a git checkout")
def test_cli_version_prints_version_and_this_checkouts_commit(capsys):
    with pytest.raises(SystemExit) as ex:
        main(["--version"])
    assert ex.value.code == 0
    out = capsys.readouterr().out.strip()
    head = _git(ROOT, "rev-parse", "HEAD")
    assert out.startswith(f"jitterscope {__version__} (commit {head}")


def test_setup_py_can_load_it_before_the_package_is_importable():
    # setup.py loads buildinfo.py by path in an isolated build, where no jitterscope is installed yet;
    # -I -S: no site-packages, so neither an installed nor an editable jitterscope can be imported
    load = (
        "import importlib.util, sys; spec = importlib.util.spec_from_file_location('b', sys.argv[1]); "
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); print(m.build_commit())"
    )
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", load, buildinfo.__file__], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == buildinfo.build_commit()
