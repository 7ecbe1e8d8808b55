/* Job plugins: env, svc, ssh (objects, pod mutations, idempotence, delete), unknown names,
 * and the real OpenSSL key generator. */
#include "ctl_write.h"
#include "failalloc.h"
#include "test_ctl_util.h"

static const char pending[] = "{\"state\":{\"phase\":\"Pending\"},\"minAvailable\":3}";

static json_t *find_obj(json_t *arr, const char *kind) {
  size_t i;
  json_t *o;
  json_array_foreach(arr, i, o) {
    if (strcmp(jstr(o, "kind"), kind) == 0)
      return o;
  }
  return NULL;
}

static const char *env_value(json_t *ct, const char *name, const char **cm_key) {
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(ct, "env"), i, e) {
    if (strcmp(jstr(e, "name"), name) == 0) {
      if (cm_key)
        *cm_key = jstr(e, "valueFrom.configMapKeyRef.key");
      const char *v = jstr(e, "value");
      return v ? v : "";
    }
  }
  return NULL;
}

static json_t *mount(json_t *ct, const char *name) {
  size_t i;
  json_t *m;
  json_array_foreach(json_object_get(ct, "volumeMounts"), i, m) {
    if (strcmp(jstr(m, "name"), name) == 0)
      return m;
  }
  return NULL;
}

static json_t *volume(json_t *pod, const char *name) {
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(json_object_get(pod, "spec"), "volumes"), i, v) {
    if (strcmp(jstr(v, "name"), name) == 0)
      return v;
  }
  return NULL;
}

static char *unb64(const char *s) {
  static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t n = strlen(s);
  char *out = calloc(1, n + 1);
  size_t o = 0;
  unsigned acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n && s[i] != '='; i++) {
    const char *p = strchr(tbl, s[i]);
    assert_non_null(p);
    acc = (acc << 6) | (unsigned)(p - tbl);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (char)((acc >> bits) & 0xff);
    }
  }
  return out;
}

static void test_add_objects(void **state) {
  fx f;
  fx_init(&f, "job-svc-ssh.json", pending);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  json_t *objs = f.plan.objects_create;
  /* svc: ConfigMap, Service, NetworkPolicy; ssh: Secret */
  assert_int_equal(json_array_size(objs), 4);
  json_t *cm = find_obj(objs, "ConfigMap");
  assert_string_equal(jstr(cm, "metadata.name"), "cluster-job-svc");
  assert_string_equal(
      jstr(json_array_get(json_object_get(json_object_get(cm, "metadata"), "ownerReferences"), 0),
           "uid"),
      "uid-cluster");
  json_t *data = json_object_get(cm, "data");
  assert_string_equal(json_string_value(json_object_get(data, "node.host")),
                      "cluster-job-node-0.cluster-job\ncluster-job-node-1.cluster-job\n"
                      "cluster-job-node-2.cluster-job");
  assert_string_equal(json_string_value(json_object_get(data, "VC_NODE_HOSTS")),
                      "cluster-job-node-0.cluster-job,cluster-job-node-1.cluster-job,"
                      "cluster-job-node-2.cluster-job");
  assert_string_equal(json_string_value(json_object_get(data, "VC_NODE_NUM")), "3");
  json_t *svc = find_obj(objs, "Service");
  assert_string_equal(jstr(svc, "metadata.name"), "cluster-job");
  assert_string_equal(jstr(svc, "spec.clusterIP"), "None");
  /* --publish-not-ready-addresses=true in the fixture */
  assert_true(
      json_is_true(json_object_get(json_object_get(svc, "spec"), "publishNotReadyAddresses")));
  json_t *sel = json_object_get(json_object_get(svc, "spec"), "selector");
  assert_string_equal(json_string_value(json_object_get(sel, "volcano.sh/job-name")),
                      "cluster-job");
  assert_string_equal(json_string_value(json_object_get(sel, "volcano.sh/job-namespace")),
                      "default");
  json_t *np = find_obj(objs, "NetworkPolicy");
  assert_non_null(np);
  assert_string_equal(jstr(np, "apiVersion"), "networking.k8s.io/v1");
  json_t *sec = find_obj(objs, "Secret");
  assert_string_equal(jstr(sec, "metadata.name"), "cluster-job-ssh");
  json_t *sd = json_object_get(sec, "data");
  char *priv = unb64(json_string_value(json_object_get(sd, "id_rsa")));
  assert_non_null(strstr(priv, "BEGIN RSA PRIVATE KEY"));
  free(priv);
  char *ak = unb64(json_string_value(json_object_get(sd, "authorized_keys")));
  assert_string_equal(ak, "ssh-rsa AAAAfake\n");
  free(ak);
  char *cfg = unb64(json_string_value(json_object_get(sd, "config")));
  assert_non_null(strstr(cfg, "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"));
  assert_non_null(strstr(cfg, "Host cluster-job-node-2\n  HostName "
                              "cluster-job-node-2.cluster-job\n  Port 22\n"));
  free(cfg);
  /* markers */
  json_t *ctl = f.plan.status.controlled;
  assert_string_equal(json_string_value(json_object_get(ctl, "plugin-svc")), "svc");
  assert_string_equal(json_string_value(json_object_get(ctl, "plugin-ssh")), "ssh");
  assert_string_equal(json_string_value(json_object_get(ctl, "plugin-env")), "env");
  fx_close(&f);
}

