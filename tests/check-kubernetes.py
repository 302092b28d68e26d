#!/usr/bin/env python3
"""check-kubernetes.py - the example Kubernetes manifests (etc/kubernetes/) and the README's
autoscaling examples say what they promise.

No schema validator for Kubernetes objects is packaged by Debian (kubeconform and kubeval
are not; Debian's kubectl validates only against a cluster), so this parses every manifest
with PyYAML and checks the fields the README promises and the references between them:
the Deployment's /healthz and /readyz probes on the port twice.conf listens on, its
terminationGracePeriodSeconds above drain_timeout + 15, the ConfigMap mounted where twiced
reads twice.conf, the service account's IRSA annotation, the KEDA and HPA objects aiming at
the Deployment and naming metrics twiced exports (and the queue twice.conf consumes). The
ConfigMap's twice.conf is checked by `twiced -t` itself when TWICE_BIN_DIR and
TWICE_PLUGIN_BUILD_DIR are set (ctest sets them). Exit 0, or 1 with one line per problem.
Run by ctest as unit/kubernetes.
"""
import os
import re
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFESTS = os.path.join(ROOT, "etc", "kubernetes")
problems = []


def problem(where, text):
    problems.append("%s: %s" % (where, text))


def exported_metrics():
    """The metric names core/proc/metrics.c renders (internal ones are not rendered)."""
    with open(os.path.join(ROOT, "core", "proc", "metrics.c"), encoding="utf-8") as f:
        names = set(re.findall(r'"(twice_[a-z0-9_]+)"', f.read()))
    return {n for n in names if not n.startswith("twice_internal_")} | {"twice_build_info"}


def check_query(where, text, exported):
    names = re.findall(r"\b(twice_[a-z0-9_]+)", text)
    if not names:
        problem(where, "names no twice_ metric: %r" % text)
    for name in names:
        if re.sub(r"_(bucket|sum|count)$", "", name) not in exported:
            problem(where, "%s is not a metric twiced exports" % name)


def load_all():
    objects = []
    for f in sorted(os.listdir(MANIFESTS)):
        if not f.endswith(".yaml"):
            continue
        with open(os.path.join(MANIFESTS, f), encoding="utf-8") as fh:
            try:
                docs = [d for d in yaml.safe_load_all(fh) if d is not None]
            except yaml.YAMLError as e:
                problem(f, "not YAML: %s" % e)
                continue
        for d in docs:
            for key in ("apiVersion", "kind", "metadata"):
                if key not in d:
                    problem(f, "an object without %s" % key)
            objects.append((f, d))
    return objects


def one(objects, kind, name=None):
    found = [(f, d) for f, d in objects if d.get("kind") == kind and
             (name is None or d["metadata"].get("name") == name)]
    if len(found) != 1:
        problem("etc/kubernetes", "%d %s objects%s, want 1" % (
            len(found), kind, "" if name is None else " named " + name))
        return None, {}
    return found[0]


def conf_value(conf, name):
    m = re.search(r"^\s*%s\s*=\s*\"?([^\";]*)\"?\s*;" % re.escape(name), conf, re.M)
    return m.group(1) if m else None


