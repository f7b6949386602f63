"""The emulator's three batch APIs: OpenAI Files + Batches, Anthropic Message Batches, Gemini
``batchGenerateContent`` and its ``batches/`` operations.

A job is answered line by line exactly as the synchronous endpoint would answer that body (the
emulator's own ``success``, so answers, served model and token counts are the same), after
``batch_processing_s``. ``batch_fail_rate`` makes a line fail with the API's 500 error and
``batch_expire_rate`` makes it expire unprocessed (the job then ends as expired where the API has
that state). ``line_counts`` counts every line received per (API, model, question), which is how a
test proves a cell was never paid for twice.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import orjson

from contam.harness.emulator.apis import BadCall, Canned, Dialect, json_reply
from contam.harness.emulator.dialects import DIALECTS

# The server's request record (contam.harness.emulator.server.RecordedRequest: method, path, headers,
# body, raw_body) and application; not imported, as the server imports this module.
RecordedRequest = Any

__all__ = ["BatchServer"]

_ids = itertools.count(1)


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class _Job:
    """One batch job: its lines (custom id, parsed body), when it was made, its results."""

    api: str
    job_id: str
    model: str
    lines: list[tuple[str, Any]]
    tag: str | None
    created: float
    extra: dict[str, Any] = field(default_factory=dict)  # the API's own fields (input_file_id ...)
    cancelled: float | None = None
    results: list[tuple[str, str, Any]] | None = None  # (custom id, ok|error|expired, payload)

    def ended(self, processing_s: float) -> bool:
        return self.cancelled is not None or time.time() >= self.created + processing_s

    def counts(self) -> Counter[str]:
        return Counter(kind for _, kind, _ in self.results or ())


class BatchServer:
    """Routes and answers the batch endpoints; returns None for any other request."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.jobs: dict[str, _Job] = {}
        self.files: dict[str, bytes] = {}
        self.uploads: dict[str, bytes] = {}  # Gemini resumable uploads in progress
        self.line_counts: Counter[tuple[str, str, str]] = Counter()
        self._routes: list[tuple[str, str, str, Callable[..., Canned]]] = [
            ("POST", "/v1/files", "", self._openai_upload),
            ("GET", "/v1/files/", "/content", self._openai_file),
            ("POST", "/v1/batches", "", self._openai_create),
            ("GET", "/v1/batches", "", self._list_of("openai")),
            ("POST", "/v1/batches/", "/cancel", self._cancel_of("openai")),
            ("GET", "/v1/batches/", "", self._get_of("openai")),
            ("POST", "/v1/messages/batches", "", self._anthropic_create),
            ("GET", "/v1/messages/batches", "", self._list_of("anthropic")),
            ("GET", "/v1/messages/batches/", "/results", self._anthropic_results),
            ("POST", "/v1/messages/batches/", "/cancel", self._cancel_of("anthropic")),
            ("GET", "/v1/messages/batches/", "", self._get_of("anthropic")),
            ("POST", "/v1beta/models/", ":batchGenerateContent", self._gemini_create),
            ("GET", "/v1beta/batches", "", self._list_of("gemini")),
            ("POST", "/v1beta/batches/", ":cancel", self._cancel_of("gemini")),
            ("GET", "/v1beta/batches/", "", self._get_of("gemini")),
            ("POST", "/upload/v1beta/files", "", self._gemini_upload),
            ("GET", "/download/v1beta/files/", ":download", self._gemini_download),
            ("GET", "/v1beta/files/", ":download", self._gemini_download),
        ]

    @property
    def settings(self) -> Any:
        return self.app.settings

    def respond(self, incoming: RecordedRequest) -> Canned | None:
        for method, prefix, suffix, handler in self._routes:
            path = incoming.path
            if incoming.method != method or not path.startswith(prefix) or not path.endswith(suffix):
                continue
            middle = path[len(prefix):len(path) - len(suffix)]
            if prefix.endswith("/") != bool(middle) or (middle and "/" in middle):
                continue
            return handler(incoming, middle)
        return None

    # -- creating jobs --------------------------------------------------------------------------

    def _new_job(self, api: str, model: str, lines: list[tuple[str, Any]], tag: str | None,
                 **extra: Any) -> _Job:
        prefix = {"openai": "batch_emu", "anthropic": "msgbatch_emu", "gemini": "batches/emu"}[api]
        job = _Job(api, f"{prefix}{next(_ids):010d}", model, lines, tag, time.time(), extra)
        job.extra.setdefault("headers", {})
        self.jobs[job.job_id] = job
        return job

    def _openai_upload(self, incoming: RecordedRequest, _: str) -> Canned:
        content = _multipart_file(incoming.headers.get("content-type", ""), incoming.raw_body)
        if content is None:
            return DIALECTS["openai"].error(400, "expected a multipart upload with a 'file' part")
        file_id = f"file-emu{next(_ids):010d}"
        self.files[file_id] = content
        return json_reply(200, {"id": file_id, "object": "file", "bytes": len(content),
                                "created_at": int(time.time()), "filename": "batch.jsonl",
                                "purpose": "batch", "status": "processed"})

    def _openai_file(self, incoming: RecordedRequest, file_id: str) -> Canned:
        if file_id not in self.files:
            return DIALECTS["openai"].error(404, f"No such File object: {file_id}")
        return Canned(200, self.files[file_id], content_type="application/octet-stream")

    def _openai_create(self, incoming: RecordedRequest, _: str) -> Canned:
        body = incoming.body if isinstance(incoming.body, dict) else {}
        content = self.files.get(str(body.get("input_file_id")))
        if content is None:
            return DIALECTS["openai"].error(400, "input_file_id does not name an uploaded file")
        items = [orjson.loads(raw) for raw in content.splitlines() if raw.strip()]
        lines = [(str(item.get("custom_id")), item.get("body")) for item in items]
        model = str((lines[0][1] or {}).get("model")) if lines else ""
        job = self._new_job("openai", model, lines, (body.get("metadata") or {}).get("contam_tag"),
                            input_file_id=body["input_file_id"], metadata=body.get("metadata"),
                            endpoint=body.get("endpoint"))
        return json_reply(200, self._openai_object(job))

    def _anthropic_create(self, incoming: RecordedRequest, _: str) -> Canned:
        requests = (incoming.body or {}).get("requests") if isinstance(incoming.body, dict) else None
        if not isinstance(requests, list) or not requests:
            return DIALECTS["anthropic"].error(400, "requests: field required")
        lines = [(str(r.get("custom_id")), r.get("params")) for r in requests]
        job = self._new_job("anthropic", str((lines[0][1] or {}).get("model")), lines, None,
                            host=incoming.headers.get("host"), headers=incoming.headers)
        return json_reply(200, self._anthropic_object(job))

    def _gemini_create(self, incoming: RecordedRequest, model: str) -> Canned:
        batch = (incoming.body or {}).get("batch") if isinstance(incoming.body, dict) else None
        source = (batch or {}).get("inputConfig") or {}
        if source.get("fileName") in self.files:  # a JSONL file of {"key", "request"} lines
            items = [orjson.loads(raw) for raw in self.files[source["fileName"]].splitlines() if raw.strip()]
            lines = [(str(item.get("key")), item.get("request")) for item in items]
        else:
            requests = (source.get("requests") or {}).get("requests") or []
            lines = [(str((r.get("metadata") or {}).get("key")), r.get("request")) for r in requests]
        if not lines:
            return DIALECTS["gemini"].error(400, "batch.inputConfig needs requests or a fileName")
        job = self._new_job("gemini", model, lines, batch.get("displayName"),
                            from_file="fileName" in source)
        return json_reply(200, self._gemini_object(job))

    def _gemini_upload(self, incoming: RecordedRequest, _: str) -> Canned:
        """The Files API's resumable upload: ``start`` hands out an upload URL, then ``upload``
        chunks follow, the last one with ``finalize``."""
        command = incoming.headers.get("x-goog-upload-command", "")
        if "start" in command:
            upload_id = str(next(_ids))
            self.uploads[upload_id] = b""
            url = (f"http://{incoming.headers.get('host')}/upload/v1beta/files?"
                   f"upload_id={upload_id}&upload_protocol=resumable")
            return Canned(200, b"{}", (("x-goog-upload-url", url), ("x-goog-upload-status", "active")))
        upload_id = incoming.query.get("upload_id", "")
        if upload_id not in self.uploads:
            return DIALECTS["gemini"].error(404, "no such upload")
        self.uploads[upload_id] += incoming.raw_body
        if "finalize" not in command:
            return Canned(200, b"", (("x-goog-upload-status", "active"),))
        name = self._stored([self.uploads.pop(upload_id)], prefix="files/emu")
        return json_reply(200, {"file": _gemini_file_object(name, len(self.files[name]))},
                          (("x-goog-upload-status", "final"),))

    def _gemini_download(self, incoming: RecordedRequest, file_id: str) -> Canned:
        content = self.files.get(f"files/{file_id}")
        if content is None:
            return DIALECTS["gemini"].error(404, f"files/{file_id} not found")
        return Canned(200, content, content_type="application/octet-stream")

    # -- reading, cancelling, listing ----------------------------------------------------------

    def _get_of(self, api: str) -> Callable[[RecordedRequest, str], Canned]:
        def get(incoming: RecordedRequest, job_id: str) -> Canned:
            job = self._job(api, job_id)
            return json_reply(200, self._object(job)) if job else self._missing(api, job_id)
        return get

    def _cancel_of(self, api: str) -> Callable[[RecordedRequest, str], Canned]:
        def cancel(incoming: RecordedRequest, job_id: str) -> Canned:
            job = self._job(api, job_id)
            if job is None:
                return self._missing(api, job_id)
            if not job.ended(self.settings.batch_processing_s):
                job.cancelled = time.time()
            return json_reply(200, {} if api == "gemini" else self._object(job))
        return cancel

    def _list_of(self, api: str) -> Callable[[RecordedRequest, str], Canned]:
        def listing(incoming: RecordedRequest, _: str) -> Canned:
            jobs = [self._object(j) for j in reversed(self.jobs.values()) if j.api == api]
            if api == "gemini":
                return json_reply(200, {"operations": jobs})
            first, last = (jobs[0]["id"], jobs[-1]["id"]) if jobs else (None, None)
            return json_reply(200, {"object": "list", "data": jobs, "first_id": first,
                                    "last_id": last, "has_more": False})
        return listing

    def _anthropic_results(self, incoming: RecordedRequest, job_id: str) -> Canned:
        job = self._job("anthropic", job_id)
        if job is None or not job.ended(self.settings.batch_processing_s):
            return self._missing("anthropic", job_id)
        lines = [orjson.dumps({"custom_id": cid, "result": _anthropic_result(kind, payload)})
                 for cid, kind, payload in self._results(job)]
        return Canned(200, b"\n".join(lines) + b"\n", content_type="application/binary")

    def _job(self, api: str, job_id: str) -> _Job | None:
        job = self.jobs.get(job_id if api != "gemini" else f"batches/{job_id}")
        return job if job is not None and job.api == api else None

    def _missing(self, api: str, job_id: str) -> Canned:
        return DIALECTS[api].error(404, f"batch {job_id} not found")

    def _object(self, job: _Job) -> dict[str, Any]:
        return {"openai": self._openai_object, "anthropic": self._anthropic_object,
                "gemini": self._gemini_object}[job.api](job)

    # -- answering the lines -------------------------------------------------------------------

    def _results(self, job: _Job) -> list[tuple[str, str, Any]]:
        """Each line answered once, when the job has ended: as the synchronous API would, or a
        500 (batch_fail_rate), or expired (batch_expire_rate, or not reached before a cancel)."""
        if job.results is None:
            dialect = DIALECTS[job.api]
            job.results = [self._answer(job, dialect, cid, body) for cid, body in job.lines]
        return job.results

    def _answer(self, job: _Job, dialect: Dialect, custom_id: str, body: Any) -> tuple[str, str, Any]:
        try:
            call = dialect.call_from(job.model if job.api == "gemini" else None,
                                     job.extra.get("headers") or {}, {}, body)
        except BadCall as exc:
            return custom_id, "error", (400, orjson.loads(dialect.error(400, str(exc)).body))
        self.line_counts[(call.api, call.model, call.question)] += 1
        draw = self.app.rng.random()
        if job.cancelled is not None or draw < self.settings.batch_expire_rate:
            return custom_id, "expired", None
        if draw < self.settings.batch_expire_rate + self.settings.batch_fail_rate:
            return custom_id, "error", (500, orjson.loads(dialect.error(500).body))
        canned = self.app.success(dialect, call)
        body = orjson.loads(canned.body)
        if canned.status == 200:
            return custom_id, "ok", body
        return custom_id, "error", (canned.status, body)

    def _progress(self, job: _Job) -> tuple[str, Counter[str]]:
        """("running" | "ended", counts of ok/error/expired lines so far)."""
        if not job.ended(self.settings.batch_processing_s):
            return "running", Counter()
        return "ended", job.counts() if job.results is not None else Counter(
            kind for _, kind, _ in self._results(job))

    # -- each API's job object -----------------------------------------------------------------

    def _openai_object(self, job: _Job) -> dict[str, Any]:
        phase, counts = self._progress(job)
        status = "in_progress" if phase == "running" else (
            "cancelled" if job.cancelled else "expired" if counts["expired"] else "completed")
        obj = {"id": job.job_id, "object": "batch", "endpoint": job.extra.get("endpoint"),
               "errors": None, "input_file_id": job.extra.get("input_file_id"),
               "completion_window": "24h", "status": status,
               "output_file_id": None, "error_file_id": None, "created_at": int(job.created),
               "in_progress_at": int(job.created), "expires_at": int(job.created) + 86400,
               "request_counts": {"total": len(job.lines), "completed": counts["ok"],
                                  "failed": counts["error"] + counts["expired"]},
               "metadata": job.extra.get("metadata"), "model": job.model}
        if phase == "ended":
            obj.update(self._openai_files(job))
            obj[{"completed": "completed_at", "expired": "expired_at",
                 "cancelled": "cancelled_at"}[status]] = int(time.time())
        return obj

    def _openai_files(self, job: _Job) -> dict[str, str | None]:
        if "files" not in job.extra:
            output, errors = [], []
            for cid, kind, payload in self._results(job):
                (output if kind != "expired" else errors).append(_openai_line(cid, kind, payload))
            job.extra["files"] = {key: self._stored(lines) for key, lines in
                                  (("output_file_id", output), ("error_file_id", errors))}
        return job.extra["files"]

    def _stored(self, lines: list[bytes], prefix: str = "file-emu") -> str | None:
        if not lines:
            return None
        file_id = f"{prefix}{next(_ids):010d}"
        self.files[file_id] = b"\n".join(lines) + b"\n"
        return file_id

    def _responses_file(self, job: _Job, responses: list[dict[str, Any]]) -> str | None:
        """A file-mode job's results: one ``{"key", "response" | "error"}`` line per request."""
        if "responses_file" not in job.extra:
            lines = [orjson.dumps({"key": r["metadata"]["key"],
                                   **{k: v for k, v in r.items() if k != "metadata"}}) for r in responses]
            job.extra["responses_file"] = self._stored(lines, prefix="files/emu")
        return job.extra["responses_file"]

    def _anthropic_object(self, job: _Job) -> dict[str, Any]:
        phase, counts = self._progress(job)
        ended = phase == "ended"
        base = f"http://{job.extra.get('host') or 'localhost'}"
        return {"id": job.job_id, "type": "message_batch",
                "processing_status": "ended" if ended else ("canceling" if job.cancelled else "in_progress"),
                "request_counts": {"processing": 0 if ended else len(job.lines),
                                   "succeeded": counts["ok"], "errored": counts["error"],
                                   "canceled": counts["expired"] if job.cancelled else 0,
                                   "expired": 0 if job.cancelled else counts["expired"]},
                "ended_at": _iso(time.time()) if ended else None, "created_at": _iso(job.created),
                "expires_at": _iso(job.created + 86400), "archived_at": None,
                "cancel_initiated_at": _iso(job.cancelled) if job.cancelled else None,
                "results_url": f"{base}/v1/messages/batches/{job.job_id}/results" if ended else None}

    def _gemini_object(self, job: _Job) -> dict[str, Any]:
        phase, counts = self._progress(job)
        state = "BATCH_STATE_RUNNING" if phase == "running" else (
            "BATCH_STATE_CANCELLED" if job.cancelled else "BATCH_STATE_SUCCEEDED")
        meta: dict[str, Any] = {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatch",
            "name": job.job_id, "model": f"models/{job.model}", "displayName": job.tag or "",
            "state": state, "createTime": _iso(job.created), "updateTime": _iso(time.time()),
            "batchStats": {"requestCount": str(len(job.lines)),
                           "successfulRequestCount": str(counts["ok"]),
                           "failedRequestCount": str(counts["error"] + counts["expired"]),
                           "pendingRequestCount": str(len(job.lines) if phase == "running" else 0)}}
        if phase == "ended":
            meta["endTime"] = _iso(time.time())
            responses = [_gemini_line(cid, kind, payload) for cid, kind, payload in self._results(job)]
            meta["output"] = ({"responsesFile": self._responses_file(job, responses)}
                              if job.extra.get("from_file") else
                              {"inlinedResponses": {"inlinedResponses": responses}})
        return {"name": job.job_id, "metadata": meta, "done": phase == "ended"}


