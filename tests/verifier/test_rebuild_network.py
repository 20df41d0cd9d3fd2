"""The rebuild has no network: the image follows from the bundle and its pinned base alone.

A cheat's Dockerfile fetches a file at build time from an HTTP server on this host, bound
to the Docker bridge's gateway address so that a build *with* a network reaches it (shown
here with docker-py's own build on the bridge). podium's build gives ``RUN`` steps no
network: the step fails, the error names it and what to vendor, and the verifier's run is
REJECTED on ``image.network`` before anything starts. An honest bundle that installs a
vendored wheel with ``pip install --no-index --find-links`` still rebuilds, and its
image id is recorded.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.server
import ipaddress
import shutil
import threading
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from podium import dockerx
from podium.errors import ImageBuildError
from schemas.challenge import load_challenge
from submission.bundle import package
from verifier.checks.limits import build_network
from verifier.intake import intake
from verifier.pipeline import VerifyRequest, verify
from verifier.rebuild import rebuild_image
from verifier.runners.local_docker import LocalDockerRunner

REPO = Path(__file__).resolve().parents[2]
SMALL_BASE = "podium/base:bookworm"  # python3, no pip: enough for a step that fetches
PIP_LOG = (
    "Step 1/3 : FROM podium/engine-base:bookworm\n ---> 86bb8331baf8\n"
    "Step 2/3 : RUN pip install requests==2.32.3\n ---> Running in 1a2b\n"
    "WARNING: Retrying (Retry(total=4)) after connection broken by 'NewConnectionError("
    "'<pip._vendor.urllib3.connection.HTTPSConnection>: Failed to establish a new "
    "connection: [Errno -3] Temporary failure in name resolution')': /simple/requests/\n"
    "ERROR: Could not find a version that satisfies the requirement requests==2.32.3\n"
)


def test_a_pip_step_without_the_network_is_named_with_how_to_vendor_wheels() -> None:
    err = dockerx.build_failure("podium-test/x:1", "returned a non-zero code: 1", PIP_LOG)
    assert err.network and err.step == "2/3 : RUN pip install requests==2.32.3"
    assert "--no-index --find-links wheels/" in (err.hint or "")
    assert "pip download" in (err.hint or "")


@pytest.mark.quiet("image.network")
def test_a_step_that_fails_for_another_reason_is_not_a_network_finding() -> None:
    log = "Step 1/2 : FROM x\nStep 2/2 : RUN python3 -c 'raise SystemExit(3)'\n"
    err = dockerx.build_failure("podium-test/x:1", "returned a non-zero code: 3", log)
    assert not err.network and err.step == "2/2 : RUN python3 -c 'raise SystemExit(3)'"
    assert build_network(err) == []
    assert "at step 2/2" in err.message


# --- against the real engine ---------------------------------------------------------


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    c = dockerx.connect()
    yield c
    c.close()


def bridge_gateway(client: Any) -> str:
    """The host's address on Docker's default bridge: what a build with a network reaches."""
    config = client.networks.get("bridge").attrs["IPAM"]["Config"][0]
    return str(config.get("Gateway") or next(ipaddress.ip_network(config["Subnet"]).hosts()))


@contextlib.contextmanager
def host_server(address: str) -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on ``address`` (never 0.0.0.0) that records every path asked."""
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"code the bundle does not hold\n")

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer((address, 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://{address}:{server.server_address[1]}/payload.py", asked
    finally:
        server.shutdown()
        server.server_close()


def fetch_step(url: str) -> str:
    return (
        'RUN python3 -c "import urllib.request; '
        "open('/tmp/payload.py', 'wb')"
        f".write(urllib.request.urlopen('{url}', timeout=5).read())\"\n"
    )


@pytest.fixture
def tag(client: Any) -> Iterator[str]:
    name = f"podium-test/rebuild-net:{uuid.uuid4().hex[:12]}"
    yield name
    with contextlib.suppress(Exception):
        client.images.remove(name, force=True)


@pytest.mark.docker
@pytest.mark.fires("image.network")
def test_a_step_that_fetches_from_the_host_fails_the_build_naming_it(
    client: Any, tag: str, tmp_path: Path
) -> None:
    with host_server(bridge_gateway(client)) as (url, asked):
        (tmp_path / "Dockerfile").write_text(f"FROM {SMALL_BASE}\n{fetch_step(url)}")
        # with a network the fetch works: the server is reachable from a build
        built, _ = client.images.build(path=str(tmp_path), network_mode="bridge", rm=True)
        client.images.remove(built.id, force=True)
        assert asked == ["/payload.py"]
        with pytest.raises(ImageBuildError) as info:
            dockerx.build_image(client, tmp_path, tag=tag, nocache=True, timeout_s=120)
        assert asked == ["/payload.py"]  # podium's build never reached it
    err = info.value
    assert err.network and err.step is not None and err.step.startswith("2/2 : RUN python3")
    assert url in err.urls and url in (err.hint or "")
    findings = build_network(err)
    assert [f.check_id for f in findings] == ["image.network"]
    assert "build step 2/2" in findings[0].message and url in findings[0].message
    with pytest.raises(Exception):  # noqa: B017 - a failed build leaves no tag behind
        client.images.get(tag)


def tiny_entry(tmp_path: Path, extra_steps: str) -> Path:
    """examples/tiny-baseline with ``extra_steps`` after its COPY lines."""
    src = tmp_path / "src"
    shutil.copytree(
        REPO / "examples" / "tiny-baseline",
        src,
        ignore=shutil.ignore_patterns("manifest.json", "engine-config.json"),
    )
    dockerfile = (src / "Dockerfile").read_text()
    anchor = "COPY engine-config.json /submission/\n"
    assert anchor in dockerfile
    (src / "Dockerfile").write_text(dockerfile.replace(anchor, anchor + extra_steps))
    return src


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.fires("image.network")
def test_a_bundle_whose_build_fetches_is_rejected_before_anything_runs(
    client: Any, tmp_path: Path
) -> None:
    with host_server(bridge_gateway(client)) as (url, asked):
        src = tiny_entry(tmp_path, fetch_step(url))
        made = package(src, tmp_path / "dist", build=False)
        assert made.bundle is not None, made.findings
        runner = LocalDockerRunner()
        req = VerifyRequest(made.bundle.path, load_challenge("tiny"), runner, tmp_path / "out")
        out = verify(req)
        assert asked == []
    report = out.report
    assert out.verdict == "REJECTED", (report["findings"], report.get("failure"))
    found = [f for f in report["findings"] if f["check_id"] == "image.network"]
    assert found and "RUN python3" in found[0]["message"] and url in found[0]["hint"]
    stages = [s["name"] for s in report["stages"]]
    assert "rebuild" in stages and "start" not in stages  # nothing of the entry ran


@pytest.mark.docker
def test_the_participants_own_package_build_has_no_network_either(
    client: Any, tmp_path: Path
) -> None:
    """``submission package`` builds as the verifier rebuilds: the participant finds out
    before submitting, with the step and what to vendor."""
    with host_server(bridge_gateway(client)) as (url, asked):
        src = tiny_entry(tmp_path, fetch_step(url))
        with pytest.raises(ImageBuildError) as info:
            package(src, tmp_path / "dist")
        assert asked == []
    assert info.value.network and "RUN python3" in (info.value.step or "")
    assert url in (info.value.hint or "")


def vendored_wheel(folder: Path) -> str:
    """A pure-Python wheel made here, so the test needs no index: its file name."""
    name, version = "podium_vendored_probe", "1.0"
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": b"VENDORED = True\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: podium-test\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    files[f"{info}/RECORD"] = ("\n".join([*record, f"{info}/RECORD,,"]) + "\n").encode()
    wheel = f"{name}-{version}-py3-none-any.whl"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / wheel, "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
    return wheel


@pytest.mark.docker
@pytest.mark.quiet("image.network")
def test_an_honest_bundle_with_vendored_wheels_rebuilds_without_a_network(
    client: Any, tmp_path: Path
) -> None:
    src = tiny_entry(
        tmp_path,
        "COPY wheels/ /submission/wheels/\n"
        "RUN pip install --no-index --find-links /submission/wheels podium_vendored_probe "
        '&& python -c "import podium_vendored_probe"\n',
    )
    vendored_wheel(src / "wheels")
    made = package(src, tmp_path / "dist", build=False)
    assert made.bundle is not None, made.findings
    spec = load_challenge("tiny")
    opened = intake(made.bundle.path, tmp_path / "work", spec)
    assert opened.ok and opened.root is not None and opened.manifest is not None
    tag = f"podium-test/rebuild-honest-{uuid.uuid4().hex[:12]}"
    try:
        image = rebuild_image(client, opened.root, opened.manifest, spec, tag=tag)
    except ImageBuildError as exc:  # pragma: no cover - the assertion says what happened
        pytest.fail(f"{exc.message} ({build_network(exc)})")
    finally:
        with contextlib.suppress(Exception):
            client.images.remove(f"{tag}:latest", force=True)
    assert image["id"].startswith("sha256:") and image["base_image"].startswith("sha256:")
