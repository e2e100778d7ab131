#!/usr/bin/env python3
"""A small stand-in for the Hugging Face Hub's file API, on loopback, for g4 pull's test.

Serves model repos made from local folders with the endpoints huggingface_hub and g4 pull use:

  GET  /api/models/ORG/NAME[/revision/REV]     {"id", "sha", "siblings"}
  GET  /api/models/ORG/NAME/tree/REV[/PATH]    [{"type": "file", "path", "size", "oid", "lfs"}]
  HEAD|GET /ORG/NAME/resolve/REV/FILE          X-Repo-Commit, ETag; LFS files (*.safetensors,
                                               *.gguf): a 302 to another host name (the Hub's
                                               CDN), http://localhost:PORT/_lfs/ORG/NAME/<sha256>,
                                               with X-Linked-Etag and X-Linked-Size
  HEAD|GET /_lfs/ORG/NAME/<sha256>             the bytes, with Range (206 / 416)

REV is main, v1 (a tag) or the repo's commit. Unknown repos, revisions and files are 404 with
the Hub's X-Error-Code. Repo flags, after the folder (--repo ORG/NAME=DIR[,flag...]):
  gated    401 without "Authorization: Bearer <--token>"
  corrupt  LFS bytes served with one byte changed (the sha256 the headers name is the real one)
  flaky    the first GET of each LFS file stops half way (the connection closes)
  slow     LFS bytes sent in 8 pieces, 0.25 s apart
Every request is appended to --log as "METHOD PATH RANGE AUTH". Prints "PORT <n>" once
listening (port 0: any free port).

    python3 fake_hub.py --repo org/tiny=/path/to/ckpt [--token T] [--log FILE] [--port 0]
"""
import argparse
import hashlib
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

LFS_SUFFIXES = (".safetensors", ".gguf")


class Repo:
    def __init__(self, repo_id, folder, flags):
        self.id = repo_id
        self.flags = set(flags)
        self.files = {}
        for root, _, names in os.walk(folder):
            for name in names:
                path = os.path.join(root, name)
                rel = os.path.relpath(path, folder).replace(os.sep, "/")
                with open(path, "rb") as f:
                    self.files[rel] = f.read()
        h = hashlib.sha1(repo_id.encode())
        for rel in sorted(self.files):
            h.update(rel.encode() + b"\0" + self.files[rel])
        self.commit = h.hexdigest()
        self.dropped = set()  # flaky: LFS files already cut once

    def is_lfs(self, rel):
        return rel.endswith(LFS_SUFFIXES)

    def git_oid(self, rel):
        data = self.files[rel]
        return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()

    def sha256(self, rel):
        return hashlib.sha256(self.files[rel]).hexdigest()

    def commit_of(self, rev):
        return self.commit if rev in ("main", "v1", self.commit) else None