/* Issue 27 finding 5: the executor uses an object that a create finds there already only when
 * the Job is its controller (ctl_write_owner), so every object a plugin creates must name the
 * Job as its controller, or a Job whose status write was lost would block on its own objects. */
static void test_objects_controlled_by_the_job(void **state) {
  json_t *job = fx_file("job-svc-ssh.json");
  json_object_set_new(json_object_get(json_object_get(job, "spec"), "plugins"), "ray",
                      json_array());
  fx f;
  fx_init_json(&f, job, pending);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  json_t *objs = f.plan.objects_create;
  /* svc: ConfigMap, Service, NetworkPolicy; ssh: Secret; ray: the head Service */
  assert_int_equal(json_array_size(objs), 5);
  size_t i;
  json_t *o;
  char msg[512];
  json_array_foreach(objs, i, o) {
    const char *kind = jstr(o, "kind"), *name = jstr(o, "metadata.name");
    ctl_write_outcome w = ctl_write_owner(0, o, "uid-cluster", kind, name, msg, sizeof(msg));
    assert_int_equal(w.err, 0);
    assert_false(w.in_the_way);
    /* The same object seen by the Job made again under that name: in its way. */
    w = ctl_write_owner(0, o, "uid-cluster-2", kind, name, msg, sizeof(msg));
    assert_true(w.in_the_way);
    assert_non_null(strstr(msg, name));
  }
  fx_close(&f);
}

/* A Pending job whose plugins have set up (their markers recorded). */
static const char pending_marked[] =
    "{\"state\":{\"phase\":\"Pending\"},\"minAvailable\":3,\"controlledResources\":{"
    "\"plugin-svc\":\"svc\",\"plugin-ssh\":\"ssh\",\"plugin-env\":\"env\"}}";

/* A second add with the markers recorded creates nothing (idempotent), and with no pod yet
 * svc does not rewrite its ConfigMap either. */
static void test_idempotent(void **state) {
  fx f;
  fx_init(&f, "job-svc-ssh.json", pending_marked);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_int_equal(json_array_size(f.plan.objects_create), 0);
  assert_int_equal(json_array_size(f.plan.objects_update), 0);
  assert_false(f.plan.status_changed);
  assert_int_equal(f.rand_calls, 0);
  fx_close(&f);
}

