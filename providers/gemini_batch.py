"""Gemini's Batch Mode: ``POST /v1beta/models/{model}:batchGenerateContent`` with inline requests.

Each inline request is ``{"request": <the synchronous body>, "metadata": {"key": custom_id}}``; the
job is a long-running operation (``batches/{id}``) whose ``metadata.displayName`` carries the tag
and whose ``metadata.output.inlinedResponses`` (or ``response``) holds the results. Inline requests
are limited to about 20 MB per job: a larger job's requests travel as a JSONL file of
``{"key", "request"}`` lines, uploaded through the Files API's resumable protocol
(``inputConfig.fileName``), and its results come back as a file (``responsesFile``).
"""

from __future__ import annotations

from typing import Any

import orjson

from contam.providers.base import Fatal, Transient
from contam.providers.batch import (
    BatchLine,
    BatchProtocol,
    ExpiredLine,
    JobLimits,
    JobState,
    LineResult,
    jsonl,
)
from contam.providers.transport import http_failures

__all__ = ["GeminiBatch"]

_ENDED = {"BATCH_STATE_SUCCEEDED", "BATCH_STATE_FAILED", "BATCH_STATE_CANCELLED",
          "BATCH_STATE_EXPIRED"}
# google.rpc.Code -> the HTTP status the synchronous API sends with it
_RPC_STATUS = {3: 400, 5: 404, 7: 403, 8: 429, 9: 400, 13: 500, 14: 503, 16: 401, 4: 504}


class GeminiBatch(BatchProtocol):
    limits = JobLimits(max_requests=100_000, max_bytes=2_000_000_000)  # an uploaded file: 2 GB
    inline_max_bytes = 20_000_000  # above this, the requests go as an uploaded file

    def file_jsonl(self, lines: list[BatchLine]) -> bytes:
        return b"".join(orjson.dumps({"key": line.custom_id, "request": orjson.Fragment(line.body)})
                        + b"\n" for line in lines)

    def request_json(self, lines: list[BatchLine], tag: str) -> bytes:
        requests = [{"request": orjson.Fragment(line.body), "metadata": {"key": line.custom_id}}
                    for line in lines]
        return orjson.dumps({"batch": {"displayName": tag,
                                       "inputConfig": {"requests": {"requests": requests}}}})

    async def submit(self, lines: list[BatchLine], tag: str) -> JobState:
        model = self.provider.served_model_id()
        url = f"{self.provider.base_url}/v1beta/models/{model}:batchGenerateContent"
        size = sum(line.size(self.line_overhead) for line in lines)
        if size <= self.inline_max_bytes:
            body = self.request_json(lines, tag)
        else:
            file_name = await self._upload(self.file_jsonl(lines), tag)
            body = orjson.dumps({"batch": {"displayName": tag, "inputConfig": {"fileName": file_name}}})
        return self._state(await self.call("POST", url, orjson.Fragment(body)))

    async def _upload(self, content: bytes, tag: str) -> str:
        """The Files API's resumable upload in one chunk; the file's name (``files/...``)."""
        url = f"{self.provider.base_url}/upload/v1beta/files"
        start = {**self.provider.headers(), "x-goog-upload-protocol": "resumable",
                 "x-goog-upload-command": "start",
                 "x-goog-upload-header-content-length": str(len(content)),
                 "x-goog-upload-header-content-type": "application/jsonl"}
        with http_failures(self.label, url, self.timeout):
            started = await self.client.post(url, headers=start, timeout=self.timeout,
                                             json={"file": {"displayName": tag}})
            self.decoded(started)
            upload_url = started.headers.get("x-goog-upload-url")
            if not upload_url:
                raise Transient(f"{self.label}: the Files API gave no upload URL")
            done = await self.client.post(upload_url, content=content, timeout=self.timeout, headers={
                **self.provider.headers(), "x-goog-upload-command": "upload, finalize",
                "x-goog-upload-offset": "0"})
        return str(self.decoded(done)["file"]["name"])

    async def poll(self, job_id: str) -> JobState:
        return self._state(await self.call("GET", f"{self.provider.base_url}/v1beta/{job_id}"))

    async def cancel(self, job_id: str) -> JobState:
        await self.call("POST", f"{self.provider.base_url}/v1beta/{job_id}:cancel")
        return await self.poll(job_id)

    async def list_jobs(self) -> list[JobState]:
        jobs, token = [], None
        while True:
            query = f"?pageSize=100&pageToken={token}" if token else "?pageSize=100"
            page = await self.call("GET", f"{self.provider.base_url}/v1beta/batches{query}")
            jobs += [self._state(item) for item in page.get("operations") or []]
            token = page.get("nextPageToken")
            if not token:
                return jobs

    async def results(self, job: JobState) -> list[LineResult]:
        raw = job.raw or {}
        if job.status == "BATCH_STATE_FAILED":
            raise Fatal(f"{self.label}: batch {job.job_id} failed: {job.error}")
        output = raw.get("response") or (raw.get("metadata") or {}).get("output") or {}
        if output.get("responsesFile"):
            url = f"{self.provider.base_url}/download/v1beta/{output['responsesFile']}:download?alt=media"
            return [self._line(item) for item in jsonl(await self.download(url))]
        items = (output.get("inlinedResponses") or {}).get("inlinedResponses") or []
        return [self._line(item) for item in items]

    def _line(self, item: dict[str, Any]) -> LineResult:
        # inline results echo the request's metadata; file results carry the line's key
        custom_id = str(item.get("key") or (item.get("metadata") or {}).get("key"))
        if "response" in item:
            return self.reply(custom_id, item["response"])
        error = item.get("error") or {}
        status = _RPC_STATUS.get(error.get("code"), 500)
        if error.get("code") == 4:  # DEADLINE_EXCEEDED: the job expired before this one ran
            return LineResult(custom_id, error=ExpiredLine(f"{self.label}: {error.get('message')}"))
        return self.failure(custom_id, status, {"error": {**error, "code": status}})

    def _state(self, body: dict[str, Any]) -> JobState:
        meta = body.get("metadata") or {}
        stats = meta.get("batchStats") or {}
        state = str(meta.get("state") or "")
        return JobState(job_id=str(body.get("name") or meta.get("name")), status=state,
                        ended=state in _ENDED or bool(body.get("done")),
                        total=_int(stats.get("requestCount")),
                        succeeded=_int(stats.get("successfulRequestCount")),
                        failed=_int(stats.get("failedRequestCount")),
                        tag=meta.get("displayName"),
                        error=(body.get("error") or {}).get("message"), raw=body)


def _int(value: Any) -> int | None:
    """batchStats counts are int64, which protobuf JSON writes as strings."""
    return None if value is None else int(value)
