"""Files in an S3-compatible store (`[storage] url = "s3://bucket/prefix"`): AWS S3, MinIO,
SeaweedFS, Ceph, Garage, R2... through aiobotocore, AWS's own client made asynchronous.

Uploads go up as they arrive: a file smaller than one part is sent with one PUT, a larger
one as a multipart upload whose parts are sent as they fill (PART_BYTES, S3's smallest part
size), so one upload under way holds at most about one part in memory; a failed upload is
aborted. Downloads are read from the response in READ_CHUNK pieces.

Checksums are sent only where the S3 API requires them (`when_required`): botocore's newer
default (a CRC32 trailer on every upload, in aws-chunked encoding) is refused by many
S3-compatible stores. Every failure is told in words to the operator's log (the endpoint,
the bucket, what the store said) and as `StorageUnavailable` to the caller.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from aiobotocore.session import get_session
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    NoCredentialsError,
    PartialCredentialsError,
)
from botocore.exceptions import (
    ConnectionError as BotoConnectionError,
)

from agentsvc.config import StorageSettings
from agentsvc.storage import READ_CHUNK, FileMissing, Listed, StorageError, check_key, unavailable

PART_BYTES = 5 * 2**20  # S3's smallest part: every part but the last must be at least this
DELETE_BATCH = 1000  # keys per DeleteObjects request (S3's maximum)
_MISSING = {"NoSuchKey", "404", "NotFound"}
# What the client raises when the store cannot be used (botocore's own, and the socket's).
_FAILURES = (BotoCoreError, ClientError, OSError)


def _code(exc: ClientError) -> tuple[str, int]:
    error = exc.response.get("Error", {})
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
    return str(error.get("Code", status)), int(status or 0)


class _PartWriter:
    """Collects what it is given into parts and sends each as it fills."""

    def __init__(self, store: S3Store, key: str):
        self._store = store
        self._key = key
        # The part being filled, as a file the client hashes and sends a piece at a time
        # (bytes given whole were copied again by the client and by its HTTP layer).
        self._buffer = io.BytesIO()
        self._upload_id: str | None = None
        self._parts: list[dict[str, Any]] = []

    async def write(self, chunk: bytes) -> None:
        self._buffer.write(chunk)
        if self._buffer.tell() >= PART_BYTES:
            part, self._buffer = self._buffer, io.BytesIO()
            try:
                await self._send_part(part)
            except _FAILURES as exc:
                raise self._store.failed(exc, f"writing {self._key}") from None

    async def _send_part(self, part: io.BytesIO) -> None:
        part.seek(0)
        client, bucket = self._store.client, self._store.bucket
        if self._upload_id is None:
            begun = await client.create_multipart_upload(Bucket=bucket, Key=self._key)
            self._upload_id = begun["UploadId"]
        number = len(self._parts) + 1
        sent = await client.upload_part(
            Bucket=bucket,
            Key=self._key,
            UploadId=self._upload_id,
            PartNumber=number,
            Body=part,
        )
        self._parts.append({"ETag": sent["ETag"], "PartNumber": number})

    async def finish(self) -> None:
        try:
            await self._finish()
        except _FAILURES as exc:
            raise self._store.failed(exc, f"writing {self._key}") from None

    async def _finish(self) -> None:
        client, bucket = self._store.client, self._store.bucket
        if self._upload_id is None:
            self._buffer.seek(0)
            await client.put_object(Bucket=bucket, Key=self._key, Body=self._buffer)
            return
        if self._buffer.tell():
            await self._send_part(self._buffer)
        self._buffer = io.BytesIO()
        await client.complete_multipart_upload(
            Bucket=bucket,
            Key=self._key,
            UploadId=self._upload_id,
            MultipartUpload={"Parts": self._parts},
        )

    async def abort(self) -> None:
        self._buffer = io.BytesIO()
        if self._upload_id is not None:
            client = self._store.client
            await client.abort_multipart_upload(
                Bucket=self._store.bucket, Key=self._key, UploadId=self._upload_id
            )


class _BodyReading:
    def __init__(self, body: Any, size: int, store: S3Store):
        self._body = body
        self.size = size
        self._store = store

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            async for piece in self._body.iter_chunks(READ_CHUNK):
                yield piece
        except _FAILURES as exc:
            raise self._store.failed(exc, "reading a file") from None
        finally:
            await self.close()

    async def close(self) -> None:
        self._body.close()


class S3Store:
    """Files as objects under a prefix of one bucket."""

    kind = "s3"

    def __init__(self, settings: StorageSettings):
        self._settings = settings
        self.bucket = settings.bucket
        self._prefix = settings.prefix
        self.label = f"s3://{self.bucket}/{self._prefix}"
        self.endpoint = settings.endpoint_url or f"AWS S3 ({settings.region or 'us-east-1'})"
        self._stack = AsyncExitStack()
        self._client: Any = None
        self._opening = asyncio.Lock()

    @property
    def client(self) -> Any:
        if self._client is None:
            raise RuntimeError("the S3 store is used before check() opened it")
        return self._client

    def _config(self) -> Config:
        settings = self._settings
        style = settings.addressing_style
        if style == "auto":
            style = "path" if settings.endpoint_url else "virtual"
        return Config(
            region_name=settings.region or "us-east-1",
            signature_version="s3v4",
            s3={"addressing_style": style},
            connect_timeout=settings.timeout_seconds,
            read_timeout=settings.timeout_seconds,
            retries={"max_attempts": 3, "mode": "standard"},
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        )

    async def _open(self) -> None:
        async with self._opening:
            if self._client is not None:
                return
            settings = self._settings
            keys: dict[str, Any] = {}
            if settings.access_key_id:  # else AWS's own search (profile, instance role)
                keys = {
                    "aws_access_key_id": settings.access_key_id,
                    "aws_secret_access_key": settings.secret_access_key,
                    "aws_session_token": settings.session_token or None,
                }
            creating = get_session().create_client(
                "s3", endpoint_url=settings.endpoint_url or None, config=self._config(), **keys
            )
            self._client = await self._stack.enter_async_context(creating)

    def _key(self, key: str) -> str:
        return self._prefix + check_key(key)

    def reason(self, exc: BaseException) -> str:
        """What went wrong, in words for the operator."""
        key_id = self._settings.access_key_id or "(found by AWS's own search)"
        if isinstance(exc, NoCredentialsError | PartialCredentialsError):
            return (
                "no credentials: set [storage] access_key_id and secret_access_key (or"
                " AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"
            )
        if isinstance(exc, BotoConnectionError | OSError):
            return f"cannot reach {self.endpoint} (no answer, or the connection was refused)"
        if isinstance(exc, ClientError):
            code, status = _code(exc)
            if code == "NoSuchBucket":
                return f"bucket {self.bucket!r} does not exist at {self.endpoint}; create it"
            if code == "InvalidAccessKeyId":
                return f"{self.endpoint} does not know the access key id {key_id}"
            if code == "SignatureDoesNotMatch":
                return f"the secret access key does not match the access key id {key_id}"
            if code in ("AccessDenied", "403") or status == 403:
                return (
                    f"access denied to bucket {self.bucket!r} for the access key id {key_id}"
                    " (it needs to list, read, write and delete objects there)"
                )
            return f"{self.endpoint} answered HTTP {status} ({code})"
        return f"{type(exc).__name__} from the S3 client"

    def failed(self, exc: BaseException, doing: str) -> Exception:
        return unavailable(self.label, f"{doing}: {self.reason(exc)}")

    async def check(self) -> None:
        try:
            await self._open()
            await self.client.list_objects_v2(Bucket=self.bucket, Prefix=self._prefix, MaxKeys=1)
        except _FAILURES as exc:
            raise StorageError(f"cannot use {self.label}: {self.reason(exc)}") from None

    @asynccontextmanager
    async def writer(self, key: str) -> AsyncIterator[_PartWriter]:
        out = _PartWriter(self, self._key(key))
        try:
            yield out
            await out.finish()
        except BaseException:
            await asyncio.shield(self._abort(out))
            raise

    async def _abort(self, out: _PartWriter) -> None:
        try:
            await out.abort()
        except _FAILURES as exc:
            # The store's own lifecycle rules clean up what an abort could not.
            self.failed(exc, "abandoning a failed upload")

    async def open(self, key: str) -> _BodyReading:
        try:
            found = await self.client.get_object(Bucket=self.bucket, Key=self._key(key))
        except ClientError as exc:
            if _code(exc)[0] in _MISSING:
                raise FileMissing(key) from None
            raise self.failed(exc, f"reading {key}") from None
        except (BotoCoreError, OSError) as exc:
            raise self.failed(exc, f"reading {key}") from None
        return _BodyReading(found["Body"], int(found["ContentLength"]), self)

    async def delete(self, key: str) -> None:
        try:
            await self.client.delete_object(Bucket=self.bucket, Key=self._key(key))
        except _FAILURES as exc:
            raise self.failed(exc, f"deleting {key}") from None

    async def delete_folder(self, folder: str) -> None:
        keys = [self._prefix + f.key async for f in self.listing(check_key(folder) + "/")]
        try:
            for i in range(0, len(keys), DELETE_BATCH):
                batch = [{"Key": k} for k in keys[i : i + DELETE_BATCH]]
                await self.client.delete_objects(
                    Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True}
                )
        except _FAILURES as exc:
            raise self.failed(exc, f"deleting {folder}/") from None

    async def exists(self, key: str) -> bool:
        try:
            await self.client.head_object(Bucket=self.bucket, Key=self._key(key))
        except ClientError as exc:
            if _code(exc)[0] in _MISSING:
                return False
            raise self.failed(exc, f"looking for {key}") from None
        except (BotoCoreError, OSError) as exc:
            raise self.failed(exc, f"looking for {key}") from None
        return True

    async def listing(self, prefix: str) -> AsyncIterator[Listed]:
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self._prefix + prefix
        )
        try:
            async for page in pages:
                for item in page.get("Contents", []):
                    key = item["Key"][len(self._prefix) :]
                    yield Listed(key, int(item["Size"]), item["LastModified"].timestamp())
        except _FAILURES as exc:
            raise self.failed(exc, f"listing {prefix or 'the files'}") from None

    async def close(self) -> None:
        await self._stack.aclose()
        self._client = None
