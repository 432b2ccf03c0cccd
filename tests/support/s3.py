"""An S3-compatible server on 127.0.0.1 for the storage tests: moto's server (`moto[server]`,
from the test extras), a real HTTP server speaking the S3 protocol, run in a process of its
own on a free port. It checks every request's SigV4 signature against the access keys of
its IAM, as AWS does: the first three requests (unsigned) make a user, its access key and a
policy allowing everything; from then on a wrong key or secret is refused
(InvalidAccessKeyId, SignatureDoesNotMatch), a missing bucket is NoSuchBucket, and
multipart uploads keep their parts' sizes.

(SeaweedFS, which the issue names, is packaged by Debian from version 13 on; this machine's
Debian 12 has no `seaweedfs-bin`, and CI runs on the same kind of machine.)
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from botocore.config import Config
from botocore.session import get_session

from tests.support.cli import free_port

REGION = "eu-west-1"
# Unsigned actions moto allows before it checks every signature (IAM: user, key, policy).
_SETUP_ACTIONS = 3


@dataclass
class S3Server:
    """One moto server; `bucket()` makes a bucket of its own for a test."""

    port: int = field(default_factory=free_port)
    access_key_id: str = ""
    secret_access_key: str = ""
    proc: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> S3Server:
        env = {
            **os.environ,
            "INITIAL_NO_AUTH_ACTION_COUNT": str(_SETUP_ACTIONS),
            "MOTO_ALLOW_NONEXISTENT_REGION": "false",
            "TMPDIR": tempfile.gettempdir(),
        }
        self.proc = subprocess.Popen(  # noqa: S603 - our own command line
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._wait_up()
        iam = self._client("iam", "setup", "setup")
        iam.create_user(UserName="agentsvc")
        key = iam.create_access_key(UserName="agentsvc")["AccessKey"]
        policy = {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
        }
        iam.put_user_policy(
            UserName="agentsvc", PolicyName="all", PolicyDocument=json.dumps(policy)
        )
        self.access_key_id, self.secret_access_key = key["AccessKeyId"], key["SecretAccessKey"]
        return self

    def _wait_up(self) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.proc is not None and self.proc.poll() is None, "moto's server stopped"
            try:
                urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=1).close()  # noqa: S310
                return
            except (urllib.error.URLError, OSError):
                time.sleep(0.1)
        raise RuntimeError("moto's S3 server did not start in 30 s")

    def _client(self, service: str, key_id: str, secret: str) -> Any:
        config = Config(
            region_name=REGION,
            s3={"addressing_style": "path"},
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        )
        return get_session().create_client(
            service,
            endpoint_url=self.endpoint,
            aws_access_key_id=key_id,
            aws_secret_access_key=secret,
            config=config,
        )

    def s3(self) -> Any:
        """A (blocking) S3 client with the server's own key, to look at what was stored."""
        return self._client("s3", self.access_key_id, self.secret_access_key)

    def bucket(self) -> str:
        """A new, empty bucket."""
        name = f"files-{secrets.token_hex(6)}"
        self.s3().create_bucket(
            Bucket=name, CreateBucketConfiguration={"LocationConstraint": REGION}
        )
        return name

    def settings(self, bucket: str, prefix: str = "agentsvc", **changes: Any) -> dict[str, Any]:
        """The `[storage]` section of an app keeping its files in `bucket`."""
        return {
            "url": f"s3://{bucket}/{prefix}",
            "endpoint_url": self.endpoint,
            "region": REGION,
            "access_key_id": self.access_key_id,
            "secret_access_key": self.secret_access_key,
            **changes,
        }

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        """Every key stored in the bucket under `prefix`."""
        pages = self.s3().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return [item["Key"] for page in pages for item in page.get("Contents", [])]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
