"""The state key: created once 0600 outside any repository, refused when it cannot be trusted; the MAC."""

from __future__ import annotations

import os
import secrets
import stat
import threading
import time
from pathlib import Path

import pytest

from gpuplatform.errors import EnvironmentFailure, InputError
from gpuplatform.output import state_key as state_key_module
from gpuplatform.output.state_key import key_path, mac_problems, seal, state_key

RECORD = {"format": "gpuplatform.dev/output-state/v1", "phase": "idle", "entries": [], "leftovers": []}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty `XDG_STATE_HOME` of this test's own."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state"


def test_the_session_never_uses_the_real_home(state_home: Path) -> None:
    assert key_path() == state_home / "gpuplatform" / "state-key"


@pytest.mark.parametrize("value", [None, "", "relative/state"])
def test_the_key_is_under_local_state_when_xdg_state_home_is_unset_empty_or_relative(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    if value is None:
        monkeypatch.delenv("XDG_STATE_HOME")
    else:
        monkeypatch.setenv("XDG_STATE_HOME", value)
    assert key_path() == tmp_path / ".local" / "state" / "gpuplatform" / "state-key"


def test_the_key_is_created_once_readable_by_its_owner_only(home: Path) -> None:
    # GIVEN no key, and a umask that would let everyone read a new file
    previous = os.umask(0)
    try:
        # WHEN the key is asked for twice
        first, second = state_key(), state_key()
    finally:
        os.umask(previous)
    # THEN it was made once: 32 random bytes, in a file and a folder only the owner can use
    path = home / "gpuplatform" / "state-key"
    assert first == second and len(first) == 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert os.listdir(path.parent) == ["state-key"]


def test_runs_that_create_the_key_at_once_all_get_the_same_whole_key(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a slow random source: a key file created empty and filled in after would be seen empty
    token_hex = secrets.token_hex

    def slow(n: int) -> str:
        time.sleep(0.02)
        return token_hex(n)

    monkeypatch.setattr(state_key_module.secrets, "token_hex", slow)
    # WHEN eight runs ask for the key at once / THEN none is refused and all get the same key
    keys: list[bytes] = []
    threads = [threading.Thread(target=lambda: keys.append(state_key())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(keys) == 8 and len(set(keys)) == 1


@pytest.mark.parametrize("dangling", [False, True], ids=["link-to-a-key", "dangling-link"])
def test_a_key_that_is_a_link_is_refused_and_nothing_is_written_through_it(
    home: Path, tmp_path: Path, dangling: bool
) -> None:
    # GIVEN a state-key that is a link to a file elsewhere (or to where a file would be created)
    elsewhere = tmp_path / "elsewhere"
    if not dangling:
        elsewhere.write_bytes(b"0" * 64 + b"\n")
        elsewhere.chmod(0o600)
    (home / "gpuplatform").mkdir(parents=True, mode=0o700)
    (home / "gpuplatform" / "state-key").symlink_to(elsewhere)
    # WHEN the key is asked for / THEN it is refused, naming the key file, and nothing is created
    with pytest.raises(InputError, match="is a symbolic link") as raised:
        state_key()
    assert raised.value.problems[0].file == str(home / "gpuplatform" / "state-key")
    assert elsewhere.exists() is not dangling


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620])
def test_a_key_other_users_can_read_or_write_is_refused(home: Path, mode: int) -> None:
    key = state_key()
    path = home / "gpuplatform" / "state-key"
    path.chmod(mode)
    with pytest.raises(InputError, match=f"is open to other users \\(mode {mode:o}"):
        state_key()
    path.chmod(0o600)
    assert state_key() == key


@pytest.mark.parametrize("content", [b"", b"0" * 64, b"0" * 63 + b"\n", b"g" * 64 + b"\n", b"0" * 65 + b"\n"])
def test_a_key_file_gpuplatform_did_not_write_is_refused(home: Path, content: bytes) -> None:
    path = home / "gpuplatform" / "state-key"
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_bytes(content)
    path.chmod(0o600)
    with pytest.raises(InputError, match="is not a key gpuplatform wrote"):
        state_key()


def test_a_key_that_is_a_folder_is_refused(home: Path) -> None:
    (home / "gpuplatform").mkdir(parents=True, mode=0o700)
    (home / "gpuplatform" / "state-key").mkdir()
    with pytest.raises(InputError, match="is not a regular file"):
        state_key()


@pytest.mark.parametrize("blocked", ["file", "read-only"])
def test_a_key_that_cannot_be_read_or_created_is_an_environment_failure(home: Path, blocked: str) -> None:
    # GIVEN a file where the state folder should be, or a state folder no one may write
    if blocked == "file":
        home.write_text("not a folder")
    else:
        home.mkdir()
        (home / "gpuplatform").write_text("")
        (home / "gpuplatform").unlink()
        home.chmod(0o500)
        if os.geteuid() == 0:
            pytest.skip("root writes a read-only folder")
    # WHEN the key is asked for / THEN the machine refused: exit 74, the key file named
    with pytest.raises(
        EnvironmentFailure, match=f"^{home}/gpuplatform/state-key: cannot (read|create) the state key"
    ):
        state_key()


def test_a_sealed_record_verifies_and_any_change_breaks_it() -> None:
    key = state_key()
    sealed = seal(RECORD, key)
    assert mac_problems(sealed, key, "s") == []
    assert mac_problems(dict(reversed(sealed.items())), key, "s") == []  # key order does not matter
    for changed in (sealed | {"phase": "swapping"}, seal(RECORD, b"k" * 32), sealed | {"mac": "é"}):
        (problem,) = mac_problems(changed, key, "s")
        assert (problem.file, problem.loc) == ("s", "mac")
        assert problem.message.startswith("its MAC does not match: this record was not written by")
    (problem,) = mac_problems(RECORD, key, "s")
    assert problem.message.startswith("has no MAC")


def test_a_machine_that_refuses_the_key_says_where_to_put_it(home: Path) -> None:
    # issue 39 (low): a read-only HOME gave exit 74 with no hint
    home.write_text("not a folder")
    with pytest.raises(EnvironmentFailure, match="set XDG_STATE_HOME to a writable folder of your own"):
        state_key()


@pytest.mark.parametrize("problem", ["link", "open", "file"])
def test_a_key_folder_that_is_not_this_users_own_is_refused_with_the_reason(
    home: Path, tmp_path: Path, problem: str
) -> None:
    # GIVEN the key's folder is a link, open to others, or not a folder (issue 39: a planted key)
    home.mkdir()
    folder = home / "gpuplatform"
    if problem == "link":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        folder.symlink_to(tmp_path / "elsewhere")
    elif problem == "open":
        folder.mkdir(mode=0o700)
        folder.chmod(0o775)
    else:
        folder.write_text("")
    why = {
        "link": "is a symbolic link",
        "open": r"is open to other users \(mode 775\)",
        "file": "is not a folder",
    }
    # WHEN the key is asked for / THEN refused, naming the folder and why; nothing is created
    with pytest.raises(InputError, match=why[problem]) as refused:
        state_key()
    assert refused.value.problems[0].file == str(folder)
    assert not (tmp_path / "elsewhere" / "state-key").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
@pytest.mark.parametrize("planted", ["folder", "key"])
def test_a_key_or_folder_another_user_owns_is_refused(home: Path, planted: str) -> None:
    # GIVEN a key (0600, in a 0700 folder) that the user `nobody` planted for root to use (issue 39)
    previous = os.umask(0o077)
    try:
        state_key()
    finally:
        os.umask(previous)
    path = key_path()
    os.chown(path.parent if planted == "folder" else path, 65534, 65534)
    # WHEN root asks for it / THEN it is refused: its owner could have chosen it
    with pytest.raises(InputError, match="is owned by uid 65534, not by this user"):
        state_key()
