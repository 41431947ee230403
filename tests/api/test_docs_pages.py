"""``/docs`` and ``/redoc`` render with what the server itself serves: no asset from a CDN,
so the pages work on a machine without internet."""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest

from api.conftest import ApiWorld

# What each asset must be served as, by its file name's ending.
CONTENT_TYPES = {
    ".js": ("text/javascript", "application/javascript"),
    ".css": ("text/css",),
    ".png": ("image/png",),
}


class _Links(HTMLParser):
    """Every URL a page's elements load: ``src`` and ``href`` attributes, and ReDoc's
    ``spec-url``."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in {"src", "href", "spec-url"} and value is not None:
                self.urls.append((tag, value))


def _loaded(page: str) -> list[tuple[str, str]]:
    parser = _Links()
    parser.feed(page)
    return parser.urls


def _same_origin(url: str) -> bool:
    parts = urlsplit(url)
    return not parts.scheme and not parts.netloc and url.startswith("/")


class TestDocsPages:
    # Swagger UI; ReDoc.
    @pytest.mark.parametrize("path", ["/docs", "/redoc"])
    def test_the_page_loads_only_assets_of_the_server_itself(
        self, api: ApiWorld, path: str
    ) -> None:
        reply = api.client.get(path)

        assert reply.status_code == 200, reply.text
        assert reply.headers["content-type"].startswith("text/html")
        page = reply.text
        loaded = _loaded(page)
        assert {tag for tag, _ in loaded} >= {"script", "link"}, loaded
        assert [url for _, url in loaded if not _same_origin(url)] == []
        # Nor a script that fetches from elsewhere: no absolute URL anywhere in the page
        # (Swagger UI's online validator badge is off).
        assert "http://" not in page and "https://" not in page and "//cdn" not in page
        assert "/openapi.json" in page

    # Swagger UI; ReDoc.
    @pytest.mark.parametrize("path", ["/docs", "/redoc"])
    def test_every_asset_the_page_loads_answers_200_with_its_content_type(
        self, api: ApiWorld, path: str
    ) -> None:
        assets = [url for tag, url in _loaded(api.client.get(path).text) if tag != "redoc"]

        assert len(assets) >= 2, assets
        for url in assets:
            reply = api.client.get(url)
            assert reply.status_code == 200, (url, reply.status_code)
            kind = reply.headers["content-type"].split(";")[0].strip()
            ending = url[url.rindex(".") :]
            assert kind in CONTENT_TYPES[ending], (url, kind)
            assert len(reply.content) > 1000, url

    def test_the_scripts_are_swagger_ui_and_redoc(self, api: ApiWorld) -> None:
        swagger = api.client.get("/docs/assets/swagger-ui-bundle.js").text
        redoc = api.client.get("/docs/assets/redoc.standalone.js").text

        assert "SwaggerUIBundle" in swagger
        assert "Redoc" in redoc

    def test_the_openapi_document_the_pages_render_is_served(self, api: ApiWorld) -> None:
        reply = api.client.get("/openapi.json")

        assert reply.status_code == 200
        assert reply.json()["info"]["title"] == "kalends"

    # Past the assets folder; a file it does not hold.
    @pytest.mark.parametrize(
        "url", ["/docs/assets/../../pyproject.toml", "/docs/assets/no-such-file.js"]
    )
    def test_nothing_else_is_served_under_the_assets(self, api: ApiWorld, url: str) -> None:
        assert api.client.get(url).status_code == 404
