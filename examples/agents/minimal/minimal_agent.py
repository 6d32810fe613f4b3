import json, anyio, openai
from pathlib import Path
from typing import Any
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from continuity.agents import protocol as cap, sdk


class Minimal:  # an OpenAI-SDK tool loop over MCP: resumes after a restart, takes steers
    async def initialize(self, p: cap.InitParams) -> cap.AgentInfo:
        self.file, self.mcp, self.steers = Path(p.workspace) / "chats.json", p.mcp_servers[0].url, list[str]()
        self.chats = json.loads(self.file.read_text()) if p.resume and self.file.exists() else {}
        self.llm = openai.AsyncOpenAI(base_url=p.model.base_url, api_key=p.model.api_key)
        caps = cap.Capabilities(steer="injected", resume_after_restart=True, new_session=True)
        return cap.AgentInfo(agent=cap.AgentIdentity(name="minimal", version="1"), capabilities=caps)

    async def open_session(self, key: str) -> str:
        self.chats.setdefault(key, [])
        return key

    async def steer(self, session_id: str, turn_id: str, steer_id: str, text: str) -> cap.SteerResult:
        self.steers.append(text)  # joins the chat after the running tool call's result
        return cap.SteerResult(delivery="injected")

    async def run_turn(self, session_id: str, turn_id: str, text: str, at: str) -> cap.TurnResult:
        chat: list[dict[str, Any]] = self.chats.setdefault(session_id, [])
        chat.append({"role": "user", "content": text})
        async with streamable_http_client(self.mcp) as (r, w), ClientSession(r, w) as mcp:
            await mcp.initialize()
            tools = [{"type": "function", "function": {"name": t.name, "parameters": t.input_schema}} for t in (await mcp.list_tools()).tools]
            while True:
                ask: dict[str, Any] = {"model": "cont-main", "messages": chat, "tools": tools}
                reply = (await self.llm.chat.completions.create(**ask)).choices[0].message
                chat.append(reply.model_dump(exclude_none=True))
                for call in chat[-1].get("tool_calls", []):
                    done = await mcp.call_tool(call["function"]["name"], json.loads(call["function"]["arguments"]))
                    chat.append({"role": "tool", "tool_call_id": call["id"], "content": "".join(getattr(c, "text", "") for c in done.content)})
                chat += [{"role": "user", "content": s} for s in self.steers]
                self.steers.clear()
                self.file.write_text(json.dumps(self.chats))
                if not reply.tool_calls:
                    return cap.TurnResult(turn_id=turn_id, status="completed", reply={"text": reply.content or ""})


anyio.run(sdk.serve_stdio, Minimal())