def check_deployment(objects, conf):
    f, dep = one(objects, "Deployment")
    if not dep:
        return None
    spec = dep["spec"]["template"]["spec"]
    c = spec["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    listen = conf_value(conf, "listen") or ""
    if listen.rpartition(":")[2] != str(ports.get("metrics")):
        problem(f, "port metrics %s is not metrics.listen %r" % (ports.get("metrics"), listen))
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = c.get(probe, {}).get("httpGet", {})
        if get.get("path") != path or get.get("port") not in ("metrics", ports.get("metrics")):
            problem(f, "%s is not GET %s on the metrics port" % (probe, path))
    drain = int(conf_value(conf, "drain_timeout") or 30)
    grace = spec.get("terminationGracePeriodSeconds", 30)
    if grace <= drain + 15:
        problem(f, "terminationGracePeriodSeconds %d is not above drain_timeout %d + 15"
                % (grace, drain))
    argv = c.get("command", []) + c.get("args", [])
    conf_path = argv[argv.index("-c") + 1] if "-c" in argv else None
    mounts = {m["name"]: m["mountPath"] for m in c.get("volumeMounts", [])}
    volumes = {v["name"]: v.get("configMap", {}).get("name") for v in spec.get("volumes", [])}
    if not any(conf_path == os.path.join(mounts.get(v, ""), "twice.conf") and cm == "twice-config"
               for v, cm in volumes.items()):
        problem(f, "twiced's -c %s is not the ConfigMap twice-config's twice.conf" % conf_path)
    _, sa = one(objects, "ServiceAccount", spec.get("serviceAccountName"))
    role = sa.get("metadata", {}).get("annotations", {}).get("eks.amazonaws.com/role-arn", "")
    if not role.startswith("arn:aws:iam::"):
        problem("serviceaccount.yaml", "no IRSA annotation eks.amazonaws.com/role-arn")
    return dep["metadata"]["name"]


def check_scalers(objects, deployment, conf, exported):
    queue_urls = set(re.findall(r'^\s*url\s*=\s*"([^"]+)"', conf, re.M))
    auths = {d["metadata"]["name"] for _, d in objects if d["kind"] == "TriggerAuthentication"}
    kinds = set()
    for f, d in objects:
        if d["kind"] == "ScaledObject":
            if d["spec"]["scaleTargetRef"]["name"] != deployment:
                problem(f, "scaleTargetRef is not the Deployment %s" % deployment)
            for t in d["spec"]["triggers"]:
                kinds.add(t["type"])
                md = t["metadata"]
                if t["type"] == "aws-sqs-queue":
                    if md.get("queueURL") not in queue_urls:
                        problem(f, "queueURL %s is not a queue of twice.conf" % md.get("queueURL"))
                    if t.get("authenticationRef", {}).get("name") not in auths:
                        problem(f, "authenticationRef names no TriggerAuthentication")
                elif t["type"] == "prometheus":
                    check_query(f, md.get("query", ""), exported)
        elif d["kind"] == "HorizontalPodAutoscaler":
            kinds.add("hpa")
            if d["spec"]["scaleTargetRef"]["name"] != deployment:
                problem(f, "scaleTargetRef is not the Deployment %s" % deployment)
            for m in d["spec"]["metrics"]:
                check_query(f, m["external"]["metric"]["name"], exported)
    for want in ("aws-sqs-queue", "prometheus", "hpa"):
        if want not in kinds:
            problem("etc/kubernetes", "no %s example" % want)


def check_readme(exported):
    """The README's autoscaling YAML parses and every query names a real metric."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^## Autoscaling.*?(?=^## )", text, re.M | re.S)
    if not m:
        problem("README.md", "no \"## Autoscaling\" section")
        return
    blocks = re.findall(r"```yaml\n(.*?)```", m.group(0), re.S)
    queries = 0
    for b in blocks:
        try:
            docs = list(yaml.safe_load_all(b))
        except yaml.YAMLError as e:
            problem("README.md", "an autoscaling example is not YAML: %s" % e)
            continue
        for d in docs:
            for t in (d or {}).get("spec", {}).get("triggers", []):
                if t.get("type") == "prometheus":
                    queries += 1
                    check_query("README.md", t["metadata"].get("query", ""), exported)
    if queries == 0:
        problem("README.md", "the autoscaling section has no KEDA prometheus trigger")


def check_config(conf):
    bindir, plugins = os.environ.get("TWICE_BIN_DIR"), os.environ.get("TWICE_PLUGIN_BUILD_DIR")
    if not bindir or not plugins:
        print("check-kubernetes: TWICE_BIN_DIR unset: twice.conf not checked by twiced -t")
        return
    with tempfile.NamedTemporaryFile("w", suffix=".conf") as f:
        f.write('plugin_dir = "%s";\n' % plugins + conf)
        f.flush()
        r = subprocess.run([os.path.join(bindir, "twiced"), "-t", "-c", f.name],
                           capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, AWS_EC2_METADATA_DISABLED="true"))
        if r.returncode != 0:
            problem("configmap.yaml", "twiced -t: %s" % (r.stderr or r.stdout).strip())


def main():
    exported = exported_metrics()
    objects = load_all()
    _, cm = one(objects, "ConfigMap", "twice-config")
    conf = cm.get("data", {}).get("twice.conf", "")
    deployment = check_deployment(objects, conf)
    check_scalers(objects, deployment, conf, exported)
    check_readme(exported)
    check_config(conf)
    for p in problems:
        print(p)
    print("check-kubernetes: %d objects, %d problems" % (len(objects), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