def _gemini_file_object(name: str, size: int) -> dict[str, Any]:
    now = _iso(time.time())
    return {"name": name, "mimeType": "application/jsonl", "sizeBytes": str(size),
            "createTime": now, "updateTime": now, "expirationTime": _iso(time.time() + 172800),
            "sha256Hash": "", "state": "ACTIVE", "source": "UPLOADED"}


def _openai_line(custom_id: str, kind: str, payload: Any) -> bytes:
    line: dict[str, Any] = {"id": f"batch_req_emu{next(_ids):010d}", "custom_id": custom_id,
                            "response": None, "error": None}
    if kind == "ok":
        line["response"] = {"status_code": 200, "request_id": f"req_emu{next(_ids)}", "body": payload}
    elif kind == "error":
        status, body = payload
        line["response"] = {"status_code": status, "request_id": f"req_emu{next(_ids)}", "body": body}
    else:
        line["error"] = {"code": "batch_expired",
                         "message": "This request could not be executed before the completion window expired."}
    return orjson.dumps(line)


def _anthropic_result(kind: str, payload: Any) -> dict[str, Any]:
    if kind == "ok":
        return {"type": "succeeded", "message": payload}
    if kind == "error":
        return {"type": "errored", "error": payload[1]}
    return {"type": "expired"}


def _gemini_line(custom_id: str, kind: str, payload: Any) -> dict[str, Any]:
    if kind == "ok":
        return {"response": payload, "metadata": {"key": custom_id}}
    if kind == "error":
        error = payload[1].get("error") or {}
        return {"error": {"code": 13, "message": error.get("message", "")}, "metadata": {"key": custom_id}}
    return {"error": {"code": 4, "message": "The batch expired before this request ran."},
            "metadata": {"key": custom_id}}


def _multipart_file(content_type: str, raw: bytes) -> bytes | None:
    """The content of the part named ``file`` of a multipart/form-data body."""
    _, _, boundary = content_type.partition("boundary=")
    if not boundary:
        return None
    for part in raw.split(b"--" + boundary.strip('"').encode()):
        head, sep, content = part.partition(b"\r\n\r\n")
        if sep and b'name="file"' in head:
            return content.removesuffix(b"\r\n")
    return None
