"""A tiny MCP server on Python's standard library, for tests: it reads request bodies with json.loads, which takes
what JSON.parse refuses (NaN, Infinity, UTF-16 and UTF-32 bodies) and keeps the last of two equal member names.
Tools "alpha" and "danger" record their calls; GET /calls lists them. Usage: python3 lenient-server.py PORT"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

calls = []


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body=None):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        if body is not None:
            self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/calls":
            return self.answer(200, calls)
        self.answer(405)

    def do_DELETE(self):
        self.answer(405)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            message = json.loads(body)
        except ValueError as e:
            return self.answer(400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": str(e)}})
        method = message.get("method")
        if "id" not in message:
            return self.answer(202)
        if method == "initialize":
            result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "lenient", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": name, "inputSchema": {"type": "object"}} for name in ("alpha", "danger")]}
        elif method == "tools/call":
            calls.append(message["params"]["name"])
            result = {"content": [{"type": "text", "text": "called " + str(message["params"]["name"])}]}
        else:
            result = {}
        self.answer(200, {"jsonrpc": "2.0", "id": message["id"], "result": result})


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
