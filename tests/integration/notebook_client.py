#!/usr/bin/python3
"""A browser's part in tests/integration/notebook_test.cc: opens a notebook's one-time link with a
cookie jar, as a browser would, and uses Jupyter through the master: its tree page, a kernel
started over its REST API, code run over the kernel's WebSocket, a 20 MiB file it wrote
downloaded. Then, touching nothing, watches
the page's notices (cohort-session) until the session is warned and ended for being idle.

Prints one "step: result" line per step; the C++ test checks them. Exits non-zero with the reason
when a step fails. Uses only what Debian's jupyter-notebook brings (tornado for the WebSocket).

    notebook_client.py MASTER_URL LINK_PATH [--watch-idle]
"""
import http.cookiejar
import json
import sys
import time
import urllib.error
import urllib.request
import uuid

from tornado import httpclient, ioloop, websocket


def fail(step, why):
    print(f"{step}: FAILED {why}", flush=True)
    sys.exit(1)


def main():
    master, link = sys.argv[1], sys.argv[2]
    watch_idle = "--watch-idle" in sys.argv[3:]
    jar = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    base = link.split("?")[0]

    def call(method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(master + base + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with browser.open(request, timeout=30) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    # Without the link's cookie, nothing.
    status, _ = call("GET", "tree")
    print(f"before-link: {status}", flush=True)

    with browser.open(master + link, timeout=30) as page:
        body = page.read().decode()
        if "tree" not in body:
            fail("link", f"the page does not go on to the tree: {body[:200]}")
    cookies = {c.name: c for c in jar}
    if "cohort_notebook" not in cookies:
        fail("link", f"no cohort_notebook cookie, only {sorted(cookies)}")
    print(f"link: cookie for {cookies['cohort_notebook'].path}", flush=True)

    status, tree = call("GET", "tree")
    if status != 200:
        fail("tree", f"{status} {tree[:300]}")
    banner = "cohort-session.js" in tree
    print(f"tree: {status} jupyter={'jupyter' in tree.lower()} banner={banner}", flush=True)

    status, answer = call("POST", "api/kernels", {"name": "python3"})
    if status != 201:
        fail("kernel", f"{status} {answer[:300]}")
    kernel = json.loads(answer)["id"]
    print(f"kernel: started {kernel}", flush=True)

    cookie_header = "; ".join(f"{c.name}={c.value}" for c in jar)
    ws_url = master.replace("http", "ws", 1) + base + f"api/kernels/{kernel}/channels"

    async def run_code(code):
        request = httpclient.HTTPRequest(ws_url, headers={"Cookie": cookie_header})
        conn = await websocket.websocket_connect(request)
        msg_id = uuid.uuid4().hex
        await conn.write_message(json.dumps({
            "header": {"msg_id": msg_id, "username": "test", "session": uuid.uuid4().hex,
                       "msg_type": "execute_request", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell",
            "content": {"code": code, "silent": False, "store_history": False,
                        "user_expressions": {}, "allow_stdin": False},
        }))
        deadline = time.time() + 60
        while time.time() < deadline:
            message = await conn.read_message()
            if message is None:
                return "closed"
            m = json.loads(message)
            if m.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if m["header"]["msg_type"] == "stream":
                conn.close()
                return m["content"]["text"].strip()
        return "no output"

    output = ioloop.IOLoop.current().run_sync(lambda: run_code("print(6 * 7)"), timeout=90)
    print(f"output: {output}", flush=True)

    # A file larger than what the master holds of one answer (16 MiB), made by the kernel in the
    # notebook's directory and downloaded through the master: relayed as it comes, whole.
    size = 20 * 1024 * 1024
    made = ioloop.IOLoop.current().run_sync(
        lambda: run_code(f"print(open('big.bin', 'wb').write(bytes(range(256)) * {size // 256}))"),
        timeout=90)
    status, _ = 0, None
    request = urllib.request.Request(master + base + "files/big.bin")
    with browser.open(request, timeout=60) as answer:
        data = answer.read()
        status = answer.status
    intact = data == bytes(range(256)) * (size // 256)
    print(f"download: {status} {len(data)} bytes intact={intact} (made {made})", flush=True)

    if not watch_idle:
        return
    # Only GETs from here on: a page left open is no use of the session.
    warned = ended = False
    deadline = time.time() + 120
    while time.time() < deadline and not ended:
        status, answer = call("GET", "cohort-session")
        if status != 200:
            fail("notice", f"{status} {answer[:300]}")
        notice = json.loads(answer)["notice"]
        text = notice["text"] if notice else ""
        if "unless it is used" in text and not warned:
            warned = True
            print(f"warned: {text}", flush=True)
        if "has ended" in text:
            ended = True
            print(f"ended: {text}", flush=True)
        time.sleep(0.5)
    if not ended:
        fail("idle", "the session was not ended")
    status, _ = call("GET", "tree")
    print(f"after-end: {status}", flush=True)


if __name__ == "__main__":
    main()
