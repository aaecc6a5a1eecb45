"""A real OpenAI-compatible embedding server on 127.0.0.1 (an ephemeral port, in a thread) whose
model is a plain function a test chooses, and can change while it runs (`server.embed = ...`)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class EmbeddingServer:
    """`POST /v1/embeddings` answered with `embed(text)` per input, after `sleep` seconds."""

    def __init__(self, embed, sleep: float = 0.0):
        server = self
        self.embed, self.requests = embed, []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body["input"])
                time.sleep(sleep)
                data = [{"index": i, "embedding": server.embed(t)} for i, t in enumerate(body["input"])]
                payload = json.dumps({"data": data}).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
