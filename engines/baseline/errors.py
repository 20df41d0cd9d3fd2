"""OpenAI-style API errors.

Every failure the server answers is one ``ApiError`` turned into the JSON body OpenAI
and vLLM clients expect, ``{"error": {"message", "type", "param", "code"}}``, so a bad
request never becomes a 500 with a traceback. ``code`` is the HTTP status, as vLLM sends.
"""

from __future__ import annotations

from typing import Any

_TYPES = {
    400: "BadRequestError",
    404: "NotFoundError",
    405: "MethodNotAllowedError",
    411: "LengthRequiredError",
    413: "RequestEntityTooLargeError",
    500: "InternalServerError",
    501: "NotImplementedError",
}


class ApiError(Exception):
    """A request the server refuses (4xx) or could not serve (5xx).

    ``param`` names the offending request field, when there is one.
    """

    def __init__(self, status: int, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param

    def body(self) -> dict[str, Any]:
        return error_body(self.status, self.message, param=self.param)


def error_body(status: int, message: str, *, param: str | None = None) -> dict[str, Any]:
    """The JSON body of an error answer."""
    kind = _TYPES.get(status, "BadRequestError" if status < 500 else "InternalServerError")
    return {"error": {"message": message, "type": kind, "param": param, "code": status}}


def bad_request(message: str, param: str | None = None) -> ApiError:
    return ApiError(400, message, param=param)
