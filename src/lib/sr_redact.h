/* sr_redact.h - the API of sr_redact.c. */
#ifndef SR_REDACT_H
#define SR_REDACT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

/* Cut every secret (of 4 bytes or more) out of s, a text the carrier sent
 * back, wherever it is spelled raw, percent-encoded (either case of hex), with
 * + for a space, JSON-escaped (\/, \u0041), or any mix of those; and the
 * first 4 or more bytes of one that end s (cut short by its length). Each
 * run cut is said once as [secret]. s holds size bytes. */
void sr_redact(char *s, size_t size, char *const *secrets, int nsecrets);

#endif