static void test_pod_mutations(void **state) {
  fx f;
  fx_init(&f, "job-svc-ssh.json",
          "{\"state\":{\"phase\":\"Running\"},\"minAvailable\":3,\"controlledResources\":{"
          "\"plugin-svc\":\"svc\",\"plugin-ssh\":\"ssh\",\"plugin-env\":\"env\"}}");
  fx_pg(&f, "Inqueue", NULL);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  json_t *pod = fx_created_pod(&f, "cluster-job-node-1");
  assert_non_null(pod);
  assert_string_equal(jstr(pod, "spec.hostname"), "cluster-job-node-1");
  assert_string_equal(jstr(pod, "spec.subdomain"), "cluster-job");
  json_t *ct = json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0);
  /* env */
  assert_string_equal(env_value(ct, "VC_TASK_INDEX", NULL), "1");
  assert_string_equal(env_value(ct, "VK_TASK_INDEX", NULL), "1");
  /* svc */
  const char *key = NULL;
  assert_non_null(env_value(ct, "VC_NODE_HOSTS", &key));
  assert_string_equal(key, "VC_NODE_HOSTS");
  assert_non_null(env_value(ct, "VC_NODE_NUM", NULL));
  json_t *m = mount(ct, "cluster-job-svc");
  assert_string_equal(jstr(m, "mountPath"), "/etc/volcano");
  assert_string_equal(jstr(volume(pod, "cluster-job-svc"), "configMap.name"), "cluster-job-svc");
  /* ssh */
  json_t *sm = mount(ct, "cluster-job-ssh");
  assert_string_equal(jstr(sm, "mountPath"), "/root/.ssh");
  assert_string_equal(jstr(sm, "subPath"), ".ssh");
  json_t *sv = volume(pod, "cluster-job-ssh");
  assert_string_equal(jstr(sv, "secret.secretName"), "cluster-job-ssh");
  assert_int_equal(
      json_integer_value(json_object_get(json_object_get(sv, "secret"), "defaultMode")), 0600);
  /* svc rewrites its ConfigMap on update (replicas may change) */
  assert_int_equal(json_array_size(f.plan.objects_update), 1);
  assert_string_equal(jstr(json_array_get(f.plan.objects_update, 0), "metadata.name"),
                      "cluster-job-svc");
  fx_close(&f);
}

/* A full kill deletes the plugin objects and forgets the markers. */
static void test_delete(void **state) {
  fx f;
  fx_init(&f, "job-svc-ssh.json",
          "{\"state\":{\"phase\":\"Running\"},\"minAvailable\":3,\"controlledResources\":{"
          "\"plugin-svc\":\"svc\",\"plugin-ssh\":\"ssh\",\"plugin-env\":\"env\"}}");
  fx_pg(&f, "Running", NULL);
  assert_int_equal(fx_sync_action(&f, CTL_ACT_RESTART_JOB), 0);
  json_t *del = f.plan.objects_delete;
  assert_int_equal(json_array_size(del), 4);
  assert_non_null(find_obj(del, "ConfigMap"));
  assert_non_null(find_obj(del, "Service"));
  assert_non_null(find_obj(del, "NetworkPolicy"));
  assert_string_equal(jstr(find_obj(del, "Secret"), "name"), "cluster-job-ssh");
  assert_int_equal(json_object_size(f.plan.status.controlled), 0);
  fx_close(&f);
}

static void test_unknown_plugin(void **state) {
  json_t *j = fx_file("job-single.json");
  json_object_set_new(json_object_get(j, "spec"), "plugins", fx_parse("{\"nope\":[],\"env\":[]}"));
  fx f;
  fx_init_json(&f, j, NULL);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  const ctl_k8s_event *e = fx_event(&f, "PluginError");
  assert_non_null(e);
  assert_int_equal(e->type, CTL_EVENT_WARNING);
  assert_string_equal(e->message, "Execute plugin when job add failed, err: unable to get plugin "
                                  "nope");
  assert_int_equal(f.plan.status.phase, CTL_PHASE_PENDING);
  assert_string_equal(f.plan.status.reason, "PluginError");
  assert_null(f.plan.podgroup);
  /* nothing half-done: env did not mark itself */
  assert_null(json_object_get(f.plan.status.controlled, "plugin-env"));
  fx_close(&f);
}

