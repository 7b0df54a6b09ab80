"""What to judge next: re-judging order of an aggregation's tasks, and samplings of documents
from the collection's runs with Horvitz–Thompson estimates."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import PlainTextResponse, Response

from app.aggregations.deps import AggregationDep
from app.api.deps import Limit, Offset, SessionDep
from app.api.openapi import text_responses
from app.auth.deps import require_scope
from app.auth.idempotency import IdempotencyDep
from app.collections.deps import CollectionDep
from app.sampling import estimates as sampling_estimates
from app.sampling import export, service
from app.sampling import rounds as sampling_rounds
from app.sampling.deps import InputsDep, SamplingDep, get_next_inputs
from app.sampling.rejudging import next_tasks, next_tasks_tsv
from app.sampling.schemas import (
    Estimates,
    NextTasks,
    NextTasksQuery,
    RoundPublic,
    RoundRequest,
    RoundsPublic,
    SamplingCreate,
    SamplingPublic,
    SamplingsPublic,
    StoppingTarget,
)

aggregation_router = APIRouter(prefix="/aggregations", tags=["sampling"])
collection_router = APIRouter(prefix="/collections/{c}", tags=["sampling"])
router = APIRouter(prefix="/samplings", tags=["sampling"])


@aggregation_router.get("/{a}/next", response_model=NextTasks,
                        dependencies=[require_scope("read")],
                        responses=text_responses("text/tab-separated-values"))
def next_to_judge(request: Request, session: SessionDep, aggregation: AggregationDep,
                  query: Annotated[NextTasksQuery, Query()]) -> NextTasks | PlainTextResponse:
    """The ``n`` tasks whose next crowd label is expected to help most (``uncertainty``: highest
    posterior entropy; ``expected-change``: most likely to change the label; ``random``), only
    tasks with fewer than ``max_judgments`` judgments when given (answers "could not judge"
    count; tasks mostly answered so are left out unless ``keep_could_not_judge``); for each, up to
    ``annotators`` annotators not yet asked, best first by competence, each with the labels they
    have given (only those with at least ``min_annotator_judgments``: a competence from a handful
    of labels is a guess). ``assigned``: who each task goes to, in the list's order, at most
    ``per_annotator`` tasks each (the best annotators would otherwise get every task).
    ``format=tsv``: one task per line (rank, topic, doc, judgments, scores, the annotators to
    ask, the one assigned), for a crowd platform."""
    result = next_tasks(session, aggregation=aggregation, n=query.n, strategy=query.strategy,
                        max_judgments=query.max_judgments, n_annotators=query.annotators,
                        seed=query.seed, inputs=get_next_inputs(request),
                        min_annotator_judgments=query.min_annotator_judgments,
                        per_annotator=query.per_annotator,
                        keep_could_not_judge=query.keep_could_not_judge)
    if query.format == "tsv":
        return PlainTextResponse(next_tasks_tsv(result), media_type="text/tab-separated-values",
                                 headers={"content-disposition": 'attachment; filename='
                                          f'"aggregation-{aggregation.id}-next.tsv"'})
    return NextTasks.model_validate(result)


@collection_router.post("/samplings", status_code=201, response_model=SamplingPublic,
                        dependencies=[require_scope("admin")])
def create_sampling(session: SessionDep, idempotency: IdempotencyDep, collection: CollectionDep,
                    body: SamplingCreate, inputs: InputsDep) -> Any:
    """Create a sampling over the pool of the collection's runs; with an ``Idempotency-Key`` a
    retry returns the same sampling."""

    def work() -> SamplingPublic:
        sampling = service.create_sampling(session, collection=collection, spec=body,
                                           inputs=inputs)
        return SamplingPublic.model_validate(service.sampling_public(session, sampling))

    return idempotency.run(session, body=body.model_dump_json(), status_code=201, work=work)


@collection_router.get("/samplings", response_model=SamplingsPublic,
                       dependencies=[require_scope("read")])
def list_samplings(session: SessionDep, collection: CollectionDep,
                   limit: Limit = 100, offset: Offset = 0) -> SamplingsPublic:
    """Oldest first, a page of ``limit`` from ``offset``; ``count``: all of them (as the
    collection's aggregations are listed)."""
    rows = service.list_samplings(session, collection=collection, limit=limit, offset=offset)
    return SamplingsPublic.model_validate(
        {"data": rows, "count": service.count_samplings(session, collection=collection)})


@router.get("/{s}", response_model=SamplingPublic, dependencies=[require_scope("read")])
def get_sampling(session: SessionDep, sampling: SamplingDep) -> SamplingPublic:
    return SamplingPublic.model_validate(service.sampling_public(session, sampling))


@router.post("/{s}/rounds", status_code=201, response_model=RoundPublic,
             dependencies=[require_scope("admin")])
def draw_round(session: SessionDep, idempotency: IdempotencyDep, sampling: SamplingDep,
               params: Annotated[RoundRequest, Query()], inputs: InputsDep) -> Any:
    """Draw the next round: the (topic, doc) pairs to send to the crowd with their inclusion
    probabilities. 409 ``round_not_judged`` while the previous round has no judgments yet
    (``force=true`` draws anyway); ``short`` when the pool had fewer pairs left than the budget.
    ``stop``: the topics whose judged sample has reached ``target_recall`` by that rule
    (thesis chapter 3, as in the estimates' ``stopping``) take no draws, and the budget goes to
    the others (``stopped`` lists them); 409 ``target_reached`` when none is left. With an
    ``Idempotency-Key`` a retry returns the same round instead of drawing another."""

    def work() -> RoundPublic:
        return RoundPublic.model_validate(sampling_rounds.draw_round(
            session, sampling=sampling, force=params.force, stop_rule=params.stop,
            target_recall=params.target_recall, inputs=inputs))

    return idempotency.run(session, body=b"", status_code=201, work=work)


@router.get("/{s}/rounds", response_model=RoundsPublic, dependencies=[require_scope("read")],
            responses=text_responses("text/tab-separated-values"))
def list_rounds(session: SessionDep, sampling: SamplingDep, inputs: InputsDep,
                number: Annotated[int | None, Query(alias="round", ge=-1, description=(
                    "only this round (-1: the latest)"))] = None,
                format: Literal["json", "tsv"] = "json") -> Response:
    """The rounds with their pairs, each marked ``judged`` when the collection has a judgment
    for it now (and per round how many are, and how many are ``labelled``: judged with a value
    other than "could not judge", the pairs the estimates use). ``format=tsv``: one pair per
    line (round, topic, doc, inclusion, selection, source_run, judged 1/0), to send a round to
    a crowd platform."""
    rounds = sampling_rounds.list_rounds(session, sampling=sampling, number=number, inputs=inputs)
    if format == "tsv":
        name = f"sampling-{sampling.id}-" + ("rounds" if number is None else "latest-round"
                                             if number == -1 else f"round-{number}")
        return PlainTextResponse(
            export.rounds_tsv(rounds), media_type="text/tab-separated-values",
            headers={"content-disposition": f'attachment; filename="{name}.tsv"'})
    # Validated once and written as JSON here: tens of thousands of pairs, which FastAPI's
    # response_model would validate a second time before writing them.
    return Response(RoundsPublic.model_validate({"data": rounds, "count": len(rounds)})
                    .model_dump_json(), media_type="application/json")


@router.get("/{s}/estimates", response_model=Estimates, dependencies=[require_scope("read")])
def estimates(session: SessionDep, sampling: SamplingDep,
              query: Annotated[StoppingTarget, Query()], inputs: InputsDep) -> Estimates:
    """Horvitz–Thompson estimates per run and topic and overall (topic "all"): n_relevant,
    P@5/10/20, recall and AP, each with its variance and a normal 95 % interval; and
    ``stopping``: per topic and overall, the relevant documents found (r), the estimated
    number in the pool (R̂ ± sd), the estimated recall r / R̂, how many are still missing, and
    whether to stop at ``target_recall`` (optimistic: r / target ≥ R̂; conservative:
    r / target ≥ R̂ + sd; thesis chapter 3)."""
    return Estimates.model_validate(sampling_estimates.estimates(session, sampling=sampling,
                                                      target_recall=query.target_recall,
                                                      inputs=inputs))
