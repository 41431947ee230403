"""Pages of a list's trees over HTTP: ``GET /api/lists/{id}/tasks?limit=`` answers a page
and, unless it is the last, a ``Link: <URL>; rel="next"`` header to the same request with
``after`` set; following the links yields the whole list as the unpaged read does."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit
from uuid import UUID, uuid4

import pytest
from starlette.requests import Request

from api.conftest import ApiWorld
from api.test_tasks_support import Reply, invalid, new_task, ok, refused
from kalends.api.routes.tasks_items import next_page_url
from kalends.api.routes.tasks_models import TreeNodeOut
from kalends.tasks import Task, parse_schedule
from kalends.tasks.service import PAGE_CURSOR_LENGTH
from kalends.tasks.values import MAX_TREE_PAGE

NEXT = re.compile(r'<([^<>]+)>; rel="next"')
# Far more pages than any list of these tests needs: links that go on are a bug.
MAX_PAGES = 100

Page = list[dict[str, Any]]


def tasks_url(list_id: UUID, **query: Any) -> str:
    url = f"/api/lists/{list_id}/tasks"
    return f"{url}?{urlencode(query)}" if query else url


def next_url(reply: Reply) -> str | None:
    """The URL of the ``rel="next"`` link, or ``None`` without a ``Link`` header."""
    header = reply.headers.get("link")
    if header is None:
        return None
    found = NEXT.fullmatch(header)
    assert found is not None, header
    return found.group(1)


def query_of(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query, keep_blank_values=True)


def follow(api: ApiWorld, url: str, who: str = "alice") -> tuple[list[Page], list[str]]:
    """Every page from ``url`` on, following ``rel="next"``; the pages and their URLs."""
    pages: list[Page] = []
    urls = [url]
    while True:
        reply = api.client.get(url, headers=api.headers(who))
        pages.append(ok(reply))
        following = next_url(reply)
        if following is None:
            return pages, urls
        assert len(pages) < MAX_PAGES, "the links never end"
        url = following
        urls.append(url)


def whole(api: ApiWorld, who: str = "alice", **query: Any) -> Page:
    reply = api.client.get(tasks_url(api.home_list.id, **query), headers=api.headers(who))
    assert "link" not in reply.headers
    return ok(reply)  # type: ignore[no-any-return]


def joined(pages: list[Page]) -> Page:
    return [node for page in pages for node in page]


def titles(nodes: Page) -> list[str]:
    """Titles in tree order (pre-order)."""
    found: list[str] = []
    for node in nodes:
        found.append(node["title"])
        found.extend(titles(node["children"]))
    return found


def roots(nodes: Page) -> list[str]:
    return [node["title"] for node in nodes]


def cursor_of(node: dict[str, Any]) -> str:
    return f"{node['position']}:{node['ref']}"


def make_stock(api: ApiWorld) -> dict[str, Task]:
    """Home's trees (``*`` trashed): Kitchen [home, Kitchen section, timed due, two
    reminders] > Dishes [planned] > Cups [home], Oven*; Laundry (completed); Old* >
    Old child; Garden [outside] > Mow [home, due date]; Bills (an occurrence of a daily
    series); Call. Instants with and without microseconds."""
    t, alice, home = api.services.tasks, api.actors["alice"].id, api.home_list.id
    api.services.directory.add_section(alice, home, "Kitchen")
    made: dict[str, Task] = {}
    ticks = iter(range(1, 100))

    def add(
        title: str, parent: str | None = None, tags: tuple[str, ...] = (), **options: Any
    ) -> Task:
        tick = next(ticks)
        api.clock.advance(timedelta(seconds=1, microseconds=1234 * tick if tick % 2 else 0))
        task = t.create(
            alice,
            home,
            title,
            parent=made[parent].id if parent else None,
            tags=list(tags),
            **options,
        )
        made[title] = task
        return task

    def plan(title: str, data: dict[str, Any]) -> None:
        task = t.get(alice, made[title].id).task
        made[title] = t.set_schedule(
            alice, task.id, task.revision, parse_schedule(data, lambda value, field: alice)
        )

    add("Kitchen", tags=("home",), section="Kitchen", description="wipe everything")
    plan(
        "Kitchen",
        {
            "due": {"local": "2026-12-05T09:30:00", "zone": "Europe/Berlin"},
            "priority": 2,
            "reminders": [
                {"channel": "email", "local": "2026-12-05T08:00:00", "zone": "Europe/Berlin"},
                {"channel": "push", "local": "2026-12-04T20:15:00", "zone": "America/New_York"},
            ],
        },
    )
    add("Dishes", "Kitchen")
    plan("Dishes", {"planned": "2026-12-01"})
    add("Cups", "Dishes", tags=("home",))
    oven = add("Oven", "Kitchen")
    t.trash(alice, oven.id, oven.revision)
    laundry = add("Laundry")
    made["Laundry"] = t.complete(alice, laundry.id, laundry.revision)
    old = add("Old", tags=("home",))
    add("Old child", "Old")
    made["Old"] = t.trash(alice, old.id, t.get(alice, old.id).task.revision)
    add("Garden", tags=("outside",))
    add("Mow", "Garden", tags=("home",))
    plan("Mow", {"due": "2026-12-24"})
    bills = add("Bills")
    api.services.series.start_series(alice, bills.id, bills.revision, {"kind": "daily"})
    made["Bills"] = t.get(alice, bills.id).task
    add("Call")
    return made


def domain(api: ApiWorld, **filters: Any) -> Page:
    """The domain's JSON of the whole home list (``TaskService.tree``), as alice sees it."""
    nodes = api.services.tasks.tree(api.actors["alice"].id, api.home_list.id, **filters)
    return [node.to_json() for node in nodes]


