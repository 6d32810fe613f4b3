"""MCP servers the benchmark runs on loopback (never a module named `mcp`)."""
