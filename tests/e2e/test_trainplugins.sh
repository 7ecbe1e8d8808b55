#!/usr/bin/env bash
# The distributed-training job plugins against the real control plane: Volcano's example
# PyTorch, MPI, TensorFlow and Ray Jobs (manifests/examples, unmodified) run under
# kiln-controller and kiln-scheduler on kwok nodes, and the pods, Services, ConfigMaps and
# Secrets read back from the API server carry, field by field, what Volcano's plugins give them.
# Both processes run as their own ServiceAccounts with manifests/rbac-*.yaml's grants, so a call
# of the plugins' paths that the RBAC does not grant fails the suite (finally_nothing_forbidden).
source "$(dirname "$0")/lib.sh"
SUITE=trainplugins

EXAMPLES=$KILN_ROOT/manifests/examples

# start NAME ARGS...: run kiln-NAME in the background as the ServiceAccount kiln-NAME; the pid
# files let tests/e2e/run stop it. Where its log starts for this suite is kept.
start() {
  local name=$1 tok
  shift
  mkdir -p "$KILN_CLUSTER_DIR/logs" "$KILN_CLUSTER_DIR/pids"
  tok=$(kubectl create token "kiln-$name" -n kiln-system --duration=2h) || return 1
  kubeconfig_with "$KILN_CLUSTER_DIR/tp-kc-$name" "    token: $tok"
  log_lines "$KILN_CLUSTER_DIR/logs/kiln-$name.log" >"$KILN_CLUSTER_DIR/tp-log-from-$name"
  # KUBE_POD_NAMESPACE as manifests/controller.yaml sets it (the pod's namespace): where the
  # hyperNode-controller reads its ConfigMap, and all the service account's Role grants.
  KUBE_POD_NAMESPACE=kiln-system \
    "$KILN_BUILD/$name/kiln-$name" --kubeconfig "$KILN_CLUSTER_DIR/tp-kc-$name" --leader-elect=false -v=2 "$@" \
    >>"$KILN_CLUSTER_DIR/logs/kiln-$name.log" 2>&1 </dev/null &
  echo $! >"$KILN_CLUSTER_DIR/pids/kiln-$name.pid"
  echo "$KILN_BUILD/$name/kiln-$name" >"$KILN_CLUSTER_DIR/pids/kiln-$name.exe"
}

setup() {
  kubectl apply --server-side -f "$KILN_ROOT/manifests/crd/" >/dev/null || return 1
  local i
  for i in $(seq 1 120); do # a CRD just created may have no conditions yet: kubectl wait refuses
    kubectl wait --for=condition=Established --timeout=5s crd --all >/dev/null 2>&1 && break
    [ "$i" -lt 120 ] || return 1
    sleep 0.5
  done
  kubectl apply --server-side -f "$KILN_ROOT/manifests/queue-default.yaml" >/dev/null || return 1
  local f
  for f in namespace rbac-controller rbac-scheduler; do
    kubectl apply --server-side --force-conflicts -f "$KILN_ROOT/manifests/$f.yaml" >/dev/null ||
      return 1
  done
  start controller
  start scheduler
}

# all_running NS N: N pods in NS, every one bound to a (kwok) node and Running. Any node will
# do: in CI other suites' nodes may be in the cluster too.
all_running() {
  local out
  out=$(kubectl get pods -n "$1" -o \
    'jsonpath={range .items[*]}{.spec.nodeName}{" "}{.status.phase}{"\n"}{end}' 2>/dev/null)
  [ "$(grep -c '^[^ ][^ ]* Running$' <<<"$out")" -eq "$2" ]
}

# run_example FILE N: a namespace with the example applied and its N pods running; prints it.
run_example() {
  local ns
  ns=$(new_namespace "tp-$(basename "$1" .yaml | tr -c 'a-z0-9\n' -)")
  kubectl apply -n "$ns" -f "$EXAMPLES/$1" >/dev/null || fail "cannot apply $1"
  wait_for 120 "$2 pods of $1 running on kwok nodes" all_running "$ns" "$2"
  echo "$ns"
}

# expect_json WANT GOT WHAT: equal as JSON values (key order aside).
expect_json() {
  expect_eq "$(jq -cS . <<<"$1")" "$(jq -cS . <<<"$2")" "$3"
}

getj() { # ns kind/name [jq filter]
  kubectl get -n "$1" "$2" -o json | jq -c "${3:-.}"
}

