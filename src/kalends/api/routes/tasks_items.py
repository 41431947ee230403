"""Tasks and their checklists: the tree of a list, creation, detail, edits, moves,
trash, comments and history (what ``kalends task`` does).

Every write carries ``expectedRevision``, the task's revision the caller last saw; a
task changed meanwhile is refused with 409 ``revision-conflict``, never overwritten.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any, Literal
from urllib.parse import parse_qsl, urlencode
from uuid import UUID

from fastapi import APIRouter, Depends, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kalends.api.answers import JsonText
from kalends.api.dispatch import DispatchedRoute, inline_read
from kalends.api.errors import error_responses
from kalends.api.routes.passages import passage_tasks
from kalends.api.routes.tasks_models import (
    CommentOut,
    HistoryEventOut,
    Name,
    NewComment,
    NewTask,
    TagName,
    TaskDetailOut,
    TaskEdit,
    TaskMove,
    TaskOut,
    TaskPath,
    TaskRevision,
    TreeNodeOut,
    answer,
    atomic,
)
from kalends.api.security import ContextDep, PassageCaller, PrincipalDep, PrincipalOrPassageDep
from kalends.errors import InvalidInput
from kalends.tasks import TaskDetail
from kalends.tasks.keywords import TreeFilters
from kalends.tasks.series import SeriesView
from kalends.tasks.service import PAGE_CURSOR_LENGTH
from kalends.tasks.values import MAX_TREE_PAGE

router = APIRouter(prefix="/api", tags=["tasks"], route_class=DispatchedRoute)


def task_series_json(view: SeriesView, occurrence: int | None) -> dict[str, Any]:
    """The ``series`` of a task's detail: the series as seen from one of its tasks."""
    whole = view.to_json()
    keys = ("id", "rule", "time", "zone", "status", "revision", "next_date")
    return {
        **{k: whole[k] for k in keys},
        "occurrence": occurrence,
        "outstanding_ordinal": view.outstanding_ordinal,
    }


class TreeQuery(BaseModel):
    """The query of a list's trees, read in one validation (not one per parameter):
    filters keep matching tasks and their ancestors; ``limit`` asks for a page."""

    model_config = ConfigDict(extra="ignore")

    section: Name | None = Field(None, description="Only tasks in this section.")
    tag: TagName | None = Field(None, description="Only tasks with this tag.")
    status: Literal["open", "completed", "skipped"] | None = Field(
        None, description="Only tasks with this status (a skipped task is not completed)."
    )
    dueFrom: date | None = Field(None, description="Due on or after this day.")
    dueTo: date | None = Field(None, description="Due on or before this day.")
    planned: date | None = Field(None, description="Planned for this day.")
    trashed: bool = Field(False, description="Show the trash too.")
    limit: int | None = Field(
        None,
        ge=1,
        le=MAX_TREE_PAGE,
        description="A page of at most this many top-level tasks (the whole list without).",
    )
    after: str | None = Field(
        None,
        max_length=PAGE_CURSOR_LENGTH,
        description="The cursor of the page to read, from the previous page's `Link`.",
    )

    @property
    def filtered(self) -> bool:
        found = (self.section, self.tag, self.status, self.dueFrom, self.dueTo, self.planned)
        return any(v is not None for v in found)


def _query_parameters(model: type[BaseModel]) -> list[dict[str, Any]]:
    """The OpenAPI query parameters of ``model``'s fields, as the framework writes them."""
    properties = model.model_json_schema()["properties"]
    out: list[dict[str, Any]] = []
    for name, found in properties.items():
        schema = {k: v for k, v in found.items() if not (k == "default" and v is None)}
        parameter: dict[str, Any] = {"name": name, "in": "query", "required": False}
        if "description" in schema:
            parameter["description"] = schema["description"]
        parameter["schema"] = schema
        out.append(parameter)
    return out


async def tree_query(request: Request) -> TreeQuery:
    """The tree query from the request's query string; 422 naming the parameter."""
    try:
        return TreeQuery.model_validate(dict(request.query_params))
    except ValidationError as exc:
        raise RequestValidationError(
            [{**error, "loc": ("query", *error["loc"])} for error in exc.errors()]
        ) from None


def _short_tree_read(values: dict[str, Any]) -> bool:
    """An unfiltered page is a few statements over its own tasks: a short read."""
    query: TreeQuery = values["query"]
    return query.limit is not None and not query.filtered


