"""MCP Tasks (the io.modelcontextprotocol/tasks extension, SEP-2663) driven by the official MCP
Python SDK (mcp 2.3.0) against the demo's /mcp: a background call answers a task that waits
out a provider outage without an error and completes with a result matching the tool's output
schema; tasks/cancel stops a task whose job has not run.

mcp 2.3.0 has no tasks client of its own (its tasks types are 2025-11-25's, which 2026-07-28
replaced), so the tasks client here is what the SDK offers extension authors: a
`ClientExtension` that advertises the extension and claims the `resultType: "task"` shape of
tools/call, and requests sent through the session's generic `send_request`.
"""

import asyncio
from typing import Any, Literal

import jsonschema
import mcp_types as types
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from pydantic import TypeAdapter

from conftest import fresh_date

TASKS = "io.modelcontextprotocol/tasks"
BACKGROUND = {"faregate/mode": "background"}


class CreatedTask(types.Result):
    """A tools/call answered with a task (`resultType: "task"`)."""

    result_type: Literal["task"]
    task_id: str
    status: str
    status_message: str | None = None
    poll_interval_ms: int | None = None


class TasksGet(types.Request[dict[str, Any], Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: dict[str, Any]
    name_param = "taskId"


class TasksCancel(types.Request[dict[str, Any], Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: dict[str, Any]
    name_param = "taskId"


ANY = TypeAdapter(dict[str, Any])


async def get_task(session, task_id: str) -> dict[str, Any]:
    return await session.send_request(TasksGet(params={"taskId": task_id}), ANY)


class Tasks(ClientExtension):
    """Claims task results and polls tasks/get (at the server's pollIntervalMs) until the task
    ends; every state it read is kept in `seen`, and `waiting` is set once the server says the
    task waits for its provider."""

    identifier = TASKS

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.waiting = asyncio.Event()

    def claims(self):
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self.resolve)]

    async def resolve(self, created: CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
        interval = (created.poll_interval_ms or 1000) / 1000
        for _ in range(240):
            task = await get_task(ctx.session, created.task_id)
            self.seen.append(task)
            if (task.get("statusMessage") or "").startswith("Waiting:"):
                self.waiting.set()
            if task["status"] == "completed":
                return types.CallToolResult.model_validate(task["result"])
            if task["status"] != "working":
                raise AssertionError(f"task ended {task['status']}: {task}")
            await asyncio.sleep(task.get("pollIntervalMs", 1000) / 1000 or interval)
        raise AssertionError(f"task {created.task_id} did not complete: {self.seen[-1]}")


def flights():
    return {"origin": "JFK", "destination": "LHR", "departure_date": fresh_date()}


def flights_down(demo):
    demo.fault("duffel_air_search", outage=True)
    demo.fault("amadeus_flights", outage=True)


def test_a_task_waits_out_an_outage_and_completes_with_a_result_matching_the_schema(demo):
    tasks = Tasks()
    flights_down(demo)

    async def go():
        async with Client(demo.mcp, mode="2026-07-28", extensions=[tasks]) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            call = asyncio.create_task(c.call_tool("search_flights", flights(), meta=BACKGROUND))
            # The provider is down: the task keeps working, and says so, with no error.
            await asyncio.wait_for(tasks.waiting.wait(), timeout=60)
            demo.heal()
            return tools["search_flights"], await asyncio.wait_for(call, timeout=120)

    tool, result = asyncio.run(go())
    waiting = [t for t in tasks.seen if (t.get("statusMessage") or "").startswith("Waiting:")]
    assert waiting and all(t["status"] == "working" for t in waiting)
    assert "tries again by itself" in waiting[0]["statusMessage"]
    assert tasks.seen[-1]["status"] == "completed"
    # The result is what tools/call answers: text and structured content matching the schema.
    assert result.is_error is False
    assert "offers JFK→LHR" in result.content[0].text and "Data (JSON):" in result.content[0].text
    jsonschema.validate(result.structured_content, tool.output_schema)


def test_cancel_stops_a_task_that_waits_for_its_provider(demo):
    flights_down(demo)

    async def go():
        async with Client(demo.mcp, mode="2026-07-28", extensions=[Tasks()]) as c:
            await c.list_tools()
            created = await c.session.call_tool("search_flights", flights(), meta=BACKGROUND, allow_claimed=True)
            assert isinstance(created, CreatedTask), created
            assert created.status == "working"
            for _ in range(60):
                task = await get_task(c.session, created.task_id)
                if (task.get("statusMessage") or "").startswith("Waiting:"):
                    break
                await asyncio.sleep(0.5)
            else:
                raise AssertionError(f"the task never waited: {task}")
            await c.session.send_request(TasksCancel(params={"taskId": created.task_id}), ANY)
            return await get_task(c.session, created.task_id)

    cancelled = asyncio.run(go())
    assert cancelled["status"] == "cancelled"
    assert "result" not in cancelled