@pytest.fixture
def stock(api: ApiWorld) -> dict[str, Task]:
    return make_stock(api)


class TestFollowingLinks:
    def test_following_the_next_links_yields_the_unpaged_tree(
        self, api: ApiWorld, stock: dict[str, Task]
    ) -> None:
        expected = whole(api)
        assert titles(expected) == [
            "Kitchen",
            "Dishes",
            "Cups",
            "Laundry",
            "Garden",
            "Mow",
            "Bills",
            "Call",
        ]
        assert expected == domain(api)
        kitchen, laundry, _, bills, _ = expected
        assert laundry["status"] == "completed"
        assert kitchen["due"] == {"local": "2026-12-05T09:30:00", "zone": "Europe/Berlin"}
        assert [r["channel"] for r in kitchen["reminders"]] == ["email", "push"]
        assert kitchen["children"][0]["planned"] == "2026-12-01"
        assert bills["series_id"] == str(stock["Bills"].series_id)
        assert bills["series_id"] is not None

        for limit in (1, 2, 3, 4, 5, 6, MAX_TREE_PAGE):
            pages, _urls = follow(api, tasks_url(api.home_list.id, limit=limit))

            assert joined(pages) == expected, f"limit {limit}"
            assert len(pages) == -(-len(expected) // limit), f"limit {limit}"
            assert all(len(page) == limit for page in pages[:-1]), f"limit {limit}"
            assert 1 <= len(pages[-1]) <= limit, f"limit {limit}"
            for node in joined(pages):
                TreeNodeOut.model_validate(node)

    def test_a_first_page_of_two_links_to_the_page_after_its_last_top_level_task(
        self, api: ApiWorld, stock: dict[str, Task]
    ) -> None:
        url = tasks_url(api.home_list.id, limit=2)

        reply = api.client.get(url, headers=api.headers("alice"))

        page = ok(reply)
        assert [titles([n]) for n in page] == [["Kitchen", "Dishes", "Cups"], ["Laundry"]]
        following = next_url(reply)
        assert following is not None
        parts = urlsplit(following)
        assert parts.path == f"/api/lists/{api.home_list.id}/tasks"
        assert query_of(following) == {"limit": ["2"], "after": [cursor_of(page[-1])]}
        laundry = stock["Laundry"]
        assert cursor_of(page[-1]) == f"{laundry.position}:{laundry.ref}"
        assert len(query_of(following)["after"][0]) <= PAGE_CURSOR_LENGTH

    def test_every_link_replaces_the_cursor_it_was_reached_with(
        self, api: ApiWorld, stock: dict[str, Task]
    ) -> None:
        pages, urls = follow(api, tasks_url(api.home_list.id, limit=1))

        assert len(urls) == len(pages) == 5
        for url, page in zip(urls[1:], pages, strict=False):
            assert query_of(url) == {"limit": ["1"], "after": [cursor_of(page[-1])]}

    def test_the_next_link_keeps_the_trash_parameter(
        self, api: ApiWorld, stock: dict[str, Task]
    ) -> None:
        expected = whole(api, trashed="true")
        assert expected == domain(api, include_trashed=True)
        assert roots(expected) == ["Kitchen", "Laundry", "Old", "Garden", "Bills", "Call"]
        assert titles(expected[:1]) == ["Kitchen", "Dishes", "Cups", "Oven"]

        pages, urls = follow(api, tasks_url(api.home_list.id, trashed="true", limit=2))

        assert joined(pages) == expected
        assert [roots(p) for p in pages] == [
            ["Kitchen", "Laundry"],
            ["Old", "Garden"],
            ["Bills", "Call"],
        ]
        for url in urls[1:]:
            query = query_of(url)
            assert (query["trashed"], query["limit"], len(query["after"])) == (["true"], ["2"], 1)

    def test_the_next_link_keeps_the_filters(self, api: ApiWorld, stock: dict[str, Task]) -> None:
        filters = {"tag": "home", "status": "open", "trashed": "true"}
        expected = whole(api, **filters)
        assert expected == domain(api, tag="home", status="open", include_trashed=True)
        assert [titles([n]) for n in expected] == [
            ["Kitchen", "Dishes", "Cups"],
            ["Old"],
            ["Garden", "Mow"],
        ]

        pages, urls = follow(api, tasks_url(api.home_list.id, **filters, limit=1))

        assert joined(pages) == expected
        assert [roots(p) for p in pages] == [["Kitchen"], ["Old"], ["Garden"]]
        for url in urls[1:]:
            query = query_of(url)
            assert {k: v for k, v in query.items() if k != "after"} == {
                "tag": ["home"],
                "status": ["open"],
                "trashed": ["true"],
                "limit": ["1"],
            }
            assert len(query["after"]) == 1

    def test_the_next_link_keeps_parameters_that_need_encoding(self, api: ApiWorld) -> None:
        alice, home = api.actors["alice"].id, api.home_list.id
        section = "Bäck yard & shed?"
        api.services.directory.add_section(alice, home, section)
        for title in ("One", "Two", "Three"):
            api.services.tasks.create(alice, home, title, section=section)
        api.services.tasks.create(alice, home, "Not in the section")
        filters = {"section": section, "dueTo": "2030-01-01"}
        assert whole(api, **filters) == []
        expected = whole(api, section=section)
        assert roots(expected) == ["One", "Two", "Three"]

        pages, urls = follow(api, tasks_url(home, section=section, limit=1))
        empty = api.client.get(tasks_url(home, **filters, limit=1), headers=api.headers("alice"))

        assert joined(pages) == expected
        assert len(urls) == 3
        for url in urls[1:]:
            assert query_of(url)["section"] == [section]
        assert ok(empty) == []
        assert "link" not in empty.headers

    def test_a_link_still_leads_on_after_its_task_was_trashed(
        self, api: ApiWorld, stock: dict[str, Task]
    ) -> None:
        first = api.client.get(tasks_url(api.home_list.id, limit=2), headers=api.headers("bob"))
        assert roots(ok(first)) == ["Kitchen", "Laundry"]
        following = next_url(first)
        assert following is not None
        laundry = stock["Laundry"]
        api.services.tasks.trash(api.actors["bob"].id, laundry.id, laundry.revision)

        pages, _ = follow(api, following, who="bob")

        assert [roots(p) for p in pages] == [["Garden", "Bills"], ["Call"]]

    def test_a_viewer_follows_the_same_links(self, api: ApiWorld, stock: dict[str, Task]) -> None:
        new_task(api, "bob", title="Added by bob")

        as_viewer, _ = follow(api, tasks_url(api.home_list.id, limit=2), who="carol")
        as_owner, _ = follow(api, tasks_url(api.home_list.id, limit=2))

        assert as_viewer == as_owner
        assert joined(as_viewer) == whole(api, who="carol")
        assert roots(joined(as_viewer))[-1] == "Added by bob"


class TestLastPage:
    def test_a_page_holding_the_rest_has_no_link(
        self, api: ApiWorld, stock: dict[str, Task]
    ) -> None:
        for limit in (5, MAX_TREE_PAGE):
            reply = api.client.get(
                tasks_url(api.home_list.id, limit=limit), headers=api.headers("alice")
            )

            assert ok(reply) == whole(api)
            assert "link" not in reply.headers

    def test_an_empty_list_is_one_empty_page_without_a_link(self, api: ApiWorld) -> None:
        reply = api.client.get(tasks_url(api.home_list.id, limit=3), headers=api.headers("carol"))

        assert ok(reply) == []
        assert "link" not in reply.headers

    def test_a_cursor_past_the_last_tree_is_an_empty_page_without_a_link(
        self, api: ApiWorld, stock: dict[str, Task]
    ) -> None:
        call = stock["Call"]
        url = tasks_url(api.home_list.id, limit=2, after=f"{call.position}:{call.ref}")

        reply = api.client.get(url, headers=api.headers("alice"))

        assert ok(reply) == []
        assert "link" not in reply.headers


class TestRefusals:
    @pytest.mark.parametrize(
        ("query", "field"),
        [
            pytest.param({"limit": "0"}, "limit", id="limit-0"),
            pytest.param({"limit": "-1"}, "limit", id="limit-negative"),
            pytest.param({"limit": str(MAX_TREE_PAGE + 1)}, "limit", id="limit-201"),
            pytest.param({"limit": "abc"}, "limit", id="limit-abc"),
            pytest.param({"limit": "1.5"}, "limit", id="limit-fraction"),
            pytest.param({"limit": "true"}, "limit", id="limit-true"),
            pytest.param({"after": "1048576:ABC234"}, "after", id="after-without-limit"),
            pytest.param({"after": "abc", "limit": "2"}, "after", id="after-abc"),
            pytest.param({"after": "1:", "limit": "2"}, "after", id="after-no-ref"),
            pytest.param({"after": ":ABC234", "limit": "2"}, "after", id="after-no-position"),
            pytest.param({"after": "1:abc234", "limit": "2"}, "after", id="after-lower-case"),
            pytest.param(
                {"after": "99999999999999999999:ABC234", "limit": "2"},
                "after",
                id="after-position-too-large",
            ),
            pytest.param(
                {"after": "1:" + "A" * PAGE_CURSOR_LENGTH, "limit": "2"},
                "after",
                id="after-too-long",
            ),
            pytest.param({"after": "", "limit": "2"}, "after", id="after-empty"),
            pytest.param(
                {"after": "1:ab", "limit": "2", "tag": "home"}, "after", id="after-filtered"
            ),
        ],
    )
    def test_bad_paging_parameters_are_422_naming_the_field(
        self, api: ApiWorld, stock: dict[str, Task], query: dict[str, str], field: str
    ) -> None:
        reply = invalid(api, "GET", tasks_url(api.home_list.id, **query), field, who="carol")

        assert reply.json()["code"] == "invalid-input"

    def test_the_longest_cursor_is_accepted(self, api: ApiWorld, stock: dict[str, Task]) -> None:
        longest = f"{-(2**63)}:" + "Z" * 12
        assert len(longest) == PAGE_CURSOR_LENGTH

        pages, _ = follow(api, tasks_url(api.home_list.id, limit=3, after=longest))

        assert joined(pages) == whole(api)

    @pytest.mark.parametrize(
        "query",
        [
            pytest.param({"limit": "2"}, id="first-page"),
            pytest.param({"limit": "2", "after": "1048576:ABC234"}, id="next-page"),
            pytest.param({"limit": "2", "tag": "home"}, id="filtered"),
        ],
    )
    def test_a_page_without_credentials_is_401(
        self, api: ApiWorld, stock: dict[str, Task], query: dict[str, str]
    ) -> None:
        refused(api, "GET", tasks_url(api.home_list.id, **query), {}, 401, "unauthenticated")

    @pytest.mark.parametrize(
        "query",
        [
            pytest.param({"limit": "2"}, id="first-page"),
            pytest.param({"limit": "2", "after": "1048576:ABC234"}, id="next-page"),
            pytest.param({"limit": "2", "tag": "home"}, id="filtered"),
            pytest.param({"limit": "2", "trashed": "true"}, id="with-trash"),
        ],
    )
    def test_a_page_for_a_non_member_is_404_as_for_no_list(
        self, api: ApiWorld, stock: dict[str, Task], query: dict[str, str]
    ) -> None:
        reply = refused(
            api, "GET", tasks_url(api.home_list.id, **query), api.headers("dave"), 404, "not-found"
        )

        assert "link" not in reply.headers
        assert "Kitchen" not in reply.text

    def test_a_page_of_an_unknown_list_is_404(self, api: ApiWorld) -> None:
        refused(api, "GET", tasks_url(uuid4(), limit=2), api.headers("alice"), 404, "not-found")


@pytest.mark.parametrize(
    "query",
    [
        "limit=10",  # the first page
        "limit=10&after=AAAA",  # a later page: its cursor replaced
        "after=AAAA&limit=10&after=BBBB",  # every after replaced, the new one last
        "limit=10&tag=a%20b&section=K%C3%BCche&status=",  # encoded and blank values
    ],
)
def test_the_next_link_is_the_url_the_framework_would_make(query: str) -> None:
    scope = {
        "type": "http",
        "scheme": "http",
        "server": ("127.0.0.1", 8000),
        "path": "/api/lists/x/tasks",
        "root_path": "",
        "query_string": query.encode(),
        "headers": [(b"host", b"127.0.0.1:8000")],
    }
    request = Request(scope)
    assert next_page_url(request, "CUR_sor-1") == str(
        request.url.include_query_params(after="CUR_sor-1")
    )