@router.get(
    "/lists/{list_id}/tasks",
    summary="A list's checklist as trees; filters keep matching tasks and their ancestors",
    description=(
        "The whole list, or with `limit` a page of up to `limit` top-level tasks with "
        "their descendants. A page that is not the last has a `Link` header with "
        '`rel="next"`: the same request with `after` set to the next page\'s cursor.'
    ),
    response_model=list[TreeNodeOut],
    responses={
        200: {
            "headers": {
                "Link": {
                    "description": 'The next page, as `<URL>; rel="next"` (pages only).',
                    "schema": {"type": "string"},
                }
            }
        },
        **error_responses(401, 403, 404, 422),
    },
    openapi_extra={"parameters": _query_parameters(TreeQuery)},
)
@inline_read(when=_short_tree_read)
def task_tree(
    list_id: UUID,
    request: Request,
    ctx: ContextDep,
    who: PrincipalDep,
    query: Annotated[TreeQuery, Depends(tree_query)],
) -> JSONResponse:
    tasks = ctx.services.tasks
    filters: TreeFilters = {
        "section": query.section,
        "tag": query.tag,
        "status": query.status,
        "due_from": query.dueFrom,
        "due_to": query.dueTo,
        "planned": query.planned,
        "include_trashed": query.trashed,
    }
    if query.limit is None:
        if query.after is not None:
            raise InvalidInput("after: a page cursor needs a limit", field="after")
        if not query.filtered:
            return JsonText(tasks.tree_text(who.actor_id, list_id, include_trashed=query.trashed))
        return answer([n.to_json() for n in tasks.tree(who.actor_id, list_id, **filters)])
    if query.filtered:
        trees, next_after = tasks.tree_page_json(
            who.actor_id, list_id, limit=query.limit, after=query.after, **filters
        )
        reply = answer(trees)
    else:
        text, next_after = tasks.tree_page_text(
            who.actor_id,
            list_id,
            limit=query.limit,
            after=query.after,
            include_trashed=query.trashed,
        )
        reply = JsonText(text)
    if next_after is not None:
        reply.headers["Link"] = f'<{next_page_url(request, next_after)}>; rel="next"'
    return reply


def next_page_url(request: Request, cursor: str) -> str:
    """The request's URL with ``after`` (every one of it) replaced by ``cursor``, last:
    the URL the framework's ``include_query_params`` makes, without its parsing twice."""
    base = str(request.url).partition("?")[0]
    query = request.scope.get("query_string", b"").decode("latin-1")
    kept = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "after"]
    return f"{base}?{urlencode([*kept, ('after', cursor)])}"