static void test_svc_args(void **state) {
  json_t *j = fx_file("job-svc-ssh.json");
  json_object_set_new(json_object_get(j, "spec"), "plugins",
                      fx_parse("{\"svc\":[\"--disable-network-policy=true\","
                               "\"--inject-hosts-env=false\"],\"ssh\":[\"--ssh-key-file-path\","
                               "\"/home/u/.ssh\",\"--ssh-port=2222\"]}"));
  fx f;
  fx_init_json(&f, j, "{\"state\":{\"phase\":\"Running\"},\"minAvailable\":3}");
  fx_pg(&f, "Inqueue", NULL);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  json_t *pod = fx_created_pod(&f, "cluster-job-node-0");
  json_t *ct = json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0);
  assert_null(env_value(ct, "VC_NODE_HOSTS", NULL));
  assert_null(env_value(ct, "VC_TASK_INDEX", NULL));
  assert_string_equal(jstr(mount(ct, "cluster-job-ssh"), "mountPath"), "/home/u/.ssh");
  assert_int_equal(json_integer_value(json_object_get(
                       json_object_get(volume(pod, "cluster-job-ssh"), "secret"), "defaultMode")),
                   0644);
  fx_close(&f);

  /* on add: no NetworkPolicy, port 2222 in the ssh config */
  j = fx_file("job-svc-ssh.json");
  json_object_set_new(json_object_get(j, "spec"), "plugins",
                      fx_parse("{\"svc\":[\"--disable-network-policy=true\"],"
                               "\"ssh\":[\"--ssh-port=2222\"]}"));
  fx_init_json(&f, j, NULL);
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_null(find_obj(f.plan.objects_create, "NetworkPolicy"));
  json_t *sec = find_obj(f.plan.objects_create, "Secret");
  char *cfg = unb64(json_string_value(json_object_get(json_object_get(sec, "data"), "config")));
  assert_non_null(strstr(cfg, "  Port 2222\n"));
  free(cfg);
  fx_close(&f);

  /* a port that is not a port number falls back to 22 */
  j = fx_file("job-svc-ssh.json");
  json_object_set_new(json_object_get(j, "spec"), "plugins",
                      fx_parse("{\"ssh\":[\"--ssh-port=22\\nHost evil\"]}"));
  fx_init_json(&f, j, NULL);
  assert_int_equal(fx_sync(&f, &req), 0);
  sec = find_obj(f.plan.objects_create, "Secret");
  cfg = unb64(json_string_value(json_object_get(json_object_get(sec, "data"), "config")));
  assert_null(strstr(cfg, "evil"));
  assert_non_null(strstr(cfg, "  Port 22\n"));
  free(cfg);
  fx_close(&f);
}

/* A job scaled up while its status still says Pending: the sync that handles the scale
 * rewrites the svc host lists (Volcano does). */
static void test_svc_scale_while_pending(void **state) {
  fx f;
  fx_init(&f, "job-svc-ssh.json", pending_marked);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  fx_pg(&f, "Inqueue", NULL);
  for (int i = 0; i < 3; i++)
    fx_pod(&f, "node", i, CTL_POD_PENDING);
  f.job->spec->tasks[0]->replicas = 5;
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_int_equal(json_array_size(f.plan.objects_update), 1);
  json_t *cm = json_array_get(f.plan.objects_update, 0);
  assert_string_equal(jstr(cm, "metadata.name"), "cluster-job-svc");
  json_t *data = json_object_get(cm, "data");
  assert_string_equal(json_string_value(json_object_get(data, "VC_NODE_NUM")), "5");
  assert_non_null(strstr(json_string_value(json_object_get(data, "node.host")),
                         "cluster-job-node-4.cluster-job"));
  fx_close(&f);
}

/* The default effects make real keys and names. */

static void test_default_ops(void **state) {
  char *priv = NULL, *pub = NULL;
  assert_int_equal(ctl_default_ops.ssh_keygen(NULL, &priv, &pub), 0);
  assert_non_null(strstr(priv, "-----BEGIN RSA PRIVATE KEY-----"));
  assert_int_equal(strncmp(pub, "ssh-rsa AAAAB3NzaC1yc2EAAAA", 27), 0);
  free(priv);
  free(pub);
  char a[13], b[13];
  assert_int_equal(ctl_default_ops.rand_str(NULL, a, 12), 0);
  assert_int_equal(ctl_default_ops.rand_str(NULL, b, 12), 0);
  assert_int_equal(strlen(a), 12);
  assert_true(strspn(a, "0123456789abcdefghijklmnopqrstuvwxyz") == 12);
  assert_string_not_equal(a, b);
}

/* The svc host lists under memory pressure: with the k-th allocation of the sync refused,
 * for every k until none is, the sync either fails or writes the complete lists, never an
 * empty or partial one. */
