/* sr_switch.c - the global switch stop_resume_queue_enabled (absent = on).
 *
 * On: every request is queued and the dispatchers run. Off: sr-enqueue
 * executes card requests directly (the legacy path, sr_direct.c), the
 * dispatchers claim nothing, and what is queued is kept until it is on again
 * (sr-exec re-judges every task before calling, so nothing stale runs). */
#include <string.h>

#include "sr.h"

int
sr_switch_get(struct sr_redis *r, const struct sr_config *cfg)
{
	char key[SR_KEY_MAX];
	const char *argv[] = { "GET", sr_key_switch(key, cfg->prefix) };
	redisReply *rep = sr_redis_cmd(r, 2, argv);
	int on;

	if (!rep)
		return -1;
	on = !(rep->type == REDIS_REPLY_STRING &&
	    (!strcmp(rep->str, "0") || !strcmp(rep->str, "off") || !strcmp(rep->str, "false")));
	freeReplyObject(rep);
	return on;
}

int
sr_switch_set(struct sr_redis *r, const struct sr_config *cfg, int on, const char *who,
    const char *why)
{
	char key[SR_KEY_MAX], akey[SR_KEY_MAX];
	const char *set[] = { "SET", sr_key_switch(key, cfg->prefix), on ? "1" : "0" };
	const char *audit[] = { "XADD", akey, "MAXLEN", "~", "10000", "*", "what", "switch",
		"value", on ? "on" : "off", "who", who, "why", why };
	redisReply *rep;
	int rc = 0;

	snprintf(akey, sizeof akey, "%s:admin_audit", cfg->prefix);
	sr_redis_append(r, 3, set, NULL);
	sr_redis_append(r, 14, audit, NULL);
	for (int i = 0; i < 2; i++) {
		if (!(rep = sr_redis_reply(r)))
			return -1;
		if (rep->type == REDIS_REPLY_ERROR)
			rc = -1;
		freeReplyObject(rep);
	}
	return rc;
}
