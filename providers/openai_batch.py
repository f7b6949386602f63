"""OpenAI's Batch API: a JSONL file uploaded with ``purpose=batch``, then ``POST /batches``.

Each line is ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}`` with the
synchronous request's bytes as ``body``. A job holds at most 50,000 requests and 200 MB; it is
tagged through ``metadata``. Results are two files: the output (one line per answered request,
with its status and body) and the errors (expired or refused requests).
"""

from __future__ import annotations

from typing import Any

import orjson

from contam.providers.base import Fatal
from contam.providers.batch import (
    BatchLine,
    BatchProtocol,
    CancelledLine,
    ExpiredLine,
    JobLimits,
    JobState,
    LineResult,
    jsonl,
)
from contam.providers.transport import http_failures

__all__ = ["OpenAIBatch", "TAG_KEY"]

TAG_KEY = "contam_tag"
_ENDED = {"completed", "failed", "expired", "cancelled"}


class OpenAIBatch(BatchProtocol):
    limits = JobLimits(max_requests=50_000, max_bytes=200_000_000)

    def jsonl_file(self, lines: list[BatchLine]) -> bytes:
        return b"".join(orjson.dumps({
            "custom_id": line.custom_id, "method": "POST", "url": "/v1/chat/completions",
            "body": orjson.Fragment(line.body)}) + b"\n" for line in lines)

    async def submit(self, lines: list[BatchLine], tag: str) -> JobState:
        file_id = await self._upload(self.jsonl_file(lines))
        body = await self.call("POST", f"{self.provider.base_url}/batches", {
            "input_file_id": file_id, "endpoint": "/v1/chat/completions",
            "completion_window": "24h", "metadata": {TAG_KEY: tag}})
        return self._state(body)

    async def _upload(self, content: bytes) -> str:
        url = f"{self.provider.base_url}/files"
        with http_failures(self.label, url, self.timeout):
            response = await self.client.post(
                url, headers=self.provider.headers(), data={"purpose": "batch"},
                files={"file": ("contam-batch.jsonl", content, "application/jsonl")},
                timeout=self.timeout)
        return str(self.decoded(response)["id"])

    async def poll(self, job_id: str) -> JobState:
        return self._state(await self.call("GET", f"{self.provider.base_url}/batches/{job_id}"))

    async def cancel(self, job_id: str) -> JobState:
        return self._state(await self.call("POST", f"{self.provider.base_url}/batches/{job_id}/cancel"))

    async def list_jobs(self) -> list[JobState]:
        return await self.list_pages(f"{self.provider.base_url}/batches", "after")

    async def results(self, job: JobState) -> list[LineResult]:
        raw = job.raw or {}
        if job.status == "failed":
            raise Fatal(f"{self.label}: batch {job.job_id} failed: {job.error}")
        lines: list[LineResult] = []
        for key in ("output_file_id", "error_file_id"):
            if raw.get(key):
                content = await self.download(f"{self.provider.base_url}/files/{raw[key]}/content")
                lines += [self._line(item) for item in jsonl(content)]
        return lines

    def _line(self, item: dict[str, Any]) -> LineResult:
        custom_id = str(item.get("custom_id"))
        response = item.get("response") or {}
        status = response.get("status_code")
        if status == 200:
            return self.reply(custom_id, response.get("body"))
        if status:
            return self.failure(custom_id, int(status), response.get("body"))
        error = item.get("error") or {}
        code = str(error.get("code") or "")
        message = f"{self.label}: {code}: {error.get('message') or 'no message'}"
        return LineResult(custom_id, error=CancelledLine(message) if "cancel" in code
                          else ExpiredLine(message))

    def _state(self, body: dict[str, Any]) -> JobState:
        counts = body.get("request_counts") or {}
        errors = ((body.get("errors") or {}).get("data") or [{}])
        return JobState(job_id=str(body["id"]), status=str(body.get("status")),
                        ended=body.get("status") in _ENDED, total=counts.get("total"),
                        succeeded=counts.get("completed"), failed=counts.get("failed"),
                        tag=(body.get("metadata") or {}).get(TAG_KEY),
                        error=errors[0].get("message"), raw=body)
