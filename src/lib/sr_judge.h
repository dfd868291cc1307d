/* sr_judge.h - the API of sr_judge.c. */
#ifndef SR_JUDGE_H
#define SR_JUDGE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_facts.h"

enum sr_want { SR_WANT_NONE = 0, SR_WANT_STOP, SR_WANT_RESUME };
struct sr_judgment {
	int target_stopped; /* 1: the card should be stopped; 0: active */
	enum sr_want want;  /* the command the judgment asks for */
	const char *reason; /* refund, device_disabled, ..., entitled */
	int manual;         /* stopped by hand: never resumed automatically */
};
/* The one judgment (docs/internals.md: The judgment): pure, no I/O. dev may be NULL. now in
 * epoch seconds. */
struct sr_judgment sr_judge(const struct sr_card_facts *card, const struct sr_device_facts *dev,
    long long now);
const char *sr_want_name(enum sr_want w);
/* Does a queued action still agree with the judgment's direction? Used by
 * sr-exec's re-judgment: a stop is wanted while the target is stopped, a
 * resume while the target is active and the card was not stopped by hand. */
int sr_action_still_wanted(const char *action, const struct sr_card_facts *card,
    const struct sr_judgment *j);

#endif