@router.post(
    "/lists/{list_id}/tasks",
    summary="Add an open task at the end of its siblings, or before/after one",
    status_code=201,
    response_model=TaskOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def create_task(list_id: UUID, body: NewTask, ctx: ContextDep, who: PrincipalDep) -> JSONResponse:
    task = ctx.services.tasks.create(
        who.actor_id,
        list_id,
        body.title,
        description=body.description,
        parent=body.parent,
        section=body.section,
        tags=body.tags,
        before=body.before,
        after=body.after,
    )
    return answer(task.to_json(), 201)


@router.get(
    "/tasks/{task}",
    summary="A task: revision, schedule, comments, attachments and its series",
    response_model=TaskDetailOut,
    responses=error_responses(401, 403, 404, 422),
)
@inline_read()
def get_task(task: TaskPath, ctx: ContextDep, who: PrincipalDep) -> JSONResponse:
    def read() -> tuple[TaskDetail, SeriesView | None]:
        detail = ctx.services.tasks.get(who.actor_id, task)
        if detail.task.series_id is None:
            return detail, None
        return detail, ctx.services.series.get(who.actor_id, detail.task.id)

    detail, series = atomic(ctx, read, write=False)
    occurrence = detail.task.occurrence
    return answer(
        {
            **detail.to_json(),
            "series": task_series_json(series, occurrence) if series else None,
        }
    )


@router.get(
    "/tasks/{task}/checklist",
    summary="A task and its live checklist items as one tree",
    response_model=TreeNodeOut,
    responses=error_responses(401, 403, 404, 422),
)
def get_checklist(task: TaskPath, ctx: ContextDep, who: PrincipalDep) -> JSONResponse:
    return answer(ctx.services.tasks.checklist(who.actor_id, task).to_json())


@router.patch(
    "/tasks/{task}",
    summary="Change a task's title, description or tags, in one transaction",
    response_model=TaskOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def edit_task(task: TaskPath, body: TaskEdit, ctx: ContextDep, who: PrincipalDep) -> JSONResponse:
    if body.title is None and body.description is None and not body.addTags and not body.removeTags:
        raise InvalidInput(
            "body: say what to change: title, description, addTags or removeTags", field="body"
        )
    edited = ctx.services.changes.edit(
        who.actor_id,
        task,
        body.expectedRevision,
        title=body.title,
        description=body.description,
        add_tags=body.addTags,
        remove_tags=body.removeTags,
    )
    return answer(edited.to_json())


@router.post(
    "/tasks/{task}/move",
    summary="Move a task among its siblings, into a section, under another parent or to a list",
    response_model=TaskOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def move_task(task: TaskPath, body: TaskMove, ctx: ContextDep, who: PrincipalDep) -> JSONResponse:
    if body.section is not None and body.noSection:
        raise InvalidInput("section: give section or noSection, not both", field="section")
    if body.parent is not None and body.root:
        raise InvalidInput("parent: give parent or root, not both", field="parent")
    placed = (
        body.before is not None
        or body.after is not None
        or body.section is not None
        or body.noSection
    )
    reparented = body.parent is not None or body.root
    tasks = ctx.services.tasks
    if body.list is not None:
        if reparented or body.before is not None or body.after is not None or body.noSection:
            raise InvalidInput(
                "list: a task moves to the end of the other list; only section combines with it",
                field="list",
            )
        moved = tasks.move_to_list(
            who.actor_id, task, body.expectedRevision, body.list, section=body.section
        )
        return answer(moved.to_json())
    if not placed and not reparented:
        raise InvalidInput(
            "body: say where: before/after, section/noSection, parent/root or list", field="body"
        )
    moved = ctx.services.changes.relocate(
        who.actor_id,
        task,
        body.expectedRevision,
        parent=body.parent,
        root=body.root,
        before=body.before,
        after=body.after,
        section=body.section,
        clear_section=body.noSection,
    )
    return answer(moved.to_json())


@router.post(
    "/tasks/{task}/trash",
    summary="Put a task (and so its checklist) in the trash; its reminders are cancelled",
    response_model=TaskOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def trash_task(
    task: TaskPath, body: TaskRevision, ctx: ContextDep, who: PrincipalDep
) -> JSONResponse:
    return answer(ctx.services.tasks.trash(who.actor_id, task, body.expectedRevision).to_json())


@router.post(
    "/tasks/{task}/restore",
    summary="Take a task out of the trash; cancelled reminders are not replayed",
    response_model=TaskOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def restore_task(
    task: TaskPath, body: TaskRevision, ctx: ContextDep, who: PrincipalDep
) -> JSONResponse:
    return answer(ctx.services.tasks.restore(who.actor_id, task, body.expectedRevision).to_json())


@router.get(
    "/tasks/{task}/comments",
    summary="A task's comments, oldest first",
    response_model=list[CommentOut],
    responses=error_responses(401, 403, 404, 422),
)
def list_comments(task: TaskPath, ctx: ContextDep, who: PrincipalDep) -> JSONResponse:
    detail = ctx.services.tasks.get(who.actor_id, task)
    return answer([c.to_json() for c in detail.comments])


@router.post(
    "/tasks/{task}/comments",
    summary="Comment on a task (editors and owners); the task's revision does not change",
    description=(
        "A running passage may comment the items of its own checklist with its token "
        "(`Authorization: Passage <token>`); any other task is 403 `passage-scope`, a "
        "forged or foreign token 401 `invalid-passage-token`, a settled passage's 409 "
        "`passage-settled`, and nothing is written."
    ),
    status_code=201,
    response_model=CommentOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def add_comment(
    task: TaskPath, body: NewComment, ctx: ContextDep, who: PrincipalOrPassageDep
) -> JSONResponse:
    if isinstance(who, PassageCaller):
        made = passage_tasks(ctx).comment(who.token, task, body.body)
    else:
        made = ctx.services.tasks.comment(who.actor_id, task, body.body)
    return answer(made.to_json(), 201)


@router.get(
    "/tasks/{task}/history",
    summary="A task's append-only history, oldest first",
    response_model=list[HistoryEventOut],
    responses=error_responses(401, 403, 404, 422),
)
def task_history(task: TaskPath, ctx: ContextDep, who: PrincipalDep) -> JSONResponse:
    return answer([e.to_json() for e in ctx.services.tasks.history(who.actor_id, task)])
