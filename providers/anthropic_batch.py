"""Anthropic's Message Batches: ``POST /v1/messages/batches`` with ``requests: [{custom_id, params}]``.

``params`` is the synchronous request's bytes. A job holds at most 100,000 requests and 256 MB.
The API has no metadata or display name: a job is found again by its id (written to the store
the moment it is returned) or, after a kill in that instant, by the custom ids of its results
(see ``contam.harness.engine.batch_lane``). Results are a JSONL file at ``results_url`` once the job has ended.
"""

from __future__ import annotations

from typing import Any

import orjson

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

__all__ = ["AnthropicBatch"]

# The error types of the Messages API and the status each is sent with synchronously.
_ERROR_STATUS = {"invalid_request_error": 400, "authentication_error": 401,
                 "permission_error": 403, "not_found_error": 404, "request_too_large": 413,
                 "rate_limit_error": 429, "api_error": 500, "overloaded_error": 529}


class AnthropicBatch(BatchProtocol):
    limits = JobLimits(max_requests=100_000, max_bytes=256_000_000)
    tags_jobs = False  # a message batch has no metadata field for contam's tag

    @property
    def _batches(self) -> str:
        return f"{self.provider.base_url}/v1/messages/batches"

    def request_json(self, lines: list[BatchLine]) -> bytes:
        return orjson.dumps({"requests": [
            {"custom_id": line.custom_id, "params": orjson.Fragment(line.body)} for line in lines]})

    async def submit(self, lines: list[BatchLine], tag: str) -> JobState:
        return self._state(await self.call("POST", self._batches,
                                           orjson.Fragment(self.request_json(lines))))

    async def poll(self, job_id: str) -> JobState:
        return self._state(await self.call("GET", f"{self._batches}/{job_id}"))

    async def cancel(self, job_id: str) -> JobState:
        return self._state(await self.call("POST", f"{self._batches}/{job_id}/cancel"))

    async def list_jobs(self) -> list[JobState]:
        return await self.list_pages(self._batches, "after_id")

    async def results(self, job: JobState) -> list[LineResult]:
        url = (job.raw or {}).get("results_url")
        if not url:
            return []
        content = await self.download(url, {"accept": "application/binary"})
        return [self._line(item) for item in jsonl(content)]

    def _line(self, item: dict[str, Any]) -> LineResult:
        custom_id, result = str(item.get("custom_id")), item.get("result") or {}
        kind = result.get("type")
        if kind == "succeeded":
            return self.reply(custom_id, result.get("message"))
        if kind == "errored":
            body = result.get("error") or {}
            error_type = (body.get("error") or {}).get("type", "api_error")
            return self.failure(custom_id, _ERROR_STATUS.get(error_type, 500), body)
        message = f"{self.label}: request {kind or 'without a result'}"
        return LineResult(custom_id, error=CancelledLine(message) if kind == "canceled"
                          else ExpiredLine(message))

    def _state(self, body: dict[str, Any]) -> JobState:
        counts = body.get("request_counts") or {}
        total = sum(v for v in counts.values() if isinstance(v, int)) if counts else None
        failed = sum(counts.get(k, 0) for k in ("errored", "canceled", "expired"))
        return JobState(job_id=str(body["id"]), status=str(body.get("processing_status")),
                        ended=body.get("processing_status") == "ended", total=total,
                        succeeded=counts.get("succeeded"), failed=failed, raw=body)
