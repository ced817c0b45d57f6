"""The openai SDK (3.51.0): its own types validate the manifest and the gateway's answers, and a
real client loop runs with faregate as the tool executor (the model is a local fake)."""

import json
import typing

import httpx
import openai
import pytest
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageParam,
    ChatCompletionToolMessageParam,
)
from openai.types.responses import FunctionToolParam, ResponseFunctionToolCall, ResponseInputItemParam
from openai.types.responses.response_input_param import FunctionCallOutput
from pydantic import TypeAdapter

from conftest import fresh_date
from strict_check import check_name, check_strict


def exact(typed_dict, value):
    """Validates with the SDK's TypedDict and refuses keys it does not declare."""
    TypeAdapter(typed_dict).validate_python(value)
    known = set(typing.get_type_hints(typed_dict))
    extra = set(value) - known
    assert not extra, f"{typed_dict.__name__} has no {sorted(extra)}"


def manifest(demo):
    r = demo.get("/v1/tools", params={"format": "openai"})
    r.raise_for_status()
    return r.json()["tools"]


def test_the_manifest_is_sdk_tool_params_with_strict_schemas(demo):
    tools = manifest(demo)
    assert len(tools) == 12, "the 7 catalog tools, the 2 example tools from configuration, then watch_create, watch_list and watch_delete"
    for tool in tools:
        exact(ChatCompletionFunctionToolParam, tool)
        fn = tool["function"]
        assert fn["strict"] is True
        assert check_name(fn["name"]) == []
        assert check_strict(fn["parameters"]) == [], fn["name"]
        # The Responses API takes the same function flat.
        exact(FunctionToolParam, {"type": "function", **fn})


def fake_completion(tool_calls):
    return ChatCompletion.model_validate({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "fake",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": None,
                     "message": {"role": "assistant", "content": None, "tool_calls": tool_calls}}],
    })


def test_tool_messages_validate_as_sdk_params_in_call_order(demo):
    completion = fake_completion([
        {"id": "call_a", "type": "function", "function": {"name": "search_hotels", "arguments": json.dumps(
            {"city_code": "PAR", "check_in_date": fresh_date(), "check_out_date": fresh_date()})}},
        {"id": "call_b", "type": "function", "function": {"name": "search_flights", "arguments": "{\"origin\": "}},
        {"id": "call_c", "type": "function", "function": {"name": "book_train", "arguments": "{}"}},
    ])
    assistant = completion.choices[0].message.model_dump(exclude_none=True)
    r = demo.post("/v1/openai/tool_calls", assistant)
    assert r.status_code == 200, r.text
    messages = r.json()["messages"]
    for m in messages:
        exact(ChatCompletionToolMessageParam, m)
    assert [m["tool_call_id"] for m in messages] == ["call_a", "call_b", "call_c"]
    assert "[invalid_arguments]" in messages[1]["content"] and "not valid JSON" in messages[1]["content"]
    assert "book_train" in messages[2]["content"] and "search_flights" in messages[2]["content"]
    # The whole turn is a valid conversation for the next request.
    TypeAdapter(list[ChatCompletionMessageParam]).validate_python([assistant, *messages])


def test_responses_function_calls_get_function_call_outputs(demo):
    item = ResponseFunctionToolCall(
        type="function_call", id="fc_1", call_id="call_r", name="search_flights",
        arguments=json.dumps({"origin": "JFK", "destination": "LHR", "departure_date": fresh_date(),
                              "return_date": None, "adults": None, "child_ages": None,
                              "cabin_class": None, "max_connections": None, "max_results": None}),
    )
    r = demo.post("/v1/openai/tool_calls", {"output": [item.model_dump(exclude_none=True)]})
    assert r.status_code == 200, r.text
    [out] = r.json()["output"]
    exact(FunctionCallOutput, out)
    TypeAdapter(ResponseInputItemParam).validate_python(out)
    assert out["call_id"] == "call_r" and "offers JFK→LHR" in out["output"]