static void test_svc_hosts_out_of_memory(void **state) {
  fx f;
  const char *started = "{\"state\":{\"phase\":\"Running\"},\"controlledResources\":{"
                        "\"plugin-svc\":\"svc\",\"plugin-ssh\":\"ssh\",\"plugin-env\":\"env\"}}";
  fx_init(&f, "job-svc-ssh.json", started);
  fx_pg(&f, "Running", NULL);
  assert_int_equal(fx_sync_action(&f, CTL_ACT_SYNC_JOB), 0);
  json_t *want = json_deep_copy(json_object_get(json_array_get(f.plan.objects_update, 0), "data"));
  assert_non_null(want);
  assert_string_equal(json_string_value(json_object_get(want, "VC_NODE_NUM")), "3");
  fx_close(&f);
  long k;
  for (k = 0; k < 100000; k++) {
    fx_init(&f, "job-svc-ssh.json", started);
    fx_pg(&f, "Running", NULL);
    failalloc_after(k);
    int rc = fx_sync_action(&f, CTL_ACT_SYNC_JOB);
    failalloc_off();
    long refused = failalloc_failed;
    if (rc == 0) {
      json_t *cm = json_array_get(f.plan.objects_update, 0);
      if (!json_equal(json_object_get(cm, "data"), want)) {
        char *got = json_dumps(json_object_get(cm, "data"), JSON_SORT_KEYS);
        fail_msg("allocation %ld refused, the sync succeeded with host lists %s", k, got);
      }
    }
    fx_close(&f);
    if (!refused)
      break;
  }
  print_message("swept %ld allocations\n", k);
  assert_true(k > 5);
  json_decref(want);
}

/* A random source that has failed (OpenSSL's RAND_bytes returning 0). */
static int broken_source(void *arg, unsigned char *buf, size_t n) {
  (*(int *)arg)++;
  memset(buf, 0, n);
  return KC_EIO;
}

/* With the random source failing, the default effects report the failure: no name made
 * of zeros, no key pair. */
static void test_default_ops_broken_source(void **state) {
  int draws = 0;
  ctl_random src = {broken_source, &draws};
  ctl_ops ops = ctl_default_ops;
  ops.ctx = &src;
  char name[13] = "x";
  int rc = ops.rand_str(ops.ctx, name, 12);
  if (rc == 0)
    fail_msg("a failed random source gave the name \"%s\"", name);
  assert_int_equal(rc, KC_EIO);
  assert_string_equal(name, "");
  char *priv = NULL, *pub = NULL;
  assert_int_equal(ops.ssh_keygen(ops.ctx, &priv, &pub), KC_EIO);
  assert_null(priv);
  assert_null(pub);
  assert_true(draws >= 2);
}

static int failing_keygen(void *ctx, char **priv, char **pub) {
  *priv = *pub = NULL;
  return KC_EIO;
}

static int failing_rand(void *ctx, char *buf, size_t n) {
  buf[0] = '\0';
  return KC_EIO;
}

/* The ssh plugin with no random material: the sync fails with an error and leaves the
 * PluginError event that says why; no Secret, no pod, nothing else of the plan. The same
 * for a generated claim name. */
static void test_ssh_without_randomness(void **state) {
  fx f;
  fx_init(&f, "job-svc-ssh.json", pending);
  fx_ops.ssh_keygen = failing_keygen;
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), KC_EIO);
  assert_string_equal(f.plan.failure_reason, "PluginError");
  assert_string_equal(f.plan.failure_message,
                      "Execute plugin when job add failed, err: ssh: cannot generate the key "
                      "pair: the random source failed");
  assert_null(find_obj(f.plan.objects_create, "Secret"));
  assert_int_equal(json_array_size(f.plan.pods_create), 0);
  fx_close(&f);

  fx_init(&f, "job-pvc.json", NULL);
  fx_ops.rand_str = failing_rand;
  f.pvcs[0] = "shared-datasets";
  f.v.npvcs = 1;
  assert_int_equal(fx_sync(&f, &req), KC_EIO);
  assert_string_equal(f.plan.failure_reason, "PVCError");
  assert_string_equal(f.plan.failure_message,
                      "Failed to create PVC, err: no name for the claim: the random source failed");
  fx_close(&f);
}

static char *secret_key(fx *f, const char *key) {
  json_t *sec = find_obj(f->plan.objects_create, "Secret");
  assert_non_null(sec);
  return unb64(json_string_value(json_object_get(json_object_get(sec, "data"), key)));
}

