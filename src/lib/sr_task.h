/* sr_task.h - the API of sr_task.c. */
#ifndef SR_TASK_H
#define SR_TASK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_lua_gen.h"

/* Task and result records travel between sr-claim, sr-exec and sr-confirm. */
/* A task's "lane": enum sr_lane and sr_lane_name (sr_lua_gen.h), the order
 * an account's work is claimed and sent in, made from includes/lanes.lua. */
struct sr_task {
	char kind[8]; /* call or query */
	char card[65], carrier[65], action[8], token[64];
	char txn[64]; /* a query's: the order of the change it settles ("": none) */
	long long ver, attempt;
	enum sr_lane lane; /* its "lane"; without one, its kind's or its scene's */
};
/* Parse and validate a task line: 0, or -1 with err filled. "ver" and
 * "attempt" must be whole numbers (1.5 is not rounded). */
int sr_task_parse(json_t *obj, struct sr_task *t, char *err, size_t errlen);
/* The fields sr-exec adds to make a task a result, checked for type and
 * range when present: http (0..999), retry_after_ms, ms, at, gated (whole
 * numbers from 0), in_progress (a boolean), the text fields (strings). */
int sr_result_check(json_t *obj, char *err, size_t errlen);

#endif
