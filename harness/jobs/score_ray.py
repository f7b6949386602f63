"""`contam score --ray [ADDRESS]`: BERTScore's shards scored by the actors of a Ray cluster.

Each actor holds the encoder, loaded once, on a GPU of its own (``num_gpus=1``; on a cluster
without GPUs, CPU actors of ``cpus_per_actor`` cores each) and scores whole shards
(:mod:`contam.metrics.bertscore_shards`) with the same function as the single-process pass, so the
numbers are the same, value for value. This process stays the store's single writer: it keeps
every actor two shards ahead and hands each shard's F1 values back as soon as it comes in
(``ray.wait``), so the pass appends them shard by shard and an interrupted pass resumes like any
other (what was written is not scored again). The precision is chosen for the actors' kind of
device (:meth:`RayShards.device_kind`), never for this machine's.

ADDRESS: ``local`` (the default: a Ray started for this pass on this machine), ``auto`` (the
cluster this machine joined with ``ray start``), ``host:6379`` or ``ray://host:10001``.
Ray is an optional extra (``pip install 'contam[ray]'``); every node needs contam installed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

from contam.harness.declare import flag_of
from contam.harness.errors import UserError, first_line
from contam.harness.jobs.options.score import LOCAL_RAY as LOCAL
from contam.harness.jobs.options.score import RayOptions, ScoreOptions
from contam.metrics.bertscore import Baseline, EncoderChoice
from contam.metrics.bertscore_shards import Pair, make_scorer, score_shard

__all__ = ["RayOptions", "RayShards", "ShardScorer", "INSTALL_HINT", "LOCAL"]

INSTALL_HINT = f"{flag_of(ScoreOptions, 'ray')} needs Ray, an optional extra: pip install 'contam[ray]'"
SHARDS_AHEAD_PER_ACTOR = 2  # one being scored, one waiting: an actor never idles on the driver


class ShardScorer:
    """What a Ray actor holds: the scorer, its model loaded on the actor's GPU (or its CPUs)."""

    def __init__(self, encoder: EncoderChoice, precision: str, token_budget: int | None,
                 idf_documents: Sequence[str] | None) -> None:
        # device None: the actor's GPU, else its CPU; precision and idf are the driver's (params)
        self.scorer = make_scorer(encoder, None, precision, token_budget, idf_documents)
        self.scorer.load()

    def device(self) -> str:
        return self.scorer.device

    def score(self, pairs: Sequence[Pair], baseline: Baseline | None) -> list[float]:
        return score_shard(self.scorer, pairs, baseline)

    def baseline(self, pairs: Sequence[Pair]) -> Baseline:
        return self.scorer.baseline_from_pairs(pairs)


class RayShards:
    """The shards of a pass on Ray actors: ``start``, then ``scored`` (as ``LocalShards``)."""

    def __init__(self, options: RayOptions, encoder: EncoderChoice, token_budget: int | None,
                 idf_documents: Sequence[str] | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise UserError(INSTALL_HINT) from None
        self.ray, self.options = ray, options
        self.encoder, self.token_budget = encoder, token_budget
        self.idf_documents = idf_documents
        self.precision: str | None = None  # the driver's params' precision, set before start
        self.actors: list[Any] = []
        self._connected_here = False

    def device_kind(self) -> str:
        """"cuda" where the cluster has GPUs (its actors score there), else "cpu"; connects."""
        self._connect()
        return "cuda" if self._gpus() else "cpu"

    def start(self) -> None:
        """Connect, start the actors and wait until every one has loaded the model."""
        self._connect()
        self.actors = self._spawn()
        self._get([actor.device.remote() for actor in self.actors])

    def baseline_from_pairs(self, pairs: Sequence[Pair]) -> Baseline:
        return self._get(self.actors[0].baseline.remote(list(pairs)))

    def scored(self, pairs: Sequence[Pair], shards: Sequence[list[int]],
               baseline: Baseline | None) -> Iterator[tuple[list[int], list[float]]]:
        """(shard, its F1 values) for every shard, in the order they come back."""
        todo, pending = iter(shards), {}
        for actor in self.actors * SHARDS_AHEAD_PER_ACTOR:
            self._submit(actor, todo, pairs, baseline, pending)
        while pending:
            [done], _ = self.ray.wait(list(pending), num_returns=1)
            actor, shard = pending.pop(done)
            values = self._get(done)
            self._submit(actor, todo, pairs, baseline, pending)
            yield shard, values

    def _submit(self, actor: Any, todo: Iterator[list[int]], pairs: Sequence[Pair],
                baseline: Baseline | None, pending: dict) -> None:
        shard = next(todo, None)
        if shard is not None:
            pending[actor.score.remote([pairs[i] for i in shard], baseline)] = (actor, shard)

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)
        self.actors = []
        if self._connected_here:
            self.ray.shutdown()

    def _connect(self) -> None:
        if self.ray.is_initialized():
            return  # a caller's Ray (a notebook, a test) is used as it is
        address = self.options.address  # "local": Ray's own word for a new Ray of this machine
        dashboard = {"include_dashboard": False} if address == LOCAL else {}
        try:
            self.ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False,
                          **dashboard)
        except (ConnectionError, TimeoutError, RuntimeError, ValueError) as exc:
            raise UserError(f"{flag_of(ScoreOptions, 'ray')} {address}: cannot reach the Ray cluster "
                            f"({first_line(exc)})") from None
        self._connected_here = True

    def _spawn(self) -> list[Any]:
        """One actor per GPU of the cluster; without GPUs, one per ``cpus_per_actor`` cores."""
        gpus, cpus = self._gpus(), max(1, int(self.ray.cluster_resources().get("CPU", 1)))
        if gpus:
            actor_class, count = self.ray.remote(num_gpus=1)(ShardScorer), gpus
        else:
            per_actor = min(self.options.cpus_per_actor, cpus)
            actor_class, count = self.ray.remote(num_cpus=per_actor)(ShardScorer), cpus // per_actor
        return [actor_class.remote(self.encoder, self.precision, self.token_budget,
                                   self.idf_documents) for _ in range(count)]

    def _gpus(self) -> int:
        return int(self.ray.cluster_resources().get("GPU", 0))

    def _get(self, refs: Any) -> Any:
        """ray.get, an actor's failure (a model that cannot load...) as one line."""
        try:
            return self.ray.get(refs)
        except self.ray.exceptions.RayTaskError as exc:
            cause = exc.cause
            raise (cause if isinstance(cause, UserError) else
                   UserError(f"a Ray actor failed: {first_line(cause)}")) from None
        except self.ray.exceptions.RayError as exc:
            raise UserError(f"a Ray actor failed: {first_line(exc)}") from None