static void assert_secret_key(fx *f, const char *key, const char *want) {
  char *got = secret_key(f, key);
  assert_string_equal(got, want);
  free(got);
}

/* --ssh-private-key and --ssh-public-key (Volcano withUserProvidedRsaKey): a non-empty
 * private key puts the user's keys in the Secret verbatim (id_rsa; id_rsa.pub and
 * authorized_keys the public key) and nothing is generated; a public key alone is ignored;
 * keys bigger than a Secret holds are refused with a PluginError saying so. */
static void test_ssh_user_keys(void **state) {
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  static const char *const forms[] = {
      "{\"ssh\":[\"--ssh-private-key=-----BEGIN RSA PRIVATE KEY-----\\nMIIu\\n-----END RSA "
      "PRIVATE KEY-----\\n\",\"--ssh-public-key=ssh-rsa AAAAuser me@host\"]}",
      "{\"ssh\":[\"--ssh-public-key\",\"ssh-rsa AAAAuser me@host\",\"--ssh-private-key\","
      "\"-----BEGIN RSA PRIVATE KEY-----\\nMIIu\\n-----END RSA PRIVATE KEY-----\\n\"]}",
  };
  for (size_t i = 0; i < 2; i++) {
    fx f;
    json_t *j = fx_file("job-svc-ssh.json");
    json_object_set_new(json_object_get(j, "spec"), "plugins", fx_parse(forms[i]));
    fx_init_json(&f, j, NULL);
    fx_ops.ssh_keygen = failing_keygen; /* not called */
    assert_int_equal(fx_sync(&f, &req), 0);
    assert_secret_key(&f, "id_rsa",
                      "-----BEGIN RSA PRIVATE KEY-----\nMIIu\n-----END RSA PRIVATE KEY-----\n");
    assert_secret_key(&f, "id_rsa.pub", "ssh-rsa AAAAuser me@host");
    assert_secret_key(&f, "authorized_keys", "ssh-rsa AAAAuser me@host");
    char *cfg = secret_key(&f, "config");
    assert_non_null(strstr(cfg, "Host cluster-job-node-0\n"));
    free(cfg);
    assert_string_equal(json_string_value(json_object_get(f.plan.status.controlled, "plugin-ssh")),
                        "ssh");
    fx_close(&f);
  }

  /* a public key alone, or an empty private key: a generated pair */
  fx f;
  json_t *j = fx_file("job-svc-ssh.json");
  json_object_set_new(json_object_get(j, "spec"), "plugins",
                      fx_parse("{\"ssh\":[\"--ssh-private-key=\",\"--ssh-public-key=ssh-rsa "
                               "AAAAuser\"]}"));
  fx_init_json(&f, j, NULL);
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_secret_key(&f, "authorized_keys", "ssh-rsa AAAAfake\n");
  char *priv = secret_key(&f, "id_rsa");
  assert_non_null(strstr(priv, "BEGIN RSA PRIVATE KEY"));
  free(priv);
  fx_close(&f);

  /* a private key of 1 MiB cannot go in a Secret; one a little smaller leaves no room for
   * the ssh config */
  static const char *const why[] = {
      "ssh: --ssh-private-key and --ssh-public-key take 1048576 bytes; Secret cluster-job-ssh "
      "holds at most 1 MiB",
      "ssh: an ssh config naming 3 hosts does not fit in Secret cluster-job-ssh (a Secret holds "
      "at most 1 MiB)"};
  for (size_t k = 0; k < 2; k++) {
    size_t n = 18 + 1024 * 1024 - k * 64;
    char *big = malloc(n + 1);
    assert_non_null(big);
    memset(big, 'k', n);
    memcpy(big, "--ssh-private-key=", 18);
    big[n] = '\0';
    j = fx_file("job-svc-ssh.json");
    json_object_set_new(json_object_get(j, "spec"), "plugins", json_pack("{s:[s]}", "ssh", big));
    free(big);
    fx_init_json(&f, j, NULL);
    assert_int_equal(fx_sync(&f, &req), KC_ETOOBIG);
    assert_string_equal(f.plan.failure_reason, "PluginError");
    assert_int_equal(
        strncmp(f.plan.failure_message, "Execute plugin when job add failed, err: ", 41), 0);
    assert_string_equal(f.plan.failure_message + 41, why[k]);
    assert_null(find_obj(f.plan.objects_create, "Secret"));
    assert_int_equal(json_array_size(f.plan.pods_create), 0);
    fx_close(&f);
  }
}

