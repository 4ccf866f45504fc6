#!/usr/bin/env python3
# A Lambda Runtime API on loopback that feeds `dynapage lambda-sync` batches of synthetic
# DynamoDB stream INSERT records (one product) and times how fast the function answers them:
# the handler's records per second, one invocation at a time (BENCHMARKS.md, "Consumers").
#
# Usage: bench/lambda-handler.py BATCH_SIZE BATCHES REDIS_URL PATH_TO_DYNAPAGE
import http.server, json, os, random, subprocess, sys, threading, time
B32 = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
def ulid(ms):
    n = (ms << 80) | random.getrandbits(80)
    return "".join(B32[(n >> (5 * i)) & 31] for i in reversed(range(26)))
BATCH = int(sys.argv[1]); BATCHES = int(sys.argv[2]); REDIS = sys.argv[3]
def record(i):
    ms = 1767225600000 + i // 3
    cid = ulid(ms); r = 1 + i % 5; sku = "LAMBDA_BENCH"
    img = {"id": {"S": cid}, "sku": {"S": sku}, "sortKey": {"S": f"{ms:013d}#{cid}"},
           "skuRating": {"S": f"{sku}#{r}"}, "author": {"S": "bench"}, "body": {"S": "x" * 120},
           "rating": {"N": str(r)}, "createdAt": {"N": str(ms)}, "version": {"N": "1"}}
    return {"eventID": str(i), "eventName": "INSERT", "eventVersion": "1.1", "eventSource": "aws:dynamodb",
            "awsRegion": "us-east-1", "dynamodb": {"ApproximateCreationDateTime": 1767225600.0,
            "Keys": {"id": {"S": cid}}, "NewImage": img, "SequenceNumber": str(10**20 + i),
            "SizeBytes": 300, "StreamViewType": "NEW_AND_OLD_IMAGES"}}
bodies = [json.dumps({"Records": [record(b * BATCH + j) for j in range(BATCH)]}).encode() for b in range(BATCHES)]
state = {"next": 0, "answered": 0, "start": None, "failures": 0}
done = threading.Event()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        while state["next"] >= len(bodies): time.sleep(1)
        i = state["next"]; state["next"] += 1
        if state["start"] is None: state["start"] = time.perf_counter()
        body = bodies[i]
        self.send_response(200)
        for k, v in [("Lambda-Runtime-Aws-Request-Id", f"r{i}"), ("Lambda-Runtime-Deadline-Ms", str(int(time.time()*1000)+60000)),
                     ("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:1:function:f"), ("Content-Length", str(len(body)))]:
            self.send_header(k, v)
        self.end_headers(); self.wfile.write(body)
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0)); data = self.rfile.read(n)
        if "/error" in self.path or json.loads(data).get("batchItemFailures"): state["failures"] += 1
        self.send_response(202); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"{}")
        state["answered"] += 1
        if state["answered"] == len(bodies): state["end"] = time.perf_counter(); done.set()
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=srv.serve_forever, daemon=True).start()
env = dict(os.environ, AWS_LAMBDA_RUNTIME_API=f"127.0.0.1:{srv.server_address[1]}", AWS_LAMBDA_FUNCTION_NAME="f",
           AWS_LAMBDA_FUNCTION_MEMORY_SIZE="256", AWS_LAMBDA_FUNCTION_VERSION="1", RUST_LOG="warn")
p = subprocess.Popen([sys.argv[4], "lambda-sync", "--index", "redis", "--redis-url", REDIS, "--redis-prefix", f"lb{random.randint(0,10**6)}:"], env=env)
done.wait(300); p.kill()
t = state["end"] - state["start"]; n = BATCH * BATCHES
print(f"{n} records in {BATCHES} batches of {BATCH}: {t:.2f} s = {n/t:.0f} records/s, {t/BATCHES*1000:.2f} ms per batch, failures {state['failures']}")
