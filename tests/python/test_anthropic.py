"""The anthropic SDK (2.10.0): its own types validate the manifest and the tool_result blocks,
and a real client loop runs with faregate as the tool executor (the model is a local fake)."""

import json
import typing

import anthropic
import httpx
import httpx2
from anthropic.types import Message, MessageParam, ToolParam, ToolResultBlockParam
from pydantic import TypeAdapter

from conftest import fresh_date


def exact(typed_dict, value):
    TypeAdapter(typed_dict).validate_python(value)
    extra = set(value) - set(typing.get_type_hints(typed_dict))
    assert not extra, f"{typed_dict.__name__} has no {sorted(extra)}"


def manifest(demo):
    r = demo.get("/v1/tools", params={"format": "anthropic"})
    r.raise_for_status()
    return r.json()["tools"]


def test_the_manifest_is_sdk_tool_params(demo):
    tools = manifest(demo)
    assert [t["name"] for t in tools][0] == "search_flights"
    for tool in tools:
        exact(ToolParam, tool)
        assert tool["input_schema"]["type"] == "object"


def fake_message(content):
    return Message.model_validate({"id": "msg_1", "type": "message", "role": "assistant", "model": "fake",
                                   "content": content, "stop_reason": "tool_use", "stop_sequence": None,
                                   "usage": {"input_tokens": 1, "output_tokens": 1}})


def test_tool_results_validate_and_flag_the_outage(demo):
    demo.fault("duffel_air_search", outage=True)
    demo.fault("amadeus_flights", outage=True)
    message = fake_message([
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1", "name": "search_flights",
         "input": {"origin": "JFK", "destination": "LHR", "departure_date": fresh_date()}},
        {"type": "tool_use", "id": "toolu_2", "name": "search_hotels",
         "input": {"city_code": "PAR", "check_in_date": fresh_date(), "check_out_date": fresh_date()}},
    ])
    r = demo.post("/v1/anthropic/tool_use", {"role": "assistant",
                                              "content": [b.model_dump() for b in message.content]})
    assert r.status_code == 200, r.text
    user = r.json()
    TypeAdapter(MessageParam).validate_python(user)
    for block in user["content"]:
        exact(ToolResultBlockParam, block)
    flights, hotels = user["content"]
    assert flights["tool_use_id"] == "toolu_1" and flights["is_error"] is True
    assert "Flight search is temporarily unavailable" in flights["content"]
    assert hotels["tool_use_id"] == "toolu_2" and hotels["is_error"] is False


def test_an_anthropic_client_loop_with_faregate_as_the_tool_executor(demo):
    seen = []
    date = fresh_date()

    def model(request: httpx2.Request) -> httpx2.Response:
        seen.append(json.loads(request.content))
        if len(seen) == 1:
            content = [{"type": "tool_use", "id": "toolu_9", "name": "search_flights",
                        "input": {"origin": "JFK", "destination": "LHR", "departure_date": date}}]
            stop = "tool_use"
        else:
            content = [{"type": "text", "text": "Here are your flights."}]
            stop = "end_turn"
        return httpx2.Response(200, json={"id": "msg", "type": "message", "role": "assistant", "model": "fake",
                                         "content": content, "stop_reason": stop, "stop_sequence": None,
                                         "usage": {"input_tokens": 1, "output_tokens": 1}})

    client = anthropic.Anthropic(api_key="test", base_url="http://model.invalid",
                                 http_client=httpx2.Client(transport=httpx2.MockTransport(model)))
    tools = manifest(demo)
    messages = [{"role": "user", "content": "Flights JFK to LHR?"}]
    while True:
        reply = client.messages.create(model="fake", max_tokens=1024, tools=tools, messages=messages)
        messages.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
        if reply.stop_reason != "tool_use":
            break
        results = demo.post("/v1/anthropic/tool_use", messages[-1])
        results.raise_for_status()
        messages.append(results.json())
    assert seen[0]["tools"] == tools
    tool_result = seen[1]["messages"][2]["content"][0]
    assert tool_result["type"] == "tool_result" and tool_result["is_error"] is False
    assert reply.content[0].text == "Here are your flights."


def test_a_model_creates_a_watch_with_a_tool_use_block(demo):
    """watch_create as a tool_use block: the watched call's arguments as an object, answered by
    a tool_result the SDK's types accept."""
    message = fake_message([
        {"type": "tool_use", "id": "toolu_w", "name": "watch_create",
         "input": {"tool": "get_flight_status", "every": "5s", "condition": {"kind": "delay_over", "minutes": 30},
                   "ends": {"after_runs": 2},
                   "arguments": {"carrier_code": "BA", "flight_number": "117", "departure_date": fresh_date()}}},
    ])
    r = demo.post("/v1/anthropic/tool_use", {"role": "assistant", "content": [b.model_dump() for b in message.content]})
    assert r.status_code == 200, r.text
    [block] = r.json()["content"]
    exact(ToolResultBlockParam, block)
    assert block["tool_use_id"] == "toolu_w" and block["is_error"] is False, block
    watch_id = block["content"].split("Watch ", 1)[1].split(" ", 1)[0]
    watch = demo.get(f"/v1/watches/{watch_id}").json()
    assert watch["condition"] == {"kind": "delay_over", "minutes": 30} and watch["ends"]["after_runs"] == 2
    assert httpx.delete(f"{demo.api}/v1/watches/{watch_id}", timeout=30).status_code == 204
