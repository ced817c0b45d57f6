"""The official MCP Python SDK (mcp 2.3.0) against /mcp over Streamable HTTP, in the legacy
era (initialize + Mcp-Session-Id) and the modern stateless 2026-07-28 era."""

import asyncio

import jsonschema
import pytest
from mcp import Client

from conftest import fresh_date

MODES = {"legacy": "2025-11-25", "2026-07-28": "2026-07-28"}
CATALOG = ["search_flights", "price_flight_offer", "search_hotels", "check_hotel_availability", "get_flight_status", "book_flight", "book_hotel"]


def run(coro):
    return asyncio.run(coro)


def flights(date=None):
    return {"origin": "JFK", "destination": "LHR", "departure_date": date or fresh_date()}


@pytest.mark.parametrize("mode", list(MODES))
def test_lists_tools_with_schemas_and_annotations(demo, mode):
    async def go():
        async with Client(demo.mcp, mode=mode) as c:
            assert c.protocol_version == MODES[mode]
            return (await c.list_tools()).tools

    tools = run(go())
    assert [t.name for t in tools] == CATALOG, "stable catalog order"
    by_name = {t.name: t for t in tools}
    for t in tools:
        assert t.input_schema["type"] == "object"
        assert t.output_schema["type"] == "object"
        jsonschema.Draft202012Validator.check_schema(t.input_schema)
        jsonschema.Draft202012Validator.check_schema(t.output_schema)
        assert t.annotations.open_world_hint is True
    search = by_name["search_flights"].annotations
    assert (search.read_only_hint, search.idempotent_hint, search.destructive_hint) == (True, True, False)
    for name in ("book_flight", "book_hotel"):
        book = by_name[name].annotations
        assert (book.read_only_hint, book.destructive_hint, book.idempotent_hint) == (False, True, False), name


@pytest.mark.parametrize("mode", list(MODES))
def test_search_flights_returns_text_and_structured_content(demo, mode):
    async def go():
        async with Client(demo.mcp, mode=mode) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            return tools["search_flights"], await c.call_tool("search_flights", flights())

    tool, result = run(go())
    assert result.is_error is False
    text = result.content[0].text
    assert "offers JFK→LHR" in text and "Data (JSON):" in text
    jsonschema.validate(result.structured_content, tool.output_schema)
    assert result.structured_content["offers"][0]["offer_id"]


@pytest.mark.parametrize("mode", list(MODES))
def test_an_outage_is_an_error_result_with_the_fallback_text(demo, mode):
    demo.fault("duffel_air_search", outage=True)
    demo.fault("amadeus_flights", outage=True)

    async def go():
        async with Client(demo.mcp, mode=mode) as c:
            return await c.call_tool("search_flights", flights())

    result = run(go())
    assert result.is_error is True, "a tripped provider is a tool result, not a JSON-RPC error"
    text = result.content[0].text
    assert text.startswith("[unavailable; retry after ")
    assert "Flight search is temporarily unavailable" in text
    assert result.structured_content is None, "nothing invented, and nothing off-schema"


def test_invalid_arguments_and_background_mode_are_error_results(demo):
    async def go():
        async with Client(demo.mcp, mode="2026-07-28") as c:
            bad = await c.call_tool("search_flights", {"origin": "jfk"})
            background = await c.call_tool(
                "search_hotels",
                {"city_code": "PAR", "check_in_date": fresh_date(), "check_out_date": fresh_date()},
                meta={"faregate/mode": "background"},
            )
            return bad, background

    bad, background = run(go())
    assert bad.is_error is True
    assert bad.content[0].text.startswith("[invalid_arguments] Invalid arguments for search_flights")
    assert "destination" in bad.content[0].text
    # A queued job has no result matching the tool's outputSchema, which MCP requires of a
    # successful result: the model is pointed to the endpoints that queue jobs.
    assert background.is_error is True
    assert "not available over MCP" in background.content[0].text
    assert 'POST /v1/tools/{tool}/call with "mode": "background"' in background.content[0].text
