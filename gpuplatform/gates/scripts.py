"""The in-cluster half of each gate: a POSIX sh script that reads the cluster with kubectl and runs
the gate's jq program (`gates/programs.py`) on it, attempt after attempt.

The script is the same in every wave: it ships once per platform (a ConfigMap of
`delivery/gates/`), and each wave's gate Job carries only its data, the wave's facts as a JSON
file (`DATA_FILE`, from a ConfigMap of the wave) and the attempt's length (`TIMEOUT`, seconds).
The facts are read with `--slurpfile`, never passed as an argument: an argument or environment
string is limited to 128 KiB (Linux MAX_ARG_STRLEN), and a large static pool's facts exceed it.

Exit codes, which the gate Job's `podFailurePolicy` keys on:
- 0: the invariant holds (proofs printed);
- 3: it did not hold within one attempt (`TIMEOUT` seconds of re-checking every 10 s): the Job
  ignores the failure and starts a fresh attempt, so a gate re-runs by itself once the operator
  fixes the cluster and never blocks a Flux Kustomization forever;
- 1: broken in a way a new attempt cannot mend (a removed validation pod's claim stays
  allocated): the Job fails.
"""

from __future__ import annotations

from gpuplatform.gates.programs import prelude_for, program

__all__ = ["KUBECTL_TIMEOUT", "RELEASE_SECONDS", "gate_script", "quote"]

#: Seconds one kubectl call may take. Bounded with `timeout`, not kubectl's `--request-timeout`: any
#: such flag makes client-go's merged config differ from its default, and then kubectl ignores the
#: pod's in-cluster config and dials localhost:8080 (k8s.io/client-go v0.36.3
#: tools/clientcmd/merged_client_builder.go `DeferredLoadingClientConfig.ClientConfig`: in-cluster
#: only when `IsDefaultConfig`). Found by the rehearsal: every gate's first read failed in a pod.
KUBECTL_TIMEOUT = 30
RELEASE_SECONDS = 300
_LOG_PODS = '{{pods: $pods[0].items}} as $in | {logs} | select(.status.phase == "Running") | "\\(.metadata.namespace) \\(.metadata.name)"\n'
#: Binds the facts file read with `--slurpfile facts` to `$data`, as the programs expect.
_FACTS = "$facts[0] as $data | "
_SOURCES = {
    "nodes": "nodes",
    "pods": "pods -A",
    "resourceslices": "resourceslices.resource.k8s.io",
    "resourceclaims": "resourceclaims.resource.k8s.io -A",
    "deviceclasses": "deviceclasses.resource.k8s.io",
}


def quote(value: str) -> str:
    """`value` as one single-quoted sh word."""
    return "'" + value.replace("'", "'\"'\"'") + "'"


def _collect(kinds: tuple[str, ...], logs: str) -> list[str]:
    lines = ["collect() {"]
    lines += [
        f'  k get {_SOURCES[kind]} -o json > "$T/{kind}.json" || {{ echo "unknown: {kind} could not be read"; return 1; }}'
        for kind in kinds
    ]
    lines.append("  echo '{}' > \"$T/logs.json\"")
    if logs:
        lines += [
            '  jq -r -n --slurpfile facts "$DATA_FILE" --slurpfile pods "$T/pods.json" "$LOG_PODS" > "$T/log-pods" || return 1',
            "  while read -r ns pod; do",
            '    k logs -n "$ns" "$pod" > "$T/log" 2>&1 || continue',
            '    jq --arg k "$ns/$pod" --rawfile v "$T/log" \'. + {($k): $v}\' "$T/logs.json" > "$T/logs.next" || return 1',
            '    mv "$T/logs.next" "$T/logs.json"',
            '  done < "$T/log-pods"',
        ]
    lines.append("}")
    return lines


def _verdict(kinds: tuple[str, ...]) -> list[str]:
    files = " ".join(f'--slurpfile {kind} "$T/{kind}.json"' for kind in kinds)
    return [
        "verdict() {",
        f'  jq -r -n --slurpfile facts "$DATA_FILE" {files} --slurpfile logs "$T/logs.json" "$PROGRAM"',
        "}",
    ]


_RUNTIME = f"""
released() {{
  if out=$(k get resourceclaims.resource.k8s.io -n "$1" "$2" -o json 2>&1); then
    printf '%s' "$out" | jq -e '.status.allocation == null' >/dev/null
  else
    case "$out" in *NotFound*|*"not found"*) return 0;; esac
    return 1
  fi
}}

release() {{
  k delete pod -n "$1" "$2" --wait=false >/dev/null || {{ echo "unknown: could not remove $1/$2"; return 1; }}
  echo "proof: removed validation pod $1/$2"
  [ "$3" = - ] && return 0
  until=$(( $(date +%s) + {RELEASE_SECONDS} ))
  while ! released "$1" "$3"; do
    if [ "$(date +%s)" -ge "$until" ]; then
      echo "violation: claim $1/$3 is still allocated {RELEASE_SECONDS} s after its pod was removed"
      return 2
    fi
    sleep 5
  done
  echo "proof: claim $1/$3 released after its pod was removed"
}}

check() {{
  collect || return 1
  verdict > "$T/verdict" || {{ echo "unknown: the verdict program failed"; return 1; }}
  grep -v '^act: ' "$T/verdict" || true
  if grep -q -e '^violation: ' -e '^unknown: ' "$T/verdict"; then return 1; fi
  grep '^act: ' "$T/verdict" > "$T/acts" || return 0
  while read -r _ _ ns pod claim; do release "$ns" "$pod" "$claim" || return $?; done < "$T/acts"
}}

deadline=$(( $(date +%s) + TIMEOUT ))
while :; do
  if out=$(check 2>&1); then
    printf '%s\\n' "$out"
    echo "gate $GATE holds"
    exit 0
  else
    rc=$?
  fi
  if [ "$rc" -eq 2 ]; then
    printf '%s\\n' "$out" >&2
    echo "gate $GATE is broken" >&2
    exit 1
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    printf '%s\\n' "$out" >&2
    echo "gate $GATE does not hold yet; the Job starts a new attempt" >&2
    exit 3
  fi
  sleep 10
done
"""


def _items(kind: str) -> str:
    """The objects kubectl listed of `kind`, as the programs read them: ResourceSlices `summarised`."""
    items = f"${kind}[0].items"
    return f"({items} | summarised)" if kind == "resourceslices" else items


def gate_script(gate_id: str, kinds: tuple[str, ...], logs: str) -> str:
    """The whole script of one gate: its jq program, the collection and the retry loop. The Job
    gives it `DATA_FILE` (the wave's facts) and `TIMEOUT` in its environment."""
    source = "{" + ", ".join(f"{kind}: {_items(kind)}" for kind in kinds) + ", logs: $logs[0]}"
    lines = [
        "set -eu",
        f"GATE={gate_id}",
        ': "${DATA_FILE:?the gate Job sets DATA_FILE}" "${TIMEOUT:?the gate Job sets TIMEOUT}"',
        f"PROGRAM={quote(_FACTS + program(gate_id, source))}",
    ]
    if logs:
        selection = _LOG_PODS.format(logs=logs)
        lines.append(f"LOG_PODS={quote(_FACTS + prelude_for(selection) + selection)}")
    lines += [
        "T=$(mktemp -d)",
        f'k() {{ timeout {KUBECTL_TIMEOUT} kubectl "$@"; }}',
        *_collect(kinds, logs),
        *_verdict(kinds),
    ]
    return "\n".join(lines) + "\n" + _RUNTIME