def test_an_openai_client_loop_with_faregate_as_the_tool_executor(demo):
    """The README loop, with the SDK talking to a fake model that asks for one tool call."""
    seen = []
    date = fresh_date()

    def model(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        if len(seen) == 1:
            calls = [{"id": "call_1", "type": "function", "function": {"name": "search_flights",
                      "arguments": json.dumps({"origin": "JFK", "destination": "LHR", "departure_date": date})}}]
            message = {"role": "assistant", "content": None, "tool_calls": calls}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": "Here are your flights."}
            finish = "stop"
        return httpx.Response(200, json={"id": "c", "object": "chat.completion", "created": 0, "model": "fake",
                                         "choices": [{"index": 0, "finish_reason": finish, "message": message}]})

    client = openai.OpenAI(api_key="test", base_url="http://model.invalid/v1",
                           http_client=httpx.Client(transport=httpx.MockTransport(model)))
    tools = manifest(demo)
    messages = [{"role": "user", "content": "Flights JFK to LHR?"}]
    while True:
        reply = client.chat.completions.create(model="fake", messages=messages, tools=tools).choices[0].message
        messages.append(reply.model_dump(exclude_none=True))
        if not reply.tool_calls:
            break
        results = demo.post("/v1/openai/tool_calls", reply.model_dump(exclude_none=True))
        results.raise_for_status()
        messages.extend(results.json()["messages"])
    assert seen[0]["tools"] == tools, "the SDK sent the manifest unchanged"
    tool_message = seen[1]["messages"][2]
    assert tool_message["role"] == "tool" and "offers JFK→LHR" in tool_message["content"]
    assert messages[-1]["content"] == "Here are your flights."


def test_a_model_watches_a_fare_through_a_tool_call(demo):
    """The SDK loop with a fake model that says "I'll watch it for you": watch_create (arguments
    as strict mode sends them: the watched call as a JSON string, nulls for what is unset), then
    watch_list, then watch_delete, each answered as a tool message."""
    seen = []
    date = fresh_date()
    watch = {"tool": "search_flights", "every": "5s", "condition": {"kind": "price_below", "amount": 1},
             "ends": {"at": None, "after_runs": 3, "at_departure": None},
             "arguments": json.dumps({"origin": "JFK", "destination": "LHR", "departure_date": date})}
    steps = [("watch_create", watch), ("watch_list", {}), ("watch_delete", None)]

    def model(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        if len(seen) <= len(steps):
            name, args = steps[len(seen) - 1]
            if name == "watch_delete":
                created = body["messages"][2]["content"]
                args = {"watch_id": created.split("Watch ", 1)[1].split(" ", 1)[0]}
            calls = [{"id": f"call_{len(seen)}", "type": "function",
                      "function": {"name": name, "arguments": json.dumps(args)}}]
            message = {"role": "assistant", "content": None, "tool_calls": calls}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": "I'll tell you if it drops."}
            finish = "stop"
        return httpx.Response(200, json={"id": "c", "object": "chat.completion", "created": 0, "model": "fake",
                                         "choices": [{"index": 0, "finish_reason": finish, "message": message}]})

    client = openai.OpenAI(api_key="test", base_url="http://model.invalid/v1",
                           http_client=httpx.Client(transport=httpx.MockTransport(model)))
    tools = manifest(demo)
    assert {"watch_create", "watch_list", "watch_delete"} <= {t["function"]["name"] for t in tools}
    messages = [{"role": "user", "content": "Tell me if JFK to LHR gets cheap."}]
    answers = []
    while True:
        reply = client.chat.completions.create(model="fake", messages=messages, tools=tools).choices[0].message
        messages.append(reply.model_dump(exclude_none=True))
        if not reply.tool_calls:
            break
        results = demo.post("/v1/openai/tool_calls", reply.model_dump(exclude_none=True))
        results.raise_for_status()
        for m in results.json()["messages"]:
            exact(ChatCompletionToolMessageParam, m)
        answers.extend(m["content"] for m in results.json()["messages"])
        messages.extend(results.json()["messages"])
    created, listed, deleted = answers
    assert created.startswith("Watch ") and "search_flights" in created and "price_below" in created, created
    watch_id = created.split("Watch ", 1)[1].split(" ", 1)[0]
    assert f"watch {watch_id}: search_flights" in listed, listed
    assert deleted.startswith(f"Watch {watch_id} is stopped"), deleted
    # The watch was made through the same path as the native API's, and is gone now.
    assert demo.get(f"/v1/watches/{watch_id}").status_code == 404


def test_a_watch_the_gateway_refuses_is_the_tool_calls_error_text(demo):
    """A bad watch is that call's error text naming the fix, as the native API's 422 says it."""
    completion = fake_completion([
        {"id": "call_w", "type": "function", "function": {"name": "watch_create", "arguments": json.dumps(
            {"tool": "search_flights", "every": "1s", "condition": None, "ends": None,
             "arguments": json.dumps({"origin": "JFK", "destination": "LHR", "departure_date": fresh_date()})})}},
        {"id": "call_b", "type": "function", "function": {"name": "watch_create", "arguments": json.dumps(
            {"tool": "book_flight", "every": "1h", "condition": None, "ends": None, "arguments": "{}"})}},
    ])
    r = demo.post("/v1/openai/tool_calls", completion.choices[0].message.model_dump(exclude_none=True))
    assert r.status_code == 200, r.text
    fast, write = [m["content"] for m in r.json()["messages"]]
    assert fast.startswith("[invalid_arguments]") and "minimum interval" in fast and '"5s"' in fast, fast
    assert write.startswith("[invalid_arguments]") and "write tool" in write, write
