"""Domain errors carry no HTTP; api/errors.py maps every one of them to a status."""

from __future__ import annotations

import inspect

from agentsvc import errors
from agentsvc.api import errors as api_errors
from agentsvc.api.errors import STATUS, error_response, status_of
from agentsvc.errors import DomainError
from tests.support.accounts import bearer, new_api_key
from tests.support.errors import assert_error


def classes(module) -> list[type[DomainError]]:
    return [
        cls
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if issubclass(cls, DomainError) and cls.__module__ == module.__name__
    ]


def test_every_error_class_has_its_status_in_the_one_table():
    unmapped = [
        cls.__name__
        for cls in classes(errors) + classes(api_errors)
        if cls not in STATUS and cls not in (DomainError, api_errors.ApiError)
    ]
    assert unmapped == []


def test_domain_errors_know_no_status_and_no_http():
    assert all(not hasattr(cls, "status") for cls in classes(errors))
    source = inspect.getsource(errors)
    assert "aiohttp" not in source and "status =" not in source


def test_codes_are_unique_per_class():
    codes = [cls.code for cls in STATUS]
    assert len(codes) == len(set(codes))


def test_the_envelope_of_a_domain_error():
    response = error_response(errors.NotFound("Agent not found"))
    assert response.status == 404 == status_of(errors.NotFound())
    assert (
        response.body == b'{"data":null,"error":{"code":"NOT_FOUND","message":"Agent not found"}}'
    )


async def test_domain_errors_over_http_keep_their_status_and_code(make_client):
    client = await make_client()
    auth = bearer(await new_api_key(client))
    resp = await client.get("/api/v1/agents/agent_missing", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.get("/api/v1/agents", headers={"Authorization": "Bearer asvc_wrong"})
    await assert_error(resp, 401, "UNAUTHORIZED")
    resp = await client.post("/api/v1/agents", headers=auth, json={"name": ""})
    await assert_error(resp, 400, "VALIDATION_ERROR")
