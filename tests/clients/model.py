#!/usr/bin/env python3
"""A stand-in for the model APIs of four agent CLIs, so they can be run offline as MCP clients:
Anthropic Messages (Claude Code), OpenAI Responses (Codex CLI), OpenAI Chat Completions
(qwen-code) and Gemini generateContent (Gemini CLI), streaming or not.

It plays a model that follows two instructions: a user turn saying "Enable the git group" gets
one call of the offered tool ending in `groups_enable` with {"groups": ["git"]}; a turn saying
"git status" gets one call of the tool ending in `git_status`. When Claude Code defers MCP
tools behind its ToolSearch tool, the tool is first looked up with it. When only Core MCP's
`tools_search` and `tools_call` are offered (`--groups search`), it searches for the tool, then
calls it through `tools_call`. Everything else gets the text "Done.". Each request is logged
(one JSON line) to $MODEL_LOG.

Usage: model.py PORT
"""
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = open(os.environ.get("MODEL_LOG", os.devnull), "a", buffering=1)
DUMP = os.environ.get("MODEL_DUMP")
INTENTS = [("Enable", "groups_enable", {"groups": ["git"]}), ("status", "git_status", {})]


def decide(text, offered, done):
    """(tool, arguments, call id) to call now, or None."""
    for word, suffix, args in INTENTS:
        if word not in text:
            continue
        call_id = f"call_{suffix}"
        if call_id in done:
            return None
        tool = next((n for n in offered if n.endswith(suffix)), None)
        if tool:
            return tool, args, call_id
        if "ToolSearch" in offered and f"search_{suffix}" not in done:
            return "ToolSearch", {"query": f"select:mcp__core__{suffix}", "max_results": 5}, f"search_{suffix}"
        search = next((n for n in offered if n.endswith("tools_search")), None)
        through = next((n for n in offered if n.endswith("tools_call")), None)
        if search and through:
            if "call_tools_search" not in done:
                return search, {"query": suffix.replace("_", " ")}, "call_tools_search"
            if "call_tools_call" not in done:
                return through, {"name": suffix, "arguments": args}, "call_tools_call"
        # qwen-code defers MCP tools behind its own tool_search/tool_call bridge: review Core
        # MCP's two, then call them through the bridge.
        if "tool_search" in offered and "tool_call" in offered:
            core = "mcp__core__tools_search,mcp__core__tools_call"
            steps = [
                ("review_core", "tool_search", {"query": f"select:{core}"}),
                ("call_tools_search", "tool_call", {"name": "mcp__core__tools_search",
                                                    "arguments": {"query": suffix.replace("_", " ")}}),
                ("call_tools_call", "tool_call", {"name": "mcp__core__tools_call",
                                                  "arguments": {"name": suffix, "arguments": args}}),
            ]
            for step, tool, step_args in steps:
                if step not in done:
                    return tool, step_args, step
        return None
    return None


