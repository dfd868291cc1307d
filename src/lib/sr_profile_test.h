/* sr_profile_test.h - the API of sr_profile_test.c. */
#ifndef SR_PROFILE_TEST_H
#define SR_PROFILE_TEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_profile.h"

/* Replay recorded answers (JSONL at path, one a line: docs/carriers.md, Onboarding a
 * new carrier) through profile p, each read as the pipeline reads it; one
 * record per case, then a summary, to emit. Every line is checked before
 * any is replayed. SR_EX_OK every case passed, SR_EX_REJECTED one did not
 * (each said on stderr with its line), SR_EX_USAGE the file unreadable,
 * empty or a line bad (each said with its line; nothing replayed). */
int sr_profile_replay(const struct sr_profile *p, const char *path, void (*emit)(json_t *));
/* One live status query for card, never a change, through account's side
 * of gw: built, authenticated (its token fetched first) and signed as any
 * call; what srq read of it (secrets redacted) in *out. SR_EX_OK when read
 * as a state, else SR_EX_REJECTED. */
int sr_profile_probe(struct sr_gateway *gw, const char *account, const char *card, json_t **out);

#endif
