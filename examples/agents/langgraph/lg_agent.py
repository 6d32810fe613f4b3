"""A LangGraph ``create_react_agent`` as a CAP/0 adapter (a reference adapter).

``ChatOpenAI`` at the base URL continuity gives, the fixture tools through
``langchain-mcp-adapters``, and an ``AsyncSqliteSaver`` checkpointer in the workspace
(one thread per conversation, so a restart resumes it). A graph run takes no input
mid-run, so it declares ``steer: queued`` and answers each ``turn/steer`` so: continuity
lets the running turn end, then sends the steer as the next owner turn (``turn/run``),
and the sample carries the label ``queued`` (``steer_degraded``).

``session/compact`` (``compaction: manual``) is LangChain's own summarisation,
``langchain.agents.middleware.SummarizationMiddleware`` (the summarisation LangChain's
short-term memory guide gives agents), run now over the thread's checkpointed messages:
``cont-aux``, offered no tools, is sent the middleware's summary prompt over everything
but the last message (``trim_tokens_to_summarize=None``: the whole of what it replaces),
and the middleware's update (remove every message, then the summary as a user message
and the kept last message) is written back to the checkpointer with ``aupdate_state``,
so the next run's request holds the summary and not the messages it stands for.
``session/switch_model`` (``model_switch``) makes the thread's later runs name another
model at the same URL; each thread's model is kept in ``models.json`` beside the
checkpoints, so it survives a restart.

LangChain's MCP adapters pin the MCP SDK below version 2 and continuity needs 2, so
this adapter runs in a virtualenv of its own (``.venv`` here, ``./setup.sh``) and
imports only continuity's dependency-light CAP/0 SDK from the checkout.
"""

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the checkout: the CAP/0 SDK

import anyio
from langchain.agents.middleware import SummarizationMiddleware
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.prebuilt import create_react_agent

from continuity.agents import protocol as cap
from continuity.agents.sdk import serve_stdio

PROMPT = "You are the owner's assistant. Use the tools to read their mail and more."


class LangGraphAdapter:
    async def initialize(self, p: cap.InitParams) -> cap.AgentInfo:
        self.endpoint = p.model
        self.mcp = MultiServerMCPClient(
            {"fixture": {"url": p.mcp_servers[0].url, "transport": "streamable_http"}}
        )
        # compaction on demand: any history of two or more messages is summarised, all
        # but its last message, which is kept (with its tool call, should it be a result)
        self.summarize = SummarizationMiddleware(self.llm("cont-aux"), trigger=("messages", 1),
                                                 keep=("messages", 1),
                                                 trim_tokens_to_summarize=None)  # fmt: skip
        Path(p.workspace).mkdir(parents=True, exist_ok=True)
        self.db = str(Path(p.workspace) / "checkpoints.sqlite3")
        self.models_file = Path(p.workspace) / "models.json"  # {thread: model} once switched
        self.models: dict[str, str] = {}
        if self.models_file.exists():  # a restart: the models the threads were switched to
            self.models = json.loads(self.models_file.read_text())
        caps = cap.Capabilities(steer="queued", resume_after_restart=True, new_session=True,
                                compaction="manual", model_switch=True)  # fmt: skip
        agent = cap.AgentIdentity(name="langgraph-react", version="0.1", framework="langgraph")
        return cap.AgentInfo(agent=agent, capabilities=caps)

    def llm(self, model: str) -> ChatOpenAI:
        return ChatOpenAI(model=model, base_url=self.endpoint.base_url,
                          api_key=self.endpoint.api_key, max_retries=0)  # fmt: skip

    async def graph(self, saver: AsyncSqliteSaver, session_id: str) -> Any:
        tools = await self.mcp.get_tools()
        llm = self.llm(self.models.get(session_id, "cont-main"))
        return create_react_agent(llm, tools, checkpointer=saver, prompt=PROMPT)

    async def open_session(self, key: str) -> str:
        return key  # a LangGraph thread id

    async def steer(self, session_id: str, turn_id: str, steer_id: str,
                    text: str) -> cap.SteerResult:  # fmt: skip
        return cap.SteerResult(delivery="queued")  # a graph run takes no input: the next turn

    async def run_turn(self, session_id: str, turn_id: str, text: str, at: str) -> cap.TurnResult:
        async with AsyncSqliteSaver.from_conn_string(self.db) as saver:
            graph = await self.graph(saver, session_id)
            config: Any = {"configurable": {"thread_id": session_id}, "recursion_limit": 200}
            state = await graph.ainvoke({"messages": [("user", text)]}, config=config)
        reply = state["messages"][-1].content
        return cap.TurnResult(turn_id=turn_id, status="completed", reply={"text": str(reply)})

    async def compact(self, session_id: str) -> bool:
        async with AsyncSqliteSaver.from_conn_string(self.db) as saver:
            graph = await self.graph(saver, session_id)
            config: Any = {"configurable": {"thread_id": session_id}}
            messages = (await graph.aget_state(config)).values.get("messages", [])
            # the middleware's own hook, as before a model call: None when nothing to compact
            update = await self.summarize.abefore_model({"messages": messages}, None)
            if update is None:
                return False
            await graph.aupdate_state(config, update, as_node="agent")
        return True

    async def switch_model(self, session_id: str, model: str) -> None:
        self.models[session_id] = model
        (tmp := self.models_file.with_suffix(".tmp")).write_text(json.dumps(self.models))
        tmp.replace(self.models_file)  # whole or not at all: a kill mid-write keeps the last one


if __name__ == "__main__":
    anyio.run(serve_stdio, LangGraphAdapter())
