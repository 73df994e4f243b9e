"""Where an unprivileged user's journal lives: $XDG_STATE_HOME, then a $HOME the user owns,
then the passwd home (a tool installed for everyone is run by users whose passwd home may not exist)."""

import os
import pwd
from pathlib import Path

import pytest

from jitterscope.errors import JitterscopeError
from jitterscope.journal import user_state_dir


def _other_user(uid: int) -> int:
    """A uid with a passwd entry other than `uid` (nobody where it exists)."""
    others = [p.pw_uid for p in pwd.getpwall() if p.pw_uid != uid]
    if not others:
        pytest.skip("the password database names no second user")
    return 65534 if 65534 in others else others[0]


def test_xdg_state_home_comes_first(tmp_path):
    own = os.stat(tmp_path).st_uid
    got = user_state_dir(own, {"XDG_STATE_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path)})
    assert got == tmp_path / "xdg" / "jitterscope"


def test_relative_xdg_state_home_is_ignored_as_the_spec_says(tmp_path):
    own = os.stat(tmp_path).st_uid
    assert user_state_dir(own, {"XDG_STATE_HOME": "rel/state", "HOME": str(tmp_path)}) == (
        tmp_path / ".local/state/jitterscope"
    )


def test_a_home_the_user_owns_beats_the_passwd_home(tmp_path):
    own = os.stat(tmp_path).st_uid
    assert Path(pwd.getpwuid(own).pw_dir) != tmp_path
    assert user_state_dir(own, {"HOME": str(tmp_path)}) == tmp_path / ".local/state/jitterscope"


def test_another_users_home_is_not_taken(tmp_path):
    # as under `sudo -u` or `setpriv`, which can leave the caller's HOME in place
    uid = _other_user(os.stat(tmp_path).st_uid)
    got = user_state_dir(uid, {"HOME": str(tmp_path)})
    assert got == Path(pwd.getpwuid(uid).pw_dir) / ".local/state/jitterscope"


def test_no_home_at_all_is_one_clear_error():
    taken = {p.pw_uid for p in pwd.getpwall()}
    uid = next(u for u in range(2**31 - 2, 0, -1) if u not in taken)
    with pytest.raises(JitterscopeError, match="XDG_STATE_HOME"):
        user_state_dir(uid, {"HOME": "/"})
