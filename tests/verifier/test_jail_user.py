"""The jail's unprivileged host user (``verifier.runners.jail_user``): the way to what the
jail binds is opened for it while bwrap makes the jail and closed after, nothing beside
the bound folders is made readable, and a GPU node it cannot open is named."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from verifier.runners import jail_user


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_grant_opens_the_way_to_the_staging_and_revoke_closes_it(tmp_path: Path) -> None:
    private = tmp_path / "run"
    (private / "bundle" / "engine").mkdir(parents=True)
    (private / "bundle" / "engine" / "serve.py").write_text("print()\n")
    key = private / "key.pem"
    key.write_text("secret\n")
    for path, mode in ((private, 0o700), (private / "bundle", 0o700), (key, 0o600)):
        path.chmod(mode)
    (private / "bundle" / "engine" / "serve.py").chmod(0o600)
    saved = jail_user.grant([], [str(private / "bundle")])
    assert _mode(private) == 0o701  # searchable by others while bwrap binds
    assert _mode(private / "bundle") == 0o705
    assert _mode(private / "bundle" / "engine" / "serve.py") == 0o604
    assert _mode(key) == 0o600  # beside the staging: untouched
    jail_user.revoke(saved)
    assert _mode(private) == 0o700
    # the staging itself stays readable: the engine reads it through the jail's mount
    assert _mode(private / "bundle") == 0o705


def test_a_gpu_node_the_jail_user_cannot_open_is_named(tmp_path: Path) -> None:
    assert jail_user.closed_devices(["/dev/null"]) == []
    node = tmp_path / "nvidia0"
    try:
        os.mknod(node, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod needs CAP_MKNOD")
    node.chmod(0o600)
    assert jail_user.closed_devices([str(node)]) == [f"{node} (crw-------)"]
    tools = tmp_path / "nvidia-uvm-tools"
    os.mknod(tools, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    assert jail_user.closed_devices([str(tools)]) == []  # the profiler's: not needed


def test_the_host_uid_is_the_kernels() -> None:
    assert jail_user.host_uid(os.getpid()) == os.getuid()
    assert jail_user.host_uid(None) is None
