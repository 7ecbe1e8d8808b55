/* Informers shared between the controllers of one kiln-controller (client-go's
 * SharedInformerFactory, which vc-controller-manager uses): every controller that lists and
 * watches the same resource with the same selectors gets its own store, decoder and handlers,
 * fed by one LIST and one WATCH. Without it the Job controller, the gc, cronjob, jobflow and
 * jobtemplate controllers each opened a watch of every Job: each Job write was sent by the API
 * server five times and parsed five times here (issue 15).
 *
 * A ctl_inf looks like a kc_informer to its controller: a store it reads and indexes, has_synced,
 * start and free. Each event's JSON is parsed once; each consumer's decode runs on it and the
 * consumer's store and handlers see exactly what a kc_informer of their own would have shown
 * (adds, updates with the old object, deletes, relists as their differences, on_synced after
 * the first LIST). Everything runs on the loop thread. */
#ifndef CTL_INF_H
#define CTL_INF_H

#include <stdbool.h>

#include "k8s.pb-c.h"
#include "kc_informer.h"
#include "kc_error.h"

typedef struct ctl_inf_hub ctl_inf_hub;

/* What a consumer's decoder returns for an object it does not want (a selector applied
 * here rather than by the server, so that consumers with different selectors share one
 * watch): the consumer's store drops it, and on_delete runs if it had it, as a watch with
 * that selector would have shown. Never freed. */
extern const char ctl_inf_skip;
#define CTL_INF_SKIP ((void *)&ctl_inf_skip)
typedef struct ctl_inf ctl_inf;

/* *out is new; c is borrowed and must outlive the hub. protobuf: informers whose definition
 * has a protobuf decoder (ctl_informers_new) ask for Kubernetes' protobuf. KC_ENOMEM. */
KC_NODISCARD int ctl_inf_hub_new(kc_client *c, bool protobuf, ctl_inf_hub **out);
/* The Pod message in data (an object of a protobuf pod event; borrowed, valid until the next
 * call): unpacked once for every consumer's decoder of the same event, which all get the same
 * bytes. NULL when it is not a Pod or out of memory. */
const K8s__Pod *ctl_inf_hub_pod(ctl_inf_hub *hub, const uint8_t *data, size_t len);
/* Whether the hub's informers may ask for protobuf (false for NULL). */
bool ctl_inf_hub_protobuf(const ctl_inf_hub *hub);
/* Frees the hub once every ctl_inf made from it has been freed (or at once if none is left);
 * NULL is a no-op. */
void ctl_inf_hub_free(ctl_inf_hub *hub);

/* A consumer of the resource o names, with its own handlers (as kc_informer_new). With a hub,
 * it shares the watch of every consumer of the same resource and selectors made before the
 * first of them started; hub NULL, a resync or non-default paging or frame limits give it a
 * kc_informer of its own. With o->protobuf, h needs decode_pb and decode (a JSON reply) and
 * shares only with other protobuf consumers. *out is new. KC_EINVAL, KC_ENOMEM. */
KC_NODISCARD int ctl_inf_new(ctl_inf_hub *hub, kc_client *c, const kc_informer_options *o,
                             const kc_informer_handlers *h, ctl_inf **out);
/* The consumer's own store (borrowed): add indexes before ctl_inf_start. */
kc_store *ctl_inf_store(ctl_inf *inf);
bool ctl_inf_has_synced(const ctl_inf *inf);
/* Starts the shared watch (once, whichever consumer comes first). KC_EINVAL when this consumer
 * was already started. */
KC_NODISCARD int ctl_inf_start(ctl_inf *inf);
/* No handler of this consumer is called afterwards; the watch stops with its last consumer.
 * Not from a handler. NULL is a no-op. */
void ctl_inf_free(ctl_inf *inf);

#endif
