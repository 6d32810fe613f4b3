"""A LangGraph ``create_react_agent`` as a CAP/0 adapter (a reference adapter).

``ChatOpenAI`` at the base URL continuity gives, the fixture tools through
``langchain-mcp-adapters``, and an ``AsyncSqliteSaver`` checkpointer in the workspace
(one thread per conversation, so a restart resumes it). A graph run takes no input
mid-run, so it declares ``steer: queued`` and answers each ``turn/steer`` so: continuity
lets the running turn end, then sends the steer as the next owner turn (``turn/run``),
and the sample carries the label ``queued`` (``steer_degraded``).

LangChain's MCP adapters pin the MCP SDK below version 2 and continuity needs 2, so
this adapter runs in a virtualenv of its own (``.venv`` here, ``./setup.sh``) and
imports only continuity's dependency-light CAP/0 SDK from the checkout.
"""

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the checkout: the CAP/0 SDK

import anyio
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.prebuilt import create_react_agent

from continuity.agents import protocol as cap
from continuity.agents.sdk import serve_stdio

PROMPT = "You are the owner's assistant. Use the tools to read their mail and more."


class LangGraphAdapter:
    async def initialize(self, p: cap.InitParams) -> cap.AgentInfo:
        self.llm = ChatOpenAI(model="cont-main", base_url=p.model.base_url,
                              api_key=p.model.api_key, max_retries=0)  # fmt: skip
        self.mcp = MultiServerMCPClient(
            {"fixture": {"url": p.mcp_servers[0].url, "transport": "streamable_http"}}
        )
        Path(p.workspace).mkdir(parents=True, exist_ok=True)
        self.db = str(Path(p.workspace) / "checkpoints.sqlite3")
        caps = cap.Capabilities(steer="queued", resume_after_restart=True, new_session=True)
        agent = cap.AgentIdentity(name="langgraph-react", version="0.1", framework="langgraph")
        return cap.AgentInfo(agent=agent, capabilities=caps)

    async def open_session(self, key: str) -> str:
        return key  # a LangGraph thread id

    async def steer(self, session_id: str, turn_id: str, steer_id: str,
                    text: str) -> cap.SteerResult:  # fmt: skip
        return cap.SteerResult(delivery="queued")  # a graph run takes no input: the next turn

    async def run_turn(self, session_id: str, turn_id: str, text: str, at: str) -> cap.TurnResult:
        tools = await self.mcp.get_tools()
        async with AsyncSqliteSaver.from_conn_string(self.db) as saver:
            graph = create_react_agent(self.llm, tools, checkpointer=saver, prompt=PROMPT)
            config: Any = {"configurable": {"thread_id": session_id}, "recursion_limit": 200}
            state = await graph.ainvoke({"messages": [("user", text)]}, config=config)
        reply = state["messages"][-1].content
        return cap.TurnResult(turn_id=turn_id, status="completed", reply={"text": str(reply)})


if __name__ == "__main__":
    anyio.run(serve_stdio, LangGraphAdapter())