# The env of a pod's first container as {name: value}, a ConfigMap reference as "cm:<name>/<key>".
ENV_FILTER='.spec.containers[0].env | map({(.name): (.value // ("cm:" + .valueFrom.configMapKeyRef.name + "/" + .valueFrom.configMapKeyRef.key))}) | add'

# svc_env JOB TASK...: the VC_<TASK>_HOSTS/_NUM entries the svc plugin adds, as JSON members.
svc_env() {
  local job=$1 t up out=""
  shift
  for t in "$@"; do
    up=$(tr 'a-z-' 'A-Z_' <<<"$t")
    out+="\"VC_${up}_HOSTS\":\"cm:$job-svc/VC_${up}_HOSTS\",\"VC_${up}_NUM\":\"cm:$job-svc/VC_${up}_NUM\","
  done
  echo "${out%,}"
}

# expect_svc NS JOB HOSTS_JSON: the headless Service, the host ConfigMap and the pods' DNS names
# the svc plugin makes.
expect_svc() {
  local ns=$1 job=$2
  expect_json "{\"clusterIP\":\"None\",\"selector\":{\"volcano.sh/job-name\":\"$job\",\"volcano.sh/job-namespace\":\"$ns\"},\"ports\":[{\"name\":\"placeholder-volcano\",\"port\":1,\"protocol\":\"TCP\",\"targetPort\":1}]}" \
    "$(getj "$ns" "svc/$job" '.spec | {clusterIP, selector, ports}')" "Service $job"
  expect_json "$3" "$(getj "$ns" "cm/$job-svc" .data)" "ConfigMap $job-svc"
  expect_eq "$job" "$(getj "$ns" "svc/$job" '.metadata.ownerReferences[0].name' | tr -d '"')" \
    "Service owner"
  local p
  for p in $(kubectl get pods -n "$ns" -o name); do
    expect_json "{\"hostname\":\"${p#pod/}\",\"subdomain\":\"$job\"}" \
      "$(getj "$ns" "$p" '.spec | {hostname, subdomain}')" "$p hostname and subdomain"
    expect_json "[{\"name\":\"$job-svc\",\"mountPath\":\"/etc/volcano\"}]" \
      "$(getj "$ns" "$p" "[.spec.containers[0].volumeMounts[] | select(.name == \"$job-svc\") | {name, mountPath}]")" \
      "$p mounts the host lists"
  done
}

# ---- tests ----

test_pytorch_master_and_two_workers() {
  local ns j=pytorch-job
  ns=$(run_example job-pytorch.yaml 3)
  local addr="\"MASTER_ADDR\":\"$j-master-0.$j\",\"MASTER_PORT\":\"23456\",\"WORLD_SIZE\":\"3\""
  local svc port='[{"name":"pytorchjob-port","containerPort":23456,"protocol":"TCP"}]'
  svc=$(svc_env $j master worker)
  expect_json "{$addr,\"RANK\":\"0\",$svc}" "$(getj "$ns" pod/$j-master-0 "$ENV_FILTER")" \
    "master env"
  expect_json "{$addr,\"RANK\":\"1\",$svc}" "$(getj "$ns" pod/$j-worker-0 "$ENV_FILTER")" \
    "worker-0 env"
  expect_json "{$addr,\"RANK\":\"2\",$svc}" "$(getj "$ns" pod/$j-worker-1 "$ENV_FILTER")" \
    "worker-1 env"
  local p
  for p in master-0 worker-0 worker-1; do
    expect_json "$port" "$(getj "$ns" pod/$j-$p '.spec.containers[0].ports')" "$p ports"
    expect_eq 8 "$(getj "$ns" pod/$j-$p '.spec.containers[0].env | length')" "$p env count"
  done
  # svc is implied by pytorch (Volcano's webhook adds it): Service, ConfigMap, DNS names
  expect_svc "$ns" $j "{\"master.host\":\"$j-master-0.$j\",\"worker.host\":\"$j-worker-0.$j\n$j-worker-1.$j\",\"VC_MASTER_HOSTS\":\"$j-master-0.$j\",\"VC_MASTER_NUM\":\"1\",\"VC_WORKER_HOSTS\":\"$j-worker-0.$j,$j-worker-1.$j\",\"VC_WORKER_NUM\":\"2\"}"
  expect_json '{"plugin-pytorch":"pytorch","plugin-svc":"svc"}' \
    "$(getj "$ns" vcjob/$j .status.controlledResources)" "controlledResources"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

test_mpi_master_and_workers() {
  local ns j=lm-mpi-job
  ns=$(run_example job-mpi.yaml 3)
  local svc port='[{"name":"mpijob-port","containerPort":22,"protocol":"TCP"}]'
  svc=$(svc_env $j mpimaster mpiworker)
  expect_json "{\"MPI_HOST\":\"$j-mpiworker-0.$j,$j-mpiworker-1.$j\",$svc}" \
    "$(getj "$ns" pod/$j-mpimaster-0 "$ENV_FILTER")" "master env"
  local p
  for p in mpiworker-0 mpiworker-1; do
    expect_json "{$svc}" "$(getj "$ns" pod/$j-$p "$ENV_FILTER")" "$p env"
  done
  for p in mpimaster-0 mpiworker-0 mpiworker-1; do
    # the template's own ssh port is not opened twice
    expect_json "$port" "$(getj "$ns" pod/$j-$p '.spec.containers[0].ports')" "$p ports"
    expect_json "[{\"name\":\"$j-ssh\",\"mountPath\":\"/root/.ssh\",\"subPath\":\".ssh\"}]" \
      "$(getj "$ns" pod/$j-$p "[.spec.containers[0].volumeMounts[] | select(.name == \"$j-ssh\") | {name, mountPath, subPath}]")" \
      "$p mounts the ssh keys"
    expect_json "{\"secretName\":\"$j-ssh\",\"defaultMode\":384,\"items\":[{\"key\":\"id_rsa\",\"path\":\".ssh/id_rsa\"},{\"key\":\"id_rsa.pub\",\"path\":\".ssh/id_rsa.pub\"},{\"key\":\"authorized_keys\",\"path\":\".ssh/authorized_keys\"},{\"key\":\"config\",\"path\":\".ssh/config\"}]}" \
      "$(getj "$ns" pod/$j-$p ".spec.volumes[] | select(.name == \"$j-ssh\") | .secret")" \
      "$p ssh volume"
  done
  expect_svc "$ns" $j "{\"mpimaster.host\":\"$j-mpimaster-0.$j\",\"mpiworker.host\":\"$j-mpiworker-0.$j\n$j-mpiworker-1.$j\",\"VC_MPIMASTER_HOSTS\":\"$j-mpimaster-0.$j\",\"VC_MPIMASTER_NUM\":\"1\",\"VC_MPIWORKER_HOSTS\":\"$j-mpiworker-0.$j,$j-mpiworker-1.$j\",\"VC_MPIWORKER_NUM\":\"2\"}"
  # the ssh Secret: a key pair whose public half is authorized, and the hosts' ssh config
  expect_json '["authorized_keys","config","id_rsa","id_rsa.pub"]' \
    "$(getj "$ns" secret/$j-ssh '.data | keys')" "Secret keys"
  local pub auth cfg want
  pub=$(kubectl get -n "$ns" secret/$j-ssh -o 'jsonpath={.data.id_rsa\.pub}' | base64 -d)
  auth=$(kubectl get -n "$ns" secret/$j-ssh -o 'jsonpath={.data.authorized_keys}' | base64 -d)
  expect_eq "$pub" "$auth" "authorized_keys is the public key"
  expect_match '^ssh-rsa AAAA' "$pub" "public key"
  cfg=$(kubectl get -n "$ns" secret/$j-ssh -o 'jsonpath={.data.config}' | base64 -d)
  want="StrictHostKeyChecking no
UserKnownHostsFile /dev/null"
  for p in mpimaster-0 mpiworker-0 mpiworker-1; do
    want+="
Host $j-$p
  HostName $j-$p.$j
  Port 22"
  done
  expect_eq "$want" "$cfg" "ssh config"
  expect_json '{"plugin-mpi":"mpi","plugin-ssh":"ssh","plugin-svc":"svc"}' \
    "$(getj "$ns" vcjob/$j .status.controlledResources)" "controlledResources"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# in_the_way NS JOB: the Job's Warning event names its planted Secret.
in_the_way() {
  kubectl get events -n "$1" --field-selector "involvedObject.name=$2,reason=ObjectInTheWay" \
    -o 'jsonpath={.items[*].message}' 2>/dev/null | grep -q "Secret $2-ssh is in the way"
}

# Issue 27 finding 5: a Secret made beforehand under the name the ssh plugin uses, by someone
# else, is never mounted as the Job's keys: the Job says which object is in the way and makes
# no pod until it is gone; then it makes its own Secret, owned by the Job.
test_planted_secret_is_not_mounted() {
  local ns j=planted
  ns=$(new_namespace tp-planted)
  kubectl create secret generic -n "$ns" "$j-ssh" --from-literal=id_rsa=not-yours >/dev/null
  kubectl apply -n "$ns" -f - >/dev/null <<JOB || fail "cannot apply the Job"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $j}
spec:
  schedulerName: volcano
  minAvailable: 1
  plugins: {ssh: []}
  tasks:
  - name: w
    replicas: 1
    template:
      spec:
        restartPolicy: Never
        containers: [{name: main, image: busybox}]
JOB
  wait_for 60 "the Warning event naming the planted Secret" in_the_way "$ns" "$j"
  expect_eq 0 "$(kubectl get pods -n "$ns" --no-headers 2>/dev/null | wc -l)" \
    "pods while the Secret is in the way"
  expect_eq not-yours "$(kubectl get -n "$ns" "secret/$j-ssh" -o 'jsonpath={.data.id_rsa}' | base64 -d)" \
    "the planted Secret, untouched"
  kubectl delete secret -n "$ns" "$j-ssh" >/dev/null
  wait_for 120 "the Job's pod running once the Secret is gone" all_running "$ns" 1
  expect_eq "$(jsonpath "vcjob/$j" '{.metadata.uid}' "$ns")" \
    "$(jsonpath "secret/$j-ssh" '{.metadata.ownerReferences[?(@.controller==true)].uid}' "$ns")" \
    "the Secret the pod mounts is the Job's"
  expect_match '^ssh-rsa AAAA' \
    "$(kubectl get -n "$ns" "secret/$j-ssh" -o 'jsonpath={.data.id_rsa\.pub}' | base64 -d)" "its key"
}

test_tensorflow_ps_and_workers() {
  local ns j=tensorflow-dist-mnist
  ns=$(run_example job-tensorflow.yaml 3)
  local cluster svc
  cluster="{\\\"ps\\\":[\\\"$j-ps-0.$j:2222\\\"],\\\"worker\\\":[\\\"$j-worker-0.$j:2222\\\",\\\"$j-worker-1.$j:2222\\\"]}"
  svc=$(svc_env $j ps worker)
  local p type idx
  for p in ps-0 worker-0 worker-1; do
    type=${p%-*} idx=${p##*-}
    expect_json "{\"TF_CONFIG\":\"{\\\"cluster\\\":$cluster,\\\"task\\\":{\\\"type\\\":\\\"$type\\\",\\\"index\\\":$idx}}\",$svc}" \
      "$(getj "$ns" pod/$j-$p "$ENV_FILTER")" "$p env"
    # the plugin opens no port: the template's stays alone
    expect_json '[{"name":"tfjob-port","containerPort":2222,"protocol":"TCP"}]' \
      "$(getj "$ns" pod/$j-$p '.spec.containers[0].ports')" "$p ports"
  done
  expect_svc "$ns" $j "{\"ps.host\":\"$j-ps-0.$j\",\"worker.host\":\"$j-worker-0.$j\n$j-worker-1.$j\",\"VC_PS_HOSTS\":\"$j-ps-0.$j\",\"VC_PS_NUM\":\"1\",\"VC_WORKER_HOSTS\":\"$j-worker-0.$j,$j-worker-1.$j\",\"VC_WORKER_NUM\":\"2\"}"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

test_ray_head_and_workers() {
  local ns j=ray-cluster-job
  ns=$(run_example job-ray.yaml 3)
  expect_json "{\"type\":\"ClusterIP\",\"selector\":{\"volcano.sh/job-name\":\"$j\",\"volcano.sh/job-namespace\":\"$ns\",\"volcano.sh/task-spec\":\"head\"},\"ports\":[{\"name\":\"gcs\",\"port\":6379,\"protocol\":\"TCP\",\"targetPort\":\"gcs\"},{\"name\":\"dashboard\",\"port\":8265,\"protocol\":\"TCP\",\"targetPort\":\"dashboard\"},{\"name\":\"client-server\",\"port\":10001,\"protocol\":\"TCP\",\"targetPort\":\"client-server\"}]}" \
    "$(getj "$ns" svc/$j-head-svc '.spec | {type, selector, ports}')" "head Service"
  expect_json '[{"name":"gcs","containerPort":6379,"protocol":"TCP"},{"name":"dashboard","containerPort":8265,"protocol":"TCP"},{"name":"client-server","containerPort":10001,"protocol":"TCP"}]' \
    "$(getj "$ns" pod/$j-head-0 '.spec.containers[0].ports')" "head ports"
  expect_json '["sh","-c","ray start --head --block --dashboard-host=0.0.0.0 --port=6379 --dashboard-port=8265 --ray-client-server-port=10001"]' \
    "$(getj "$ns" pod/$j-head-0 '.spec.containers[0].command')" "head command"
  local p
  for p in worker-0 worker-1; do
    expect_json "[\"sh\",\"-c\",\"ray start --block --address=$j-head-0.$j:6379\"]" \
      "$(getj "$ns" pod/$j-$p '.spec.containers[0].command')" "$p command"
  done
  # the head Service's endpoints are the head pod (selected by task)
  expect_svc "$ns" $j "{\"head.host\":\"$j-head-0.$j\",\"worker.host\":\"$j-worker-0.$j\n$j-worker-1.$j\",\"VC_HEAD_HOSTS\":\"$j-head-0.$j\",\"VC_HEAD_NUM\":\"1\",\"VC_WORKER_HOSTS\":\"$j-worker-0.$j,$j-worker-1.$j\",\"VC_WORKER_NUM\":\"2\"}"
  # deleting the Job takes the head Service with it (owner reference to the Job)
  expect_eq "$j" "$(getj "$ns" svc/$j-head-svc '.metadata.ownerReferences[0].name' | tr -d '"')" \
    "head Service owner"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

test_hcclrank_and_wait_for_master() {
  local ns j=hccl
  ns=$(new_namespace tp-hccl)
  kubectl apply -n "$ns" -f - >/dev/null <<JOB
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: $j
spec:
  minAvailable: 3
  schedulerName: volcano
  plugins:
    pytorch: ["--port=29500", "--wait-master-enabled=true", "--wait-master-timeout=120"]
    hcclrank: []
  tasks:
  - name: master
    replicas: 1
    template:
      spec:
        containers: [{name: master, image: busybox}]
  - name: worker
    replicas: 2
    template:
      spec:
        containers: [{name: worker, image: busybox}]
JOB
  wait_for 120 "3 pods running on kwok nodes" all_running "$ns" 3
  local p want=0
  for p in master-0 worker-0 worker-1; do
    expect_eq "$want" "$(getj "$ns" pod/$j-$p '.metadata.annotations["hccl/rankIndex"]' | tr -d '"')" \
      "$p hccl/rankIndex"
    expect_eq "$want" "$(getj "$ns" pod/$j-$p '.spec.containers[0].env[] | select(.name == "RANK") | .value' | tr -d '"')" \
      "$p RANK"
    want=$((want + 1))
  done
  # only the workers wait, in an init container, for the master's port
  expect_eq null "$(getj "$ns" pod/$j-master-0 .spec.initContainers)" "master init containers"
  for p in worker-0 worker-1; do
    expect_json '{"name":"wait-for-master","image":"busybox:1.36.1","cmd":["sh","-c"]}' \
      "$(getj "$ns" pod/$j-$p '.spec.initContainers[0] | {name, image, cmd: .command[0:2]}')" \
      "$p wait-for-master"
    expect_match "host=$j-master-0.$j; port=29500; timeout=120;" \
      "$(getj "$ns" pod/$j-$p '.spec.initContainers[0].command[2]')" "$p wait script"
  done
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# No call either process made was refused by RBAC (the API server's message names the user; a
# namespace being deleted refuses writes too, with another message): the RBAC grants every
# plugin path (issue 27).
finally_nothing_forbidden() {
  local name from hits
  for name in controller scheduler; do
    from=$(cat "$KILN_CLUSTER_DIR/tp-log-from-$name")
    hits=$(tail -n +$((from + 1)) "$KILN_CLUSTER_DIR/logs/kiln-$name.log" |
      grep -E 'forbidden: User "system:serviceaccount:' | head -5 || true)
    [ -z "$hits" ] || fail "kiln-$name was refused: $hits"
  done
}

setup || {
  echo "FAIL trainplugins/setup: cannot install the CRDs, the RBAC or the processes"
  exit 1
}
e2e_main "$@"