static json_t *ssh_job(int64_t replicas, const char *hostname) {
  char text[1024];
  snprintf(text, sizeof(text),
           "{\"metadata\":{\"name\":\"j\",\"namespace\":\"default\",\"uid\":\"u\"},"
           "\"spec\":{\"minAvailable\":1,\"plugins\":{\"ssh\":[]},\"tasks\":[{\"name\":\"w\","
           "\"replicas\":%lld,\"template\":{\"spec\":{%s%s%s\"containers\":[{\"name\":\"c\"}]"
           "}}}]}}",
           (long long)replicas, hostname ? "\"hostname\":\"" : "", hostname ? hostname : "",
           hostname ? "\"," : "");
  return fx_parse(text);
}

static char *ssh_config_of(fx *f) {
  json_t *sec = find_obj(f->plan.objects_create, "Secret");
  assert_non_null(sec);
  return unb64(json_string_value(json_object_get(json_object_get(sec, "data"), "config")));
}

/* The ssh config names every replica, as Volcano's does, within what a Secret holds (1 MiB):
 * the same text as before for a normal job; a Job of 2^31-1 replicas is refused with a
 * PluginError saying why, at once, instead of building gigabytes on the event loop. */
static void test_ssh_config_bounded(void **state) {
  fx f;
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  fx_init_json(&f, ssh_job(2, NULL), pending);
  assert_int_equal(fx_sync(&f, &req), 0);
  char *cfg = ssh_config_of(&f);
  assert_string_equal(cfg, "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"
                           "Host j-w-0\n  HostName j-w-0.j\n  Port 22\n"
                           "Host j-w-1\n  HostName j-w-1.j\n  Port 22\n");
  free(cfg);
  fx_close(&f);

  /* 10,000 replicas fit: every host, in order */
  fx_init_json(&f, ssh_job(10000, NULL), pending);
  assert_int_equal(fx_sync(&f, &req), 0);
  cfg = ssh_config_of(&f);
  assert_non_null(strstr(cfg, "Host j-w-0\n"));
  const char *last = "Host j-w-9999\n  HostName j-w-9999.j\n  Port 22\n";
  assert_string_equal(cfg + strlen(cfg) - strlen(last), last);
  free(cfg);
  fx_close(&f);

  /* a fixed hostname is one entry however many replicas */
  fx_init_json(&f, ssh_job(INT32_MAX, "head"), pending);
  assert_int_equal(fx_sync(&f, &req), 0);
  cfg = ssh_config_of(&f);
  assert_string_equal(cfg, "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"
                           "Host head\n  HostName head.j\n  Port 22\n");
  free(cfg);
  fx_close(&f);

  fx_init_json(&f, ssh_job(INT32_MAX, NULL), pending);
  assert_int_equal(fx_sync(&f, &req), KC_ETOOBIG);
  assert_string_equal(f.plan.failure_reason, "PluginError");
  assert_string_equal(f.plan.failure_message,
                      "Execute plugin when job add failed, err: ssh: an ssh config naming "
                      "2147483647 hosts does not fit in Secret j-ssh (a Secret holds at most 1 "
                      "MiB)");
  assert_null(find_obj(f.plan.objects_create, "Secret"));
  fx_close(&f);
}

static int eagain_calls;

static int not_ready_keygen(void *ctx, char **priv, char **pub) {
  *priv = *pub = NULL;
  eagain_calls++;
  return KC_EAGAIN;
}

/* Key pairs are made off the loop thread (ctl_keypool_shell.h): with none ready, the sync
 * neither fails nor makes a Secret; the job is requeued shortly, still Pending, and the
 * plugins that ran keep their objects and markers. The next sync, with a pair ready, makes
 * the Secret (and nothing twice). */
