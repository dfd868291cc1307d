/* sr_task.c - the task record sr-claim prints and sr-exec/sr-confirm read. */
#include <string.h>

#include "sr.h"

static int
copy_id(json_t *obj, const char *key, char *dst, size_t n, char *err, size_t errlen)
{
	const char *s = sr_jstr(obj, key);

	if (!s || !sr_valid_id(s) || strlen(s) >= n) {
		snprintf(err, errlen, "missing or bad \"%s\"", key);
		return -1;
	}
	strcpy(dst, s);
	return 0;
}

/* A task's lane: its "lane" (sr-claim's), else a query's, else its scene's
 * priority (a task line written by hand or an older sr-claim). */
static int
task_lane(json_t *obj, struct sr_task *t, char *err, size_t errlen)
{
	const char *lane = sr_jstr(obj, "lane");
	int prio;

	for (int i = 0; lane && i < SR_LANE_COUNT; i++)
		if (!strcmp(lane, sr_lane_name[i])) {
			t->lane = (enum sr_lane)i;
			return 0;
		}
	if (json_object_get(obj, "lane")) {
		size_t n = (size_t)snprintf(err, errlen, "bad \"lane\": one of");

		for (int i = 0; i < SR_LANE_COUNT && n < errlen; i++)
			n += (size_t)snprintf(err + n, errlen - n, " %s", sr_lane_name[i]);
		return -1;
	}
	prio = sr_scene_prio(sr_jstr(obj, "scene"));
	t->lane = !strcmp(t->kind, "query") ? SR_LANE_QUERY :
	    prio == 0 ? SR_LANE_HIGH : prio == 2 ? SR_LANE_BULK : SR_LANE_NORMAL;
	return 0;
}

/* A query's "txn": the order it settles, polled when the account's profile
 * polls orders. It goes into a request (escaped there): text a carrier could
 * have given, no control bytes, and short. */
static int
task_txn(json_t *obj, struct sr_task *t, char *err, size_t errlen)
{
	json_t *v = json_object_get(obj, "txn");
	const char *s = json_string_value(v);

	if (!v)
		return 0;
	if (!s || !*s || strlen(s) >= sizeof t->txn) {
		snprintf(err, errlen, "bad \"txn\": a query's order id, 1 to %zu bytes", sizeof t->txn - 1);
		return -1;
	}
	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		if (*c < 0x20 || *c == 0x7f) {
			snprintf(err, errlen, "bad \"txn\": a control character in it");
			return -1;
		}
	strcpy(t->txn, s);
	return 0;
}

int
sr_task_parse(json_t *obj, struct sr_task *t, char *err, size_t errlen)
{
	const char *kind, *action, *token;

	memset(t, 0, sizeof *t);
	if (!json_is_object(obj)) {
		snprintf(err, errlen, "not a JSON object");
		return -1;
	}
	kind = sr_jstr(obj, "task");
	if (!kind || (strcmp(kind, "call") != 0 && strcmp(kind, "query") != 0)) {
		snprintf(err, errlen, "\"task\" must be \"call\" or \"query\"");
		return -1;
	}
	strcpy(t->kind, kind);
	if (copy_id(obj, "card", t->card, sizeof t->card, err, errlen) < 0 ||
	    copy_id(obj, "carrier", t->carrier, sizeof t->carrier, err, errlen) < 0)
		return -1;
	action = sr_jstr(obj, "action");
	if (!action || (strcmp(action, "stop") != 0 && strcmp(action, "resume") != 0)) {
		snprintf(err, errlen, "\"action\" must be \"stop\" or \"resume\"");
		return -1;
	}
	strcpy(t->action, action);
	token = sr_jstr(obj, "token");
	if (!token || !*token || strlen(token) >= sizeof t->token) {
		snprintf(err, errlen, "missing or bad \"token\"");
		return -1;
	}
	strcpy(t->token, token);
	t->ver = sr_jint(obj, "ver", -1);
	if (t->ver < 1) {
		snprintf(err, errlen, "missing or bad \"ver\"");
		return -1;
	}
	if (task_lane(obj, t, err, errlen) < 0 || task_txn(obj, t, err, errlen) < 0)
		return -1;
	t->attempt = sr_jint(obj, "attempt", 0);
	if ((json_object_get(obj, "attempt") && !json_is_integer(json_object_get(obj, "attempt"))) ||
	    t->attempt < 0) {
		snprintf(err, errlen, "bad \"attempt\"");
		return -1;
	}
	return 0;
}

int
sr_result_check(json_t *obj, char *err, size_t errlen)
{
	static const struct { const char *name; long long hi; } nums[] = {
		{ "http", 999 }, { "retry_after_ms", 86400000LL * 366 }, { "ms", 86400000LL },
		{ "at", 253402300799999LL }, { "gated", 253402300799999LL }, { NULL, 0 },
	};
	static const char *const strs[] = { "outcome", "class", "error", "gate", "observed", "txn",
		"carrier_state", "status", NULL };

	for (int i = 0; nums[i].name; i++) {
		json_t *v = json_object_get(obj, nums[i].name);

		if (v && (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > nums[i].hi)) {
			snprintf(err, errlen, "bad \"%s\": a whole number from 0 to %lld", nums[i].name,
			    nums[i].hi);
			return -1;
		}
	}
	for (int i = 0; strs[i]; i++) {
		json_t *v = json_object_get(obj, strs[i]);

		if (v && !json_is_string(v)) {
			snprintf(err, errlen, "bad \"%s\": not a string", strs[i]);
			return -1;
		}
	}
	if (json_object_get(obj, "order")) {
		/* A poll's word on an order ("": not read); a call has none. */
		static const char *const orders[] = { "done", "failed", "pending", "other", "", NULL };
		const char *o = json_string_value(json_object_get(obj, "order"));
		int known = 0;

		for (int i = 0; o && orders[i]; i++)
			known |= !strcmp(o, orders[i]);
		if (!known || strcmp(sr_jstr(obj, "task") ? sr_jstr(obj, "task") : "", "query")) {
			snprintf(err, errlen, "bad \"order\": a query's done, failed, pending, other or \"\"");
			return -1;
		}
	}
	if (json_object_get(obj, "in_progress") && !json_is_boolean(json_object_get(obj, "in_progress"))) {
		snprintf(err, errlen, "bad \"in_progress\": not a boolean");
		return -1;
	}
	return 0;
}
