// Validates the Kubernetes manifests in deploy/kubernetes offline:
//   node validate.mjs KUSTOMIZE_DIR OUT_DIR     render, validate, write the config for --check
//   node validate.mjs --sync-rules              rewrite base/prometheusrule.yaml from
//                                               deploy/prometheus/alerts.yml
// Rendering covers the kustomize features the manifests use (resources, namespace, images,
// JSON 6902 patches with a target); any other key is an error, never ignored. Every object
// is validated against its API schema (kubernetes-models, @kubernetes-models/
// prometheus-operator); then the rules a DPDK pod must follow are checked. Exit 1 on any
// problem, each printed on its own line.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import YAML from "yaml";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { DaemonSet } from "kubernetes-models/apps/v1/DaemonSet";
import { PodMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor";
import { PrometheusRule } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..", "..");
const problems = [];
const problem = (msg) => problems.push(msg);

// ---- rendering -------------------------------------------------------------------------

const KNOWN_KEYS = new Set(["apiVersion", "kind", "resources", "namespace", "images", "patches"]);

function readDocs(file) {
  return YAML.parseAllDocuments(fs.readFileSync(file, "utf8")).map((d) => {
    if (d.errors.length) throw new Error(`${file}: ${d.errors[0].message}`);
    return d.toJS();
  }).filter((o) => o !== null);
}

function unescapePointer(token) {
  return token.replace(/~1/g, "/").replace(/~0/g, "~");
}

// RFC 6902 add / replace / remove.
function applyPatch(obj, ops, where) {
  for (const op of ops) {
    const tokens = op.path.split("/").slice(1).map(unescapePointer);
    const last = tokens.pop();
    let parent = obj;
    for (const t of tokens) {
      if (parent === undefined || parent === null || !(t in parent)) {
        throw new Error(`${where}: path ${op.path} does not exist`);
      }
      parent = parent[t];
    }
    const exists = Array.isArray(parent) ? Number(last) < parent.length : last in parent;
    if (op.op === "add") {
      if (Array.isArray(parent)) parent.splice(last === "-" ? parent.length : Number(last), 0, op.value);
      else parent[last] = op.value;
    } else if (op.op === "replace" || op.op === "remove") {
      if (!exists) throw new Error(`${where}: ${op.op} ${op.path}: nothing there`);
      if (op.op === "replace") parent[last] = op.value;
      else if (Array.isArray(parent)) parent.splice(Number(last), 1);
      else delete parent[last];
    } else {
      throw new Error(`${where}: unsupported patch op ${op.op}`);
    }
  }
}

function render(dir) {
  const kfile = path.join(dir, "kustomization.yaml");
  const k = readDocs(kfile)[0];
  for (const key of Object.keys(k)) {
    if (!KNOWN_KEYS.has(key)) throw new Error(`${kfile}: kustomize key '${key}' is not supported here`);
  }
  let objs = [];
  for (const r of k.resources || []) {
    const p = path.join(dir, r);
    objs = objs.concat(fs.statSync(p).isDirectory() ? render(p) : readDocs(p));
  }
  if (k.namespace) for (const o of objs) o.metadata.namespace = k.namespace;
  for (const img of k.images || []) {
    for (const o of objs) {
      for (const c of o.spec?.template?.spec?.containers || []) {
        const [name] = c.image.split(":");
        if (name === img.name) c.image = `${img.newName || name}:${img.newTag || "latest"}`;
      }
    }
  }
  for (const [i, p] of (k.patches || []).entries()) {
    const targets = objs.filter((o) => o.kind === p.target.kind && o.metadata.name === p.target.name);
    if (targets.length !== 1) throw new Error(`${kfile}: patch ${i} matches ${targets.length} objects`);
    applyPatch(targets[0], YAML.parse(p.patch), `${kfile}: patch ${i}`);
  }
  return objs;
}

// ---- schemas ---------------------------------------------------------------------------

const MODELS = {
  "v1/ConfigMap": ConfigMap,
  "apps/v1/DaemonSet": DaemonSet,
  "monitoring.coreos.com/v1/PodMonitor": PodMonitor,
  "monitoring.coreos.com/v1/PrometheusRule": PrometheusRule,
};

// The NetworkAttachmentDefinition CRD (k8s.cni.cncf.io/v1) has no published model: its
// schema is spec.config, a string holding a CNI configuration (JSON).
function validateNad(o, name) {
  const cfg = o.spec?.config;
  if (typeof cfg !== "string") return problem(`${name}: spec.config must be a string`);
  let cni;
  try {
    cni = JSON.parse(cfg);
  } catch (e) {
    return problem(`${name}: spec.config is not JSON: ${e.message}`);
  }
  if (!cni.cniVersion || !cni.type) problem(`${name}: the CNI config needs cniVersion and type`);
  if (cni.name !== o.metadata.name) problem(`${name}: the CNI name should be the object's name`);
}

function validateSchema(o) {
  const name = `${o.kind}/${o.metadata?.name}`;
  if (o.apiVersion === "k8s.cni.cncf.io/v1" && o.kind === "NetworkAttachmentDefinition") {
    return validateNad(o, name);
  }
  const Model = MODELS[`${o.apiVersion}/${o.kind}`];
  if (!Model) return problem(`${name}: no schema for ${o.apiVersion} ${o.kind}`);
  try {
    new Model(o).validate();
  } catch (e) {
    problem(`${name}: ${e.message}`);
  }
}

// ---- what a DPDK pod needs -------------------------------------------------------------

const EXTENDED = /^[a-z0-9.-]+\/[a-z0-9_.-]+$/;  // e.g. intel.com/sriov_netdevice

function checkResources(c, name) {
  const req = c.resources?.requests || {};
  const lim = c.resources?.limits || {};
  const keys = new Set([...Object.keys(req), ...Object.keys(lim)]);
  for (const k of keys) {
    if (String(req[k]) !== String(lim[k])) {
      problem(`${name}: ${k} request ${req[k]} != limit ${lim[k]} (a Guaranteed pod needs them equal)`);
    }
  }
  if (!req.cpu || !req.memory) problem(`${name}: cpu and memory requests are required`);
  return { req, keys };
}

function checkDataplane(c, pod, name, nads) {
  const { req, keys } = checkResources(c, name);
  if (!/^[1-9][0-9]*$/.test(String(req.cpu))) {
    problem(`${name}: cpu must be whole CPUs (got ${req.cpu}) for the static CPU manager`);
  }
  if (![...keys].some((k) => k.startsWith("hugepages-"))) problem(`${name}: no hugepages request`);
  const vfs = [...keys].filter((k) => EXTENDED.test(k));
  if (vfs.length !== 1) problem(`${name}: expected one SR-IOV VF resource, got ${vfs}`);
  const sc = c.securityContext || {};
  if (sc.privileged !== false) problem(`${name}: must set privileged: false`);
  const add = [...(sc.capabilities?.add || [])].sort().join(",");
  if (add !== "IPC_LOCK,NET_RAW") problem(`${name}: capabilities added must be IPC_LOCK and NET_RAW, got ${add}`);
  if (!(sc.capabilities?.drop || []).includes("ALL")) problem(`${name}: capabilities must drop ALL`);
  const hp = (pod.volumes || []).find((v) => v.emptyDir?.medium === "HugePages");
  if (!hp || !(c.volumeMounts || []).some((m) => m.name === hp.name)) {
    problem(`${name}: needs an emptyDir with medium HugePages mounted`);
  }
  const nets = pod.annotations?.["k8s.v1.cni.cncf.io/networks"];
  const nad = nads.find((n) => n.metadata.name === nets);
  if (!nad) problem(`${name}: the Multus annotation names '${nets}', which no NetworkAttachmentDefinition defines`);
  else if (!vfs.includes(nad.metadata.annotations?.["k8s.v1.cni.cncf.io/resourceName"])) {
    problem(`${name}: the NetworkAttachmentDefinition's resourceName is not the VF resource requested (${vfs})`);
  }
}

function checkDaemonSet(ds, objs) {
  const pod = { ...ds.spec.template.spec, annotations: ds.spec.template.metadata?.annotations };
  const labels = ds.spec.template.metadata?.labels || {};
  const nads = objs.filter((o) => o.kind === "NetworkAttachmentDefinition");
  const [dp, ctl] = ["dataplane", "control"].map((n) => pod.containers.find((c) => c.name === n));
  if (!dp || !ctl) return problem("DaemonSet: needs containers 'dataplane' and 'control'");
  checkDataplane(dp, pod, "DaemonSet/dataplane", nads);
  checkResources(ctl, "DaemonSet/control");
  const shared = (dp.volumeMounts || []).filter((m) => (ctl.volumeMounts || []).some(
    (n) => n.name === m.name && n.mountPath === m.mountPath));
  if (!shared.length) problem("DaemonSet: the control sidecar shares no volume with the data plane (stats segment)");
  // The data plane writes <runtime dir>/<file_prefix>.stats; the sidecar must read that file.
  const dir = (dp.env || []).find((e) => e.name === "WIRESPEED_RUNTIME_DIR")?.value;
  if (!shared.some((m) => m.mountPath === dir)) {
    problem(`DaemonSet/dataplane: WIRESPEED_RUNTIME_DIR (${dir}) is not a volume shared with the sidecar`);
  }
  const cmd = ctl.command || [];
  const statsPath = cmd[cmd.indexOf("--stats-path") + 1];
  const cfg = objs.find((o) => o.kind === "ConfigMap" && o.data?.["wirespeed.yaml"]);
  const prefix = cfg ? YAML.parse(cfg.data["wirespeed.yaml"])?.dataplane?.file_prefix : undefined;
  if (!cmd.includes("--stats-path") || statsPath !== `${dir}/${prefix}.stats`) {
    problem(`DaemonSet/control: --stats-path must be ${dir}/${prefix}.stats (got ${statsPath})`);
  }
  const port = (ctl.ports || []).find((p) => p.name === "metrics");
  if (!port) problem("DaemonSet/control: no port named metrics");
  const probes = [dp.livenessProbe, ctl.readinessProbe].map((p) => p?.httpGet?.path);
  if (probes[0] !== "/healthz" || probes[1] !== "/readyz") {
    problem(`DaemonSet: probes must use /healthz (dataplane liveness) and /readyz (control readiness), got ${probes}`);
  }
  for (const pm of objs.filter((o) => o.kind === "PodMonitor")) {
    const sel = pm.spec.selector.matchLabels || {};
    if (!Object.entries(sel).every(([k, v]) => labels[k] === v)) problem("PodMonitor: its selector does not match the pods");
    if (!pm.spec.podMetricsEndpoints.every((e) => e.port === port?.name)) problem("PodMonitor: scrapes a port the pod does not name");
  }
}

// ---- alert rules: one source ------------------------------------------------------------

const ALERTS = path.join(root, "deploy", "prometheus", "alerts.yml");
const RULE_FILE = path.join(root, "deploy", "kubernetes", "base", "prometheusrule.yaml");

function ruleObject() {
  return {
    apiVersion: "monitoring.coreos.com/v1",
    kind: "PrometheusRule",
    metadata: { name: "wirespeed", labels: { "app.kubernetes.io/name": "wirespeed" } },
    spec: { groups: YAML.parse(fs.readFileSync(ALERTS, "utf8")).groups },
  };
}

function checkRules(objs) {
  const rules = objs.filter((o) => o.kind === "PrometheusRule");
  const want = JSON.stringify(ruleObject().spec);
  if (rules.length !== 1 || JSON.stringify(rules[0].spec) !== want) {
    problem("PrometheusRule: differs from deploy/prometheus/alerts.yml; run: node tests/k8s/validate.mjs --sync-rules");
  }
}

// ---- main ------------------------------------------------------------------------------

function main(argv) {
  if (argv[0] === "--sync-rules") {
    const header = "# Generated from deploy/prometheus/alerts.yml by `node tests/k8s/validate.mjs --sync-rules`;\n" +
      "# the unit suite fails when the two differ.\n";
    fs.writeFileSync(RULE_FILE, header + YAML.stringify(ruleObject(), { lineWidth: 0 }));
    return 0;
  }
  const [dir, out] = argv;
  if (!dir || !out) {
    console.error("usage: validate.mjs KUSTOMIZE_DIR OUT_DIR | --sync-rules");
    return 2;
  }
  let objs;
  try {
    objs = render(dir);
  } catch (e) {
    console.error(`validate: ${e.message}`);
    return 1;
  }
  objs.forEach(validateSchema);
  for (const ds of objs.filter((o) => o.kind === "DaemonSet")) checkDaemonSet(ds, objs);
  checkRules(objs);
  fs.mkdirSync(out, { recursive: true });
  for (const cm of objs.filter((o) => o.kind === "ConfigMap" && o.data?.["wirespeed.yaml"])) {
    fs.writeFileSync(path.join(out, `${cm.metadata.name}.yaml`), cm.data["wirespeed.yaml"]);
  }
  for (const p of problems) console.error(`validate: ${dir}: ${p}`);
  console.log(`validate: ${dir}: ${objs.length} objects (${objs.map((o) => o.kind).join(", ")}), ` +
    `${problems.length} problems`);
  return problems.length ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
