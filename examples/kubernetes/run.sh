#!/usr/bin/env bash
# Run the Kubernetes recipe: the sharded sweep, then the merge once every shard is complete,
# and copy the report out. Needs kubectl pointing at the cluster and the image built and
# pushed where the cluster pulls from (see Dockerfile).
#
#   examples/kubernetes/run.sh [grid.json]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-grid.json}
kubectl delete job simbench-grid simbench-merge --ignore-not-found
kubectl apply -f "$here/sweep-job.yaml"
# Wait until the Job is Complete, or Failed once a shard has used up its retries.
while :; do
    state=$(kubectl get job simbench-grid -o jsonpath='{.status.conditions[?(@.status=="True")].type}')
    case "$state" in
        *Complete*) break ;;
        *Failed*) echo "run.sh: a shard failed; see kubectl logs -l job-name=simbench-grid" >&2; exit 1 ;;
    esac
    sleep 10
done
kubectl apply -f "$here/merge-job.yaml"
kubectl wait --for=condition=complete job/simbench-merge --timeout=30m
kubectl logs job/simbench-merge > "$out"
echo "run.sh: wrote $out" >&2
