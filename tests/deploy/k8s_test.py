"""deploy/k8s: every manifest validates with kubernetes-validate --strict (the Kubernetes
schemas; the Gateway API CRDs have none there and are checked for their required fields
here), the kustomization lists every manifest, and the Deployment matches the g4 it runs: each
flag is one `g4 <command> --help` knows, the probes use g4's routes, the port is the
container's, and the termination grace covers preStop plus --shutdown-grace.

usage: k8s_test.py G4_BINARY  (run with .venv-test's python: kubernetes-validate, PyYAML)
"""
import pathlib
import re
import subprocess
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
G4 = sys.argv[1]
VALIDATE = pathlib.Path(sys.executable).parent / "kubernetes-validate"


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def load(path):
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


manifests = sorted(p for p in K8S.rglob("*.yaml") if p.name != "kustomization.yaml")
result = subprocess.run([str(VALIDATE), "--strict", *map(str, manifests)],
                        capture_output=True, text=True)
print(result.stdout + result.stderr, end="")
if result.returncode != 0:
    fail("kubernetes-validate --strict")
crd_kinds = {"InferencePool", "InferenceObjective", "HTTPRoute"}
for path in manifests:
    for doc in load(path):
        kind = doc["kind"]
        if kind in crd_kinds:
            continue  # no schema in kubernetes-validate: checked below
        if f"{path.relative_to(ROOT)} passed for resource {kind.lower()}/" not in result.stdout + result.stderr:
            fail(f"{path}: {kind} was not validated against a schema")

# The Gateway API objects: the fields their CRDs require, and references that resolve.
docs = {d["kind"]: d for p in manifests for d in load(p)}
pool = docs["InferencePool"]
if pool["apiVersion"] != "inference.networking.k8s.io/v1":
    fail(f"InferencePool apiVersion {pool['apiVersion']}")
for field in ("selector", "targetPorts", "endpointPickerRef"):
    if field not in pool["spec"]:
        fail(f"InferencePool.spec.{field} missing")
deployment = docs["Deployment"]
if pool["spec"]["selector"]["matchLabels"] != deployment["spec"]["template"]["metadata"]["labels"]:
    fail("InferencePool selector does not select the g4 pods")
if docs["InferenceObjective"]["spec"]["poolRef"]["name"] != pool["metadata"]["name"]:
    fail("InferenceObjective.poolRef is not the pool")
backend = docs["HTTPRoute"]["spec"]["rules"][0]["backendRefs"][0]
if (backend["kind"], backend["name"]) != ("InferencePool", pool["metadata"]["name"]):
    fail("HTTPRoute does not route to the pool")

# The kustomization names every top-level manifest.
kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
listed = set(kustomization["resources"])
top = {p.name for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml"}
if listed != top:
    fail(f"kustomization resources {sorted(listed)} != manifests {sorted(top)}")

# The Deployment against the binary.
help_cache = {}


def flags_of(command):
    if command not in help_cache:
        out = subprocess.run([G4, command, "--help"], capture_output=True, text=True)
        if out.returncode != 0:
            fail(f"g4 {command} --help: {out.stderr}")
        help_cache[command] = set(re.findall(r"--[a-z][a-z0-9-]*", out.stdout))
    return help_cache[command]


pod = deployment["spec"]["template"]["spec"]
serve = None
for c in pod.get("initContainers", []) + pod["containers"]:
    args = c["args"]
    known = flags_of(args[0])
    for a in args[1:]:
        if a.startswith("--") and a.split("=")[0] not in known:
            fail(f"container {c['name']}: g4 {args[0]} has no flag {a}")
    if args[0] == "serve":
        serve = c
if serve is None:
    fail("no container runs g4 serve")
args = serve["args"]
value = lambda flag: args[args.index(flag) + 1]
port = int(value("--port"))
if serve["ports"][0]["containerPort"] != port:
    fail("containerPort is not --port")
if value("--host") != "0.0.0.0":
    fail("g4 serve must listen on 0.0.0.0 in a pod")
for probe, path in (("startupProbe", "/health"), ("readinessProbe", "/health"),
                    ("livenessProbe", "/metrics")):
    if serve[probe]["httpGet"]["path"] != path:
        fail(f"{probe} must GET {path}")
pre_stop = int(serve["lifecycle"]["preStop"]["exec"]["command"][1])
grace = int(value("--shutdown-grace"))
if pod["terminationGracePeriodSeconds"] < pre_stop + grace + 1:
    fail(f"terminationGracePeriodSeconds {pod['terminationGracePeriodSeconds']} < preStop "
         f"{pre_stop} + --shutdown-grace {grace}")
print("k8s_test: ok")
