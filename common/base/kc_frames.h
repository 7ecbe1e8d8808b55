/* A byte stream cut into frames: the one buffer under both watch parsers (JSON lines in
 * kc_informer.c, length-prefixed protobuf in kc_pb.c). Chunks may split a frame anywhere; the
 * incomplete frame is carried over in a buffer that never grows past one frame, a frame
 * wholly inside a chunk is handed over in place. Only the boundary rule differs. */
#ifndef KC_FRAMES_H
#define KC_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "kc_error.h"

typedef enum {
  KC_FRAMES_LINES = 0, /* each frame ends with '\n' (the JSON watch: one event a line) */
  KC_FRAMES_BE32,      /* each frame starts with its length, 4 bytes big-endian (protobuf) */
} kc_frames_rule;

typedef struct {
  uint8_t *buf; /* the incomplete frame (with its length prefix) carried over */
  size_t len, cap;
  size_t max_frame; /* of a frame's body, without its newline or prefix */
  kc_frames_rule rule;
  uint64_t offset; /* stream offset of buf[0]: where the current frame starts */
  uint64_t frames; /* counted by the parser on top (it decides what is a frame) */
} kc_frames;

/* One whole frame's body (without its newline or length prefix; borrowed for the call), which
 * starts at stream offset off. Return 0 to go on or a negative code to stop feeding, with a
 * message in err. */
typedef int (*kc_frames_fn)(kc_frames *f, const uint8_t *body, size_t n, uint64_t off, void *ud,
                            char *err, size_t errlen);

void kc_frames_init(kc_frames *f, kc_frames_rule rule, size_t max_frame);
/* Frees the buffer; f may be initialised again. */
void kc_frames_close(kc_frames *f);
/* Drops the partial frame and starts the stream again at offset 0 (a new connection). */
void kc_frames_reset(kc_frames *f);
/* Feeds one chunk: fn for each frame it completes. Returns 0, fn's code, KC_ETOOBIG (a frame
 * longer than max_frame, with the stream offset in err) or KC_ENOMEM. After an error, reset
 * before feeding again. */
KC_NODISCARD int kc_frames_feed(kc_frames *f, const void *data, size_t len, kc_frames_fn fn,
                                void *ud, char *err, size_t errlen);

#endif
