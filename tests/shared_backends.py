"""Both shared-store backends as a pytest fixture (`backend`): a directory, and an S3
API server on loopback (moto's, which implements S3's conditional writes) reached through
the real s3fs client, a fresh bucket per test. Import `backend` and `s3_endpoint` into a
test module to use them; the module must skip without boto3 and moto's server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from continuity.store import Backend, open_backend

__all__ = ["backend", "bucket", "s3_endpoint", "s3_options"]


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    from moto import server as moto_server

    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def s3_options(endpoint: str) -> dict[str, Any]:
    return {"key": "loopback", "secret": "loopback",
            "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}  # fmt: skip


def bucket(endpoint: str) -> str:
    import boto3  # type: ignore[import-untyped]

    name = f"b-{uuid.uuid4().hex[:12]}"
    client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="loopback",
                          aws_secret_access_key="loopback", region_name="us-east-1")  # fmt: skip
    client.create_bucket(Bucket=name)
    return name


@pytest.fixture(params=["local", "s3"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "local":
        return open_backend(str(tmp_path / "shared"))
    endpoint = request.getfixturevalue("s3_endpoint")
    return open_backend(f"s3://{bucket(endpoint)}/store", **s3_options(endpoint))
