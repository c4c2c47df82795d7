"""What the OpenAPI schema says beyond what drf-spectacular reads from serializers: every error
answer in the `{code, detail, fields}` envelope with the codes each operation may give, and the
Idempotency-Key header where it is accepted.

The codes of an operation come from two places:
- what its kind implies, decided here once: a token is needed (401), staff only (403), a body
  or query to validate (400, 415), an id in the path (404), throttled (429), Idempotency-Key
  (400, 409, 422), plus `EVERY_OPERATION_ERRORS` and `BODY_ERRORS`;
- what its handler declares with `@api_errors(ErrorClass, ...)`: the domain errors of its
  service (e.g. a claim's `not_in_window`, `sold_out`, `limit_reached`).
"""

import http
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import uritemplate
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.plumbing import ResolvedComponent
from drf_spectacular.utils import OpenApiParameter
from rest_framework import exceptions, permissions
from rest_framework_simplejwt.views import TokenObtainPairView, TokenRefreshView

from api import idempotency
from api.errors import IdempotencyKeyInvalid, IdempotencyKeyReused, RequestInProgress
from api.exceptions import (
    CODE_BY_API_EXCEPTION,
    UNAVAILABLE_DETAIL,
    error_body,
    status_of_code,
)
from api.parsers import RequestTooLarge
from core.domain_errors import DomainError

ErrorClass = type[DomainError] | type[exceptions.APIException]


@dataclass(frozen=True)
class ErrorExample:
    code: str
    detail: str | Promise
    fields: dict | None = field(default=None, hash=False, compare=False)
    status: int | None = None  # for codes outside api/exceptions.py's tables

    @classmethod
    def of(cls, error: "ErrorClass | ErrorExample") -> "ErrorExample":
        if isinstance(error, ErrorExample):
            return error
        if issubclass(error, DomainError):
            fields = None
            if error is IdempotencyKeyInvalid:
                fields = {idempotency.KEY_HEADER: [idempotency.KEY_RULE]}
            return cls(error.code, error.default_detail, fields)
        code = next(
            code for api_class, code in CODE_BY_API_EXCEPTION if issubclass(error, api_class)
        )
        if code == "invalid":
            return cls(code, _("Invalid input."), {"field_name": [_("This field is required.")]})
        # A detail with a placeholder is shown as one request would meet it.
        example_args = EXAMPLE_ARGUMENTS.get(error, ())
        return cls(code, str(error(*example_args).detail if example_args else error.default_detail))

    def status_code(self) -> int:
        return self.status or status_of_code(self.code)

    def body(self) -> dict:
        return error_body(self.code, self.detail, self.fields)


# The arguments DRF's errors with a placeholder in their detail are shown with.
EXAMPLE_ARGUMENTS: dict[type, tuple] = {
    exceptions.UnsupportedMediaType: ("text/plain",),
    exceptions.MethodNotAllowed: ("PUT",),
}

# What every operation may answer, and every operation that takes a body: one line each.
EVERY_OPERATION_ERRORS: list["ErrorClass | ErrorExample"] = [
    # The database unreachable or timing out (ops/database_faults.py), with Retry-After.
    ErrorExample("unavailable", UNAVAILABLE_DETAIL, status=503),
]
BODY_ERRORS: list["ErrorClass | ErrorExample"] = [RequestTooLarge]  # over 1 MiB

# Views we do not write: the errors their operations may answer.
THIRD_PARTY_ERRORS: dict[type, tuple[ErrorClass, ...]] = {
    TokenObtainPairView: (exceptions.AuthenticationFailed,),
    TokenRefreshView: (exceptions.AuthenticationFailed,),
}

ERROR_COMPONENT = "Error"
ERROR_SCHEMA = {
    "type": "object",
    "description": "Every error answer. `code` is stable and machine-readable; `detail` is "
    "for people; `fields` (400 `invalid` only) maps each bad input to its messages, nested "
    "like the input for nested bodies.",
    "properties": {
        "code": {"type": "string"},
        "detail": {"type": "string"},
        "fields": {"type": "object", "additionalProperties": {}},
    },
    "required": ["code", "detail"],
}

IDEMPOTENCY_KEY_PARAMETER = OpenApiParameter(
    idempotency.KEY_HEADER,
    {
        "type": "string",
        "minLength": 1,
        "maxLength": idempotency.MAX_KEY_LENGTH,
        # Printable ASCII; no space at either end, which HTTP would strip.
        "pattern": r"^[!-~]([ -~]*[!-~])?$",
    },
    OpenApiParameter.HEADER,
    required=False,
    description=(
        "Makes a retry safe: the same key with the same method, path and body within "
        "24 hours answers the first answer again (with `Idempotent-Replayed: true`) instead "
        "of running twice. Per user. The same key with a different request is 422 "
        "`idempotency_key_reused`; while the first still runs, 409 `request_in_progress`. "
        "5xx and 429 answers are not kept."
    ),
)
REPLAYED_HEADER = OpenApiParameter(
    idempotency.REPLAYED_HEADER,
    {"type": "string", "enum": ["true"]},
    OpenApiParameter.HEADER,
    response=True,
    description="Present on an answer replayed for a repeated Idempotency-Key.",
)


