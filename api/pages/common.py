"""What the page modules share: paging links, a one-shot notice, the refusal page.

A page pages with ``?page=N`` (from 1) and a fixed number of rows; ``Pager`` turns the
listing's total into the links ``partials/pager.html`` draws. A form that succeeds redirects
(303) to its page with a notice kept in the session for the next render (``flash``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal
from urllib.parse import urlencode

from fastapi import HTTPException, Request, status
from fastapi.responses import RedirectResponse, Response

from api.templating import FLASH_KEY, render
from state.core import Page


@dataclass(frozen=True)
class Pager:
    """Page ``number`` (from 1) of ``total`` rows, ``limit`` a page, at ``path``.

    ``params`` are the URL's other query parameters (a browse's filters and order): a page's
    links keep them. ``capped``: the listing stopped counting at ``total`` (there are more);
    such a listing reads one row past its page (``more``) to know whether a next page exists.
    """

    path: str
    number: int
    limit: int
    total: int
    params: tuple[tuple[str, str], ...] = ()
    capped: bool = False
    shown: int | None = None

    @classmethod
    def of(cls, request: Request, limit: int) -> Pager:
        raw = request.query_params.get("page", "1")
        number = int(raw) if raw.isdigit() and int(raw) > 0 else 1
        params = tuple((k, v) for k, v in request.query_params.multi_items() if k != "page")
        return cls(request.url.path, number, limit, 0, params)

    @property
    def page(self) -> Page:
        return Page(limit=self.limit, offset=(self.number - 1) * self.limit)

    @property
    def page_and_one(self) -> Page:
        """The page and the first row after it (whether there is a next page)."""
        return Page(limit=self.limit + 1, offset=(self.number - 1) * self.limit)

    def counted(self, total: int, cap: int | None = None, shown: int | None = None) -> Pager:
        """This pager once the listing is counted: ``cap``, it counted at most that many + 1;
        ``shown``, the rows read for the page with ``page_and_one``."""
        capped = cap is not None and total > cap
        total = min(total, cap) if cap is not None else total
        return replace(self, total=total, capped=capped, shown=shown)

    @property
    def more(self) -> bool:
        return self.shown is not None and self.shown > self.limit

    @property
    def first(self) -> int:
        first = (self.number - 1) * self.limit + 1
        return first if self.capped else min(self.total, first)

    @property
    def last(self) -> int:
        if self.shown is not None:
            return self.first + min(self.shown, self.limit) - 1
        return min(self.total, self.number * self.limit)

    @property
    def previous(self) -> int | None:
        return self.number - 1 if self.number > 1 else None

    @property
    def next(self) -> int | None:
        more = self.more if self.capped else self.number * self.limit < self.total
        return self.number + 1 if more else None

    @property
    def beyond_count(self) -> bool:
        """A page past what a capped listing counted: its rows are shown, their total not."""
        return self.capped and self.number * self.limit > self.total

    def href(self, number: int) -> str:
        return f"{self.path}?{urlencode([*self.params, ('page', str(number))])}"


def flash(request: Request, text: str, kind: Literal["ok", "error"] = "ok") -> None:
    """Keep a notice for the next page this browser renders."""
    request.session[FLASH_KEY] = {"text": text, "kind": kind}


def back_to(path: str) -> Response:
    """After a form that succeeded: the page again, by GET (a reload posts nothing twice)."""
    return RedirectResponse(path, status.HTTP_303_SEE_OTHER)


_HEADINGS = {
    status.HTTP_403_FORBIDDEN: "Not allowed",
    status.HTTP_404_NOT_FOUND: "Not found",
}


def refusal_page(request: Request, error: HTTPException) -> Response:
    """A refusal on a page (403, 404) as a page a person reads, not JSON."""
    heading = _HEADINGS.get(error.status_code, "Refused")
    context = {"heading": heading, "detail": error.detail, "status_code": error.status_code}
    return render(request, "error.html", context, status_code=error.status_code)


def local_path(target: str | None, default: str) -> str:
    """``target`` if it is a path of this server (a form's way back), else ``default``."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return default
    return target