class Hub:
    def __init__(self, repos, token, log):
        self.repos = repos
        self.token = token
        self.log = log
        self.lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet: the test reads --log instead
        pass

    def do_HEAD(self):
        self.handle_request(head=True)

    def do_GET(self):
        self.handle_request(head=False)

    def send(self, status, body=b"", headers=None, head=False):
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if "Content-Length" not in (headers or {}):
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head and body:
            self.wfile.write(body)

    def error(self, status, code, message, head):
        body = json.dumps({"error": message}).encode()
        self.send(status, body, {"X-Error-Code": code, "X-Error-Message": message,
                                 "Content-Type": "application/json"}, head)

    def handle_request(self, head):
        hub = self.server.hub
        url = urlsplit(self.path)
        parts = [unquote(p) for p in url.path.split("/")[1:]]
        if hub.log:
            with hub.lock, open(hub.log, "a") as f:
                f.write(f"{self.command} {url.path} {self.headers.get('Range', '-')} "
                        f"{self.headers.get('Authorization', '-')}\n")
        if parts[0] == "_lfs":
            return self.serve_lfs("/".join(parts[1:3]), parts[-1], head)
        api = parts[0] == "api"
        if api:
            if len(parts) < 4 or parts[1] != "models":
                return self.error(404, "RepoNotFound", "not found", head)
            parts = parts[2:]
        repo_id = "/".join(parts[:2])
        repo = hub.repos.get(repo_id)
        if repo is None:
            return self.error(404, "RepoNotFound", f"Repository {repo_id} not found", head)
        if "gated" in repo.flags and self.headers.get("Authorization") != f"Bearer {hub.token}":
            return self.error(401, "GatedRepo",
                              f"Access to model {repo_id} is restricted; you must be "
                              "authenticated", head)
        rest = parts[2:]
        if api:
            return self.serve_api(repo, rest, head)
        if len(rest) >= 3 and rest[0] == "resolve":
            return self.serve_resolve(repo, rest[1], "/".join(rest[2:]), head)
        return self.error(404, "EntryNotFound", "not found", head)

    def serve_api(self, repo, rest, head):
        rev = "main"
        if rest and rest[0] in ("revision", "tree"):
            rev = rest[1] if len(rest) > 1 else "main"
        commit = repo.commit_of(rev)
        if commit is None:
            return self.error(404, "RevisionNotFound", f"Invalid rev id: {rev}", head)
        if rest and rest[0] == "tree":
            prefix = "/".join(rest[2:])
            entries = []
            for rel in sorted(repo.files):
                if prefix and not rel.startswith(prefix + "/"):
                    continue
                e = {"type": "file", "path": rel, "size": len(repo.files[rel]),
                     "oid": repo.git_oid(rel)}
                if repo.is_lfs(rel):
                    e["lfs"] = {"oid": repo.sha256(rel), "size": len(repo.files[rel]),
                                "pointerSize": 134}
                entries.append(e)
            body = json.dumps(entries).encode()
        else:
            body = json.dumps({"id": repo.id, "modelId": repo.id, "sha": commit,
                               "private": False, "gated": "gated" in repo.flags and "auto",
                               "siblings": [{"rfilename": r} for r in sorted(repo.files)]}).encode()
        self.send(200, body, {"Content-Type": "application/json"}, head)

    def serve_resolve(self, repo, rev, rel, head):
        commit = repo.commit_of(rev)
        if commit is None:
            return self.error(404, "RevisionNotFound", f"Invalid rev id: {rev}", head)
        if rel not in repo.files:
            return self.error(404, "EntryNotFound", f"{rel} not found", head)
        data = repo.files[rel]
        headers = {"X-Repo-Commit": commit, "ETag": f'"{repo.git_oid(rel)}"',
                   "Accept-Ranges": "bytes"}
        if repo.is_lfs(rel):
            sha = repo.sha256(rel)
            port = self.server.server_address[1]
            headers.update({"X-Linked-Etag": f'"{sha}"', "X-Linked-Size": str(len(data)),
                            "Location": f"http://localhost:{port}/_lfs/{repo.id}/{sha}"})
            return self.send(302, b"", headers, head)
        return self.send_bytes(data, headers, head)

    def serve_lfs(self, repo_id, sha, head):
        repo = self.server.hub.repos.get(repo_id)
        rel = next((r for r in (repo.files if repo else {}) if repo.is_lfs(r) and
                    repo.sha256(r) == sha), None)
        if rel is None:
            return self.error(404, "EntryNotFound", "no such blob", head)
        data = repo.files[rel]
        if "corrupt" in repo.flags:
            data = data[:-1] + bytes([data[-1] ^ 0xFF])
        cut = None
        if "flaky" in repo.flags and not head and sha not in repo.dropped:
            repo.dropped.add(sha)
            cut = len(data) // 2
        pieces = 8 if "slow" in repo.flags else 1
        self.send_bytes(data, {"Accept-Ranges": "bytes"}, head, cut, pieces)

    def send_bytes(self, data, headers, head, cut=None, pieces=1):
        total = len(data)
        start, status = 0, 200
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            a, _, b = rng[len("bytes="):].partition("-")
            start = int(a) if a else 0
            end = int(b) + 1 if b else total
            if start >= total:
                return self.send(416, b"", {"Content-Range": f"bytes */{total}"}, head)
            data = data[start:end]
            status = 206
            headers = dict(headers, **{"Content-Range": f"bytes {start}-{start + len(data) - 1}"
                                                        f"/{total}"})
        headers = dict(headers, **{"Content-Length": str(len(data))})
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        if head:
            return
        if cut is not None:  # a dropped connection half way
            self.wfile.write(data[:cut])
            self.wfile.flush()
            self.close_connection = True
            return
        step = max(1, -(-len(data) // pieces))
        for i in range(0, len(data), step):
            self.wfile.write(data[i:i + step])
            self.wfile.flush()
            if pieces > 1:
                time.sleep(0.25)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", action="append", default=[], help="ORG/NAME=DIR[,flag...]")
    ap.add_argument("--token", default="secret")
    ap.add_argument("--log", default="")
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    repos = {}
    for spec in args.repo:
        repo_id, _, rest = spec.partition("=")
        folder, *flags = rest.split(",")
        repos[repo_id] = Repo(repo_id, folder, flags)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.hub = Hub(repos, args.token, args.log)
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