static void test_ssh_key_not_ready(void **state) {
  fx f;
  fx_init(&f, "job-svc-ssh.json", pending);
  fx_ops.ssh_keygen = not_ready_keygen;
  eagain_calls = 0;
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_int_equal(eagain_calls, 1);
  assert_string_equal(f.plan.failure_reason, "");
  assert_int_equal(f.plan.requeue_after, 1);
  assert_null(find_obj(f.plan.objects_create, "Secret"));
  assert_int_equal(json_array_size(f.plan.pods_create), 0);
  assert_null(f.plan.podgroup);
  assert_int_equal(f.plan.status.phase, CTL_PHASE_PENDING);
  assert_string_equal(f.plan.status.reason, "");
  for (size_t i = 0; i < f.plan.nevents; i++)
    assert_int_not_equal(f.plan.events[i].type, CTL_EVENT_WARNING);
  json_t *ctl = f.plan.status.controlled;
  assert_null(json_object_get(ctl, "plugin-ssh"));
  /* What the shell writes back: the markers of the plugins that did run. */
  json_t *st = fx_parse(pending);
  json_object_set(st, "controlledResources", ctl);
  char *status = json_dumps(st, 0);
  json_decref(st);
  size_t before = json_array_size(f.plan.objects_create);
  fx_close(&f);

  fx_init(&f, "job-svc-ssh.json", status);
  free(status);
  assert_int_equal(fx_sync(&f, &req), 0);
  json_t *sec = find_obj(f.plan.objects_create, "Secret");
  assert_non_null(sec);
  assert_string_equal(jstr(sec, "metadata.name"), "cluster-job-ssh");
  /* Only the Secret is new: the first sync's objects are not made twice. */
  assert_int_equal(json_array_size(f.plan.objects_create) + before, 4);
  assert_string_equal(json_string_value(json_object_get(f.plan.status.controlled, "plugin-ssh")),
                      "ssh");
  assert_int_equal(f.plan.requeue_after, 0);
  fx_close(&f);
}

/* The svc plugin's host lists likewise stop at what a ConfigMap holds: 2^31-1 replicas are
 * refused at once with a PluginError (measuring them took 2^31 steps, then gigabytes); a
 * fixed hostname is one host however many replicas. */
static void test_svc_hosts_bounded(void **state) {
  fx f;
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  json_t *j = ssh_job(INT32_MAX, NULL);
  json_object_set_new(json_object_get(j, "spec"), "plugins", fx_parse("{\"svc\":[]}"));
  fx_init_json(&f, j, pending);
  assert_int_equal(fx_sync(&f, &req), KC_ETOOBIG);
  assert_string_equal(f.plan.failure_reason, "PluginError");
  assert_string_equal(f.plan.failure_message,
                      "Execute plugin when job add failed, err: svc: the host lists of "
                      "2147483647 pods do not fit in ConfigMap j-svc (a ConfigMap holds at most "
                      "1 MiB)");
  assert_null(find_obj(f.plan.objects_create, "ConfigMap"));
  fx_close(&f);

  j = ssh_job(INT32_MAX, "head");
  json_object_set_new(json_object_get(j, "spec"), "plugins", fx_parse("{\"svc\":[]}"));
  fx_init_json(&f, j, pending);
  assert_int_equal(fx_sync(&f, &req), 0);
  json_t *data = json_object_get(find_obj(f.plan.objects_create, "ConfigMap"), "data");
  assert_string_equal(json_string_value(json_object_get(data, "w.host")), "head.j");
  assert_string_equal(json_string_value(json_object_get(data, "VC_W_NUM")), "1");
  fx_close(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_add_objects),
      cmocka_unit_test(test_objects_controlled_by_the_job),
      cmocka_unit_test(test_idempotent),
      cmocka_unit_test(test_pod_mutations),
      cmocka_unit_test(test_delete),
      cmocka_unit_test(test_unknown_plugin),
      cmocka_unit_test(test_svc_args),
      cmocka_unit_test(test_svc_scale_while_pending),
      cmocka_unit_test(test_default_ops),
      cmocka_unit_test(test_default_ops_broken_source),
      cmocka_unit_test(test_ssh_without_randomness),
      cmocka_unit_test(test_ssh_user_keys),
      cmocka_unit_test(test_ssh_config_bounded),
      cmocka_unit_test(test_svc_hosts_bounded),
      cmocka_unit_test(test_ssh_key_not_ready),
      cmocka_unit_test(test_svc_hosts_out_of_memory),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