def api_errors(*errors: ErrorClass) -> Callable:
    """Declare the errors a view handler's service may raise, for the schema. The errors its
    kind of operation implies (401, 400 ...) are added by AutoSchema."""

    def decorate(handler: Callable) -> Callable:
        setattr(handler, "api_errors", (*getattr(handler, "api_errors", ()), *errors))  # noqa: B010
        return handler

    return decorate


class AutoSchema(SpectacularAutoSchema):
    """drf-spectacular's AutoSchema plus error responses and the Idempotency-Key header."""

    def handler(self) -> Callable | None:
        """The method serving the operation: a viewset's action, or an APIView's handler."""
        return getattr(self.view, getattr(self.view, "action", None) or self.method.lower(), None)

    def get_operation(self, *args, **kwargs):
        """The operation, its description and its examples' titles in the request's language:
        the English text (the view's docstring, extend_schema's `description`, an example's
        name) is the message id (locale/*/django.po); an error code's example keeps its code."""
        operation = super().get_operation(*args, **kwargs)
        if not operation:
            return operation
        if operation.get("description"):
            operation["description"] = _(operation["description"])
        bodies = [operation.get("requestBody", {})]
        bodies += list(operation.get("responses", {}).values())
        for body in bodies:
            for media in body.get("content", {}).values():
                for example in media.get("examples", {}).values():
                    if example.get("summary"):
                        example["summary"] = _(example["summary"])
        return operation

    def is_idempotent(self) -> bool:
        return getattr(self.handler(), "idempotent", False)

    def get_override_parameters(self):
        parameters = super().get_override_parameters()
        if self.is_idempotent():
            parameters = [*parameters, IDEMPOTENCY_KEY_PARAMETER, REPLAYED_HEADER]
        return parameters

    def possible_errors(self) -> list["ErrorClass | ErrorExample"]:
        errors: list[ErrorClass | ErrorExample] = [*EVERY_OPERATION_ERRORS]
        view_permissions = self.view.get_permissions()
        if self.view.get_authenticators():
            errors.append(exceptions.AuthenticationFailed)  # a bad or expired token
        if any(isinstance(p, permissions.IsAuthenticated) for p in view_permissions):
            errors.append(exceptions.NotAuthenticated)
        if any(isinstance(p, permissions.IsAdminUser) for p in view_permissions):
            errors.append(exceptions.NotAuthenticated)
            errors.append(exceptions.PermissionDenied)
        if self.method in ("POST", "PUT", "PATCH"):
            errors.extend(BODY_ERRORS)
            if self.get_request_serializer() is not None:
                errors += [exceptions.ValidationError, exceptions.UnsupportedMediaType]
        if any(parameter["in"] == "query" for parameter in self._get_parameters()):
            errors.append(exceptions.ValidationError)
        if uritemplate.variables(self.path):
            errors.append(exceptions.NotFound)
        if self.view.get_throttles():
            errors.append(exceptions.Throttled)
        if self.is_idempotent():
            errors += [IdempotencyKeyInvalid, RequestInProgress, IdempotencyKeyReused]
        errors.extend(getattr(self.handler(), "api_errors", ()))
        for view_class, view_errors in THIRD_PARTY_ERRORS.items():
            if isinstance(self.view, view_class):
                errors.extend(view_errors)
        return errors

    def _get_response_bodies(self, direction: Literal["request", "response"] = "response") -> dict:
        responses = super()._get_response_bodies(direction)
        examples_by_status: dict[int, dict[str, ErrorExample]] = {}
        from_domain: set[str] = set()
        for error in self.possible_errors():
            example = ErrorExample.of(error)
            examples = examples_by_status.setdefault(example.status_code(), {})
            name = example.code
            if isinstance(error, type) and issubclass(error, DomainError):
                # A service's own error says more than DRF's generic one with the same code;
                # two of a service's errors with one code are both shown.
                if name in from_domain and examples[name] != example:
                    name = f"{example.code} ({error.__name__})"
                from_domain.add(name)
                examples[name] = example
            else:
                examples.setdefault(name, example)
        for status, examples in sorted(examples_by_status.items()):
            responses[str(status)] = self.error_response(status, examples)
        return responses

    def error_response(self, status: int, examples: dict[str, ErrorExample]) -> dict:
        self.registry.register_on_missing(
            ResolvedComponent(
                name=ERROR_COMPONENT,
                type=ResolvedComponent.SCHEMA,
                schema=ERROR_SCHEMA,
                object=ERROR_COMPONENT,
            )
        )
        codes = sorted({example.code for example in examples.values()})
        schema = {
            "allOf": [
                {"$ref": f"#/components/schemas/{ERROR_COMPONENT}"},
                {"type": "object", "properties": {"code": {"type": "string", "enum": codes}}},
            ]
        }
        response = {
            "description": f"{http.HTTPStatus(status).phrase}: "
            + ", ".join(f"`{code}`" for code in codes),
            "content": {
                "application/json": {
                    "schema": schema,
                    "examples": {
                        name: {"summary": example.code, "value": example.body()}
                        for name, example in examples.items()
                    },
                }
            },
        }
        headers = self._get_response_headers_for_code(str(status))
        if headers:
            response["headers"] = headers
        return response