def note(api, offered, call):
    LOG.write(json.dumps({"at": time.time(), "api": api, "offered": len(offered),
                          "git_status_offered": any(n.endswith("git_status") for n in offered),
                          "call": call[0] if call else None}) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def read(self):
        n = int(self.headers.get("content-length") or 0)
        try:
            return json.loads(self.rfile.read(n) or b"{}")
        except ValueError:
            return {}

    def json(self, value):
        data = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def sse(self, events):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        for name, data in events:
            head = f"event: {name}\n" if name else ""
            self.wfile.write(f"{head}data: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()
        self.close_connection = True

    def do_GET(self):
        self.json({"data": [], "models": []})

    def do_POST(self):
        req, path = self.read(), self.path
        if DUMP:
            with open(DUMP, "a") as dump:
                dump.write(json.dumps({"path": path, "request": req}) + "\n")
        if "count_tokens" in path or ":countTokens" in path:
            return self.json({"input_tokens": 10, "totalTokens": 10})
        if "/v1/messages" in path:
            return self.anthropic(req)
        if "/chat/completions" in path:
            return self.chat(req)
        if "/responses" in path:
            return self.openai(req)
        if "enerateContent" in path:  # generateContent, streamGenerateContent
            return self.gemini(req, path)
        self.json({})

    def anthropic(self, req):
        offered = [t.get("name", "") for t in req.get("tools", [])]
        messages = req.get("messages", [])
        done, text = set(), ""
        for m in messages:
            blocks = m.get("content")
            if isinstance(blocks, str):
                blocks = [{"type": "text", "text": blocks}]
            results = [b for b in blocks or [] if isinstance(b, dict) and b.get("type") == "tool_result"]
            done |= {b.get("tool_use_id") for b in results}
            if m.get("role") == "user":
                # Claude Code merges a new prompt into the user message that carries the tool
                # results, beside its own reminders and "Tool loaded." notes.
                said = [b.get("text", "").rsplit("</system-reminder>", 1)[-1].strip()
                        for b in blocks or [] if isinstance(b, dict) and b.get("type") == "text"]
                said = [s for s in said if s and s != "Tool loaded."]
                text = said[-1] if said else text
        call = decide(text, offered, done)
        note("anthropic", offered, call)
        if call:
            block = {"type": "tool_use", "id": call[2], "name": call[0], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(call[1])}
            stop, final = "tool_use", {**block, "input": call[1]}
        else:
            block = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": "Done."}
            stop, final = "end_turn", {"type": "text", "text": "Done."}
        message = {"id": "msg_1", "type": "message", "role": "assistant", "model": req.get("model", "m"),
                   "content": [], "stop_reason": None, "stop_sequence": None,
                   "usage": {"input_tokens": 10, "output_tokens": 5}}
        if not req.get("stream"):
            return self.json({**message, "content": [final], "stop_reason": stop})
        self.sse([
            ("message_start", {"type": "message_start", "message": message}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": 5}}),
            ("message_stop", {"type": "message_stop"}),
        ])

    def openai(self, req):
        offered, spaces = [], {}
        for t in req.get("tools", []):
            for inner in t.get("tools", []) if t.get("type") == "namespace" else [t]:
                offered.append(inner.get("name", ""))
                if t.get("type") == "namespace":
                    spaces[inner.get("name", "")] = t.get("name")
        done, text = set(), ""
        for item in req.get("input", []):
            if not isinstance(item, dict):
                continue
            if item.get("type") == "function_call_output":
                done.add(item.get("call_id"))
            if item.get("role") == "user":
                parts = item.get("content") or []
                said = [p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") == "input_text"]
                text = said[-1] if said else text
        call = decide(text, offered, done)
        note("openai", offered, call)
        if call:
            item = {"type": "function_call", "id": "fc_1", "call_id": call[2], "name": call[0],
                    "arguments": json.dumps(call[1]), "status": "completed"}
            if call[0] in spaces:
                item["namespace"] = spaces[call[0]]
        else:
            item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": "Done.", "annotations": []}]}
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
        response = {"id": "resp_1", "object": "response", "status": "completed",
                    "model": req.get("model", "m"), "output": [item], "usage": usage}
        self.sse([
            ("response.created", {"type": "response.created",
                                  "response": {**response, "status": "in_progress", "output": []}}),
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed", "response": response}),
        ])

    def chat(self, req):
        offered = [t.get("function", {}).get("name", "") for t in req.get("tools", [])]
        done, text = set(), ""
        for m in req.get("messages", []):
            if m.get("role") == "tool":
                done.add(m.get("tool_call_id"))
            if m.get("role") == "user":
                content = m.get("content")
                if isinstance(content, list):
                    # The prompt is the last part, after the client's own reminders.
                    parts = [p.get("text", "") for p in content if isinstance(p, dict)]
                    content = parts[-1] if parts else ""
                text = content or text
        call = decide(text, offered, done)
        note("chat", offered, call)
        if call:
            delta = {"role": "assistant", "content": None, "tool_calls": [
                {"index": 0, "id": call[2], "type": "function",
                 "function": {"name": call[0], "arguments": json.dumps(call[1])}}]}
            finish = "tool_calls"
        else:
            delta, finish = {"role": "assistant", "content": "Done."}, "stop"
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        base = {"id": "chatcmpl-1", "created": int(time.time()), "model": req.get("model", "m")}
        if not req.get("stream"):
            message = {k: v for k, v in delta.items() if k != "tool_calls" or v}
            if "tool_calls" in message:
                message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"}
                                         for c in message["tool_calls"]]
            return self.json({**base, "object": "chat.completion", "usage": usage, "choices": [
                {"index": 0, "message": message, "finish_reason": finish}]})
        self.sse([
            (None, {**base, "object": "chat.completion.chunk",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
            (None, {**base, "object": "chat.completion.chunk", "usage": usage,
                    "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
        ])
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def gemini(self, req, path):
        offered = [d.get("name", "") for t in req.get("tools", []) for d in t.get("functionDeclarations", [])]
        done, text = set(), ""
        for c in req.get("contents", []):
            for p in c.get("parts", []):
                if "functionResponse" in p:
                    done.add("call_" + p["functionResponse"].get("name", "").rsplit("_core_", 1)[-1])
                elif c.get("role") == "user" and p.get("text"):
                    text = p["text"]
        call = decide(text, offered, done)
        note("gemini", offered, call)
        part = {"functionCall": {"name": call[0], "args": call[1]}} if call else {"text": "Done."}
        chunk = {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
                 "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}}
        if "streamGenerateContent" in path:
            return self.sse([(None, chunk)])
        self.json(chunk)


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
