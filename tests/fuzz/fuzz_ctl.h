/* What the controller's fuzz targets share: a Job with master, worker, ps and head tasks and
 * no plugins (each target adds its own), and the plugins' randomness and key pair, faked so
 * that an input costs no entropy or RSA work. */
#ifndef FUZZ_CTL_H
#define FUZZ_CTL_H

#include <stdlib.h>
#include <string.h>

#include "ctl_job.h"
#include "kc_error.h"

static const char job_text[] =
    "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\",\"metadata\":{\"name\":"
    "\"fz\",\"namespace\":\"ns\",\"uid\":\"u\",\"resourceVersion\":\"1\"},\"spec\":{"
    "\"minAvailable\":1,\"tasks\":["
    "{\"name\":\"master\",\"replicas\":2,\"template\":{\"spec\":{\"containers\":[{\"name\":"
    "\"master\"}],\"initContainers\":[{\"name\":\"i\"}]}}},"
    "{\"name\":\"worker\",\"replicas\":2,\"template\":{\"spec\":{\"hostname\":\"w\","
    "\"containers\":[{\"name\":\"worker\",\"ports\":[{\"containerPort\":22}]}]}}},"
    "{\"name\":\"ps\",\"replicas\":1,\"template\":{\"spec\":{\"containers\":[{\"name\":\"p\"}]}}},"
    "{\"name\":\"head\",\"replicas\":1,\"template\":{\"spec\":{\"subdomain\":\"s\","
    "\"containers\":[{\"name\":\"head\"}]}}}]}}";

static int fake_rand(void *ctx, char *buf, size_t n) {
  memset(buf, 'a', n);
  buf[n] = '\0';
  return 0;
}

static int fake_keygen(void *ctx, char **priv, char **pub) {
  *priv = strdup("k");
  *pub = strdup("ssh-rsa AAAA\n");
  return *priv && *pub ? 0 : KC_ENOMEM;
}

static const ctl_ops ops = {.rand_str = fake_rand, .ssh_keygen = fake_keygen};

#endif
