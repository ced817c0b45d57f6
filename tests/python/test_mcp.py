"""The official MCP Python SDK (mcp 2.3.0) against /mcp over Streamable HTTP, in the legacy
era (initialize + Mcp-Session-Id) and the modern stateless 2026-07-28 era."""

import asyncio

import httpx
import httpx2
import jsonschema
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from conftest import KEYED_DEMO_KEY, fresh_date

MODES = {"legacy": "2025-11-25", "2026-07-28": "2026-07-28"}
CATALOG = ["search_flights", "price_flight_offer", "search_hotels", "check_hotel_availability", "get_flight_status", "book_flight", "book_hotel"]
# The shipped example tools from configuration (tools/*.toml of kind http), after the catalog.
EXAMPLES = ["get_hotel_content", "track_flight"]
WATCH_TOOLS = ["watch_create", "watch_list", "watch_delete"]


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
    assert [t.name for t in tools] == CATALOG + EXAMPLES + WATCH_TOOLS, "stable catalog order, the tools from configuration, then the watch tools"
    by_name = {t.name: t for t in tools}
    for t in tools:
        assert t.input_schema["type"] == "object"
        jsonschema.Draft202012Validator.check_schema(t.input_schema)
        if t.name in WATCH_TOOLS:
            assert t.output_schema is None, "a watch tool answers text"
            continue
        assert t.output_schema["type"] == "object"
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


def keyed_client(demo, mode, key=None):
    """An SDK client of `demo` sending `key` as its bearer key (none when `key` is None)."""
    headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
    transport = streamable_http_client(demo.mcp, http_client=httpx2.AsyncClient(headers=headers))
    return Client(transport, mode=mode)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize(
    "key, says",
    [
        (None, "missing credentials; send `Authorization: Bearer <client key>`"),
        ("not-a-key", "the bearer key is not valid; use a client key or the admin key"),
    ],
)
def test_a_refused_key_shows_faregates_message_to_the_user(keyed_demo, mode, key, says):
    """What a user of an SDK-based client (fastmcp, pydantic-ai, openai-agents, ...) reads when
    the key is missing or wrong: faregate's text, not "Server returned an error response"."""

    async def go():
        async with keyed_client(keyed_demo, mode, key) as c:
            await c.call_tool("search_flights", flights())

    with pytest.raises(BaseException) as raised:
        run(go())
    # The SDK raises the MCPError itself or inside the ExceptionGroup of the client's task
    # group; either way its text (what a traceback or a client's error line shows) is faregate's.
    errors = list(mcp_errors(raised.value))
    assert [(e.code, str(e)) for e in errors] == [(-31401, says)], raised.value


def mcp_errors(exc):
    """The MCPErrors in `exc`, looking inside exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from mcp_errors(inner)
    elif isinstance(exc, MCPError):
        yield exc


@pytest.mark.parametrize("mode", list(MODES))
def test_the_right_key_is_served(keyed_demo, mode):
    async def go():
        async with keyed_client(keyed_demo, mode, KEYED_DEMO_KEY) as c:
            return await c.call_tool("search_flights", flights())

    result = run(go())
    assert result.is_error is False
    assert "offers JFK→LHR" in result.content[0].text


def test_closing_a_legacy_session_ends_it_with_200_and_logs_no_failure(demo, caplog):
    """`DELETE /mcp` is 200: the SDK logs "Session termination failed: 202" otherwise, on every
    close (langchain closes a session after each tool call)."""
    deletes = []

    async def record(response):
        if response.request.method == "DELETE":
            deletes.append(response.status_code)

    async def go():
        http = httpx2.AsyncClient(event_hooks={"response": [record]})
        async with Client(streamable_http_client(demo.mcp, http_client=http), mode="legacy") as c:
            await c.list_tools()

    with caplog.at_level("DEBUG", logger="mcp.client.streamable_http"):
        run(go())
    assert deletes == [200], "the SDK ends its session with one DELETE"
    failures = [r.getMessage() for r in caplog.records if "termination failed" in r.getMessage().lower()]
    assert not failures, failures


@pytest.mark.parametrize("mode", list(MODES))
def test_a_deadline_in_meta_gets_an_answer_before_the_client_gives_up(demo, mode):
    """A client with a 5 s timeout (openai-agents' default) sends its deadline in `_meta`: the
    gateway stops waiting for the hung provider in time to answer a text the model can relay.
    The provider has not failed yet (it hangs, its breaker is closed), so the text says the call
    took longer than allowed, not that the tool is down or when it is back."""
    demo.fault("amadeus_status", hang=True)

    async def go():
        async with Client(demo.mcp, mode=mode) as c:
            return await c.call_tool(
                "get_flight_status",
                {"carrier_code": "BA", "flight_number": "117", "departure_date": fresh_date()},
                meta={"faregate/deadline_ms": 1500},
                read_timeout_seconds=5,
            )

    result = run(go())
    assert result.is_error is True
    text = result.content[0].text
    assert text.startswith("[unavailable] get_flight_status took longer than this call allowed"), text
    assert "retry after" not in text, text


@pytest.mark.parametrize("mode", list(MODES))
def test_a_model_watches_a_flight_through_the_watch_tools(demo, mode):
    """watch_create and watch_list through the SDK's call_tool: text results, no JSON-RPC error,
    and a refusal is an isError result naming the fix."""
    async def go():
        async with Client(demo.mcp, mode=mode) as c:
            created = await c.call_tool("watch_create", {
                "tool": "get_flight_status", "every": "5s", "condition": {"kind": "gate_changed"},
                "arguments": {"carrier_code": "BA", "flight_number": "117", "departure_date": fresh_date()}})
            listed = await c.call_tool("watch_list", {})
            refused = await c.call_tool("watch_create", {
                "tool": "get_flight_status", "every": "5s", "condition": {"kind": "price_below", "amount": 400},
                "arguments": {"carrier_code": "BA", "flight_number": "117", "departure_date": fresh_date()}})
            return created, listed, refused

    created, listed, refused = run(go())
    assert created.is_error is False, created
    text = created.content[0].text
    assert text.startswith("Watch ") and "get_flight_status" in text and "gate_changed" in text, text
    watch_id = text.split("Watch ", 1)[1].split(" ", 1)[0]
    assert f"watch {watch_id}: get_flight_status" in listed.content[0].text
    assert refused.is_error is True and "[invalid_arguments]" in refused.content[0].text
    assert "reads a price" in refused.content[0].text, refused.content[0].text
    assert httpx.delete(f"{demo.api}/v1/watches/{watch_id}", timeout=30).status_code == 204


@pytest.mark.parametrize("mode", list(MODES))
def test_a_call_that_fails_over_reports_progress_to_the_sdks_callback(demo, mode):
    """The SDK adds a progress token when a call has a progress callback; faregate then says why
    the call takes longer (the first provider failed and the next one is asked)."""
    demo.fault("duffel_air_search", outage=True)
    heard = []

    async def on_progress(progress, total, message):
        heard.append((progress, total, message))

    async def go():
        async with Client(demo.mcp, mode=mode) as c:
            return await c.call_tool("search_flights", flights(), progress_callback=on_progress)

    result = run(go())
    assert result.is_error is False, result
    assert heard == [(1.0, None, "search_flights: duffel failed (upstream_5xx), trying amadeus")], heard
